//! Google Cloud Storage (JSON API): the reply table.
//!
//! On GCS the version a conditional request names is the object's *generation*, not its ETag
//! (GCS honours ETag conditions on reads only). The core keeps it in an [`ETag`]: a decimal
//! string, which drivers send back as a query parameter. The four requests:
//! - `PutIfNoneMatch`: `POST /upload/storage/v1/b/B/o?uploadType=multipart&ifGenerationMatch=0`;
//! - `PutIfMatch`: the same upload with `ifGenerationMatch=<generation>`;
//! - `DeleteIfMatch`: `DELETE /storage/v1/b/B/o/K?ifGenerationMatch=<generation>`;
//! - `Get`: `GET /storage/v1/b/B/o/K?alt=media`, with `ifGenerationNotMatch=<generation>`
//!   when the core names one.
//!
//! Errors are JSON, `{"error":{"code":412,"message":"...","errors":[{"reason":"conditionNotMet"}]}}`:
//! the first reason is the error code (an XML error document's `<Code>` is read too). The
//! table [`classify`] implements:
//!
//! | reply | PutIfNoneMatch | PutIfMatch | DeleteIfMatch | Get |
//! |---|---|---|---|---|
//! | 2xx | `Written` (generation required) | `Written` (generation required) | `Deleted` | `Object` (`x-goog-generation` required) |
//! | 304 | ambiguous | ambiguous | ambiguous | `NotModified` |
//! | 404, the bucket does not exist | refused (`MissingContainer`) | same | same | same |
//! | any other 404 | refused (`MissingContainer`: a create cannot miss its object) | `Absent` | `Absent` | `Absent` |
//! | 412 | `Exists` | `Mismatch` | `Mismatch` | ambiguous |
//! | 408, 409, 429, 5xx but 501, 400 `RequestTimeout`, 403 `rateLimitExceeded` / `userRateLimitExceeded` | ambiguous | same | same | same |
//! | 501 | refused (`ConditionalUnsupported`) | same | same | same |
//! | any other status (400, 401, 403, ...) | refused, with a hint | same | same | same |
//!
//! A write's generation is the JSON object resource's `"generation"` (a string, or a number),
//! or else the `x-goog-generation` header. GCS allows about one write per second to one
//! object name and answers more with `429 rateLimitExceeded`: whether such a write was applied
//! is not promised, so it is ambiguous (the core reads back), never a refusal.

use crate::reply::{ambiguous, success, unsupported, XmlErrorBody};
use crate::{ETag, Error, IntentKind, Response, Scheme};
use http::{HeaderMap, StatusCode};
use serde_json::Value;

/// A GCS error reply: its reason and a one-line message.
struct GcsError {
    code: Option<String>,
    message: Option<String>,
}

fn valid_code(c: &str) -> bool {
    !c.is_empty()
        && c.len() <= 64
        && c.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_')
}

fn one_line(m: &str) -> Option<String> {
    let line: String = m
        .lines()
        .next()
        .unwrap_or("")
        .trim()
        .chars()
        .take(300)
        .collect();
    (!line.is_empty()).then_some(line)
}

impl GcsError {
    fn of(body: &[u8]) -> GcsError {
        let body = &body[..body.len().min(16 * 1024)];
        if let Ok(v) = serde_json::from_slice::<Value>(body) {
            let error = v.get("error");
            let first = error.and_then(|e| e.get("errors")).and_then(|a| a.get(0));
            let text = |v: Option<&Value>, name: &str| {
                v.and_then(|v| v.get(name))
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            };
            let code = text(first, "reason")
                .or_else(|| text(error, "status"))
                // An OAuth error: {"error":"invalid_grant","error_description":"..."}.
                .or_else(|| error.and_then(Value::as_str).map(str::to_owned))
                .filter(|c| valid_code(c));
            let message = text(error, "message")
                .or_else(|| text(first, "message"))
                .or_else(|| text(Some(&v), "error_description"))
                .and_then(|m| one_line(&m));
            return GcsError { code, message };
        }
        // The XML API's error document (a driver or endpoint speaking it).
        let doc = XmlErrorBody::parse(body);
        GcsError {
            code: doc.code,
            message: doc.message.and_then(|m| one_line(&m)),
        }
    }

    fn lower_message(&self) -> String {
        self.message
            .as_deref()
            .unwrap_or_default()
            .to_ascii_lowercase()
    }

    /// Whether a 404 says the bucket does not exist, not the object: conservative, since a
    /// missing object ("No such object: B/K") must stay `Absent` whatever B and K are.
    fn missing_bucket(&self) -> bool {
        if self.code.as_deref() == Some("NoSuchBucket") {
            return true;
        }
        let m = self.lower_message();
        !m.starts_with("no such object")
            && [
                "the specified bucket does not exist",
                "bucket does not exist",
                "bucket not found",
                "no such bucket",
            ]
            .iter()
            .any(|p| m.contains(p))
    }
}

/// A generation: a decimal number of at most 20 digits.
fn generation(raw: &str) -> Option<ETag> {
    let g = raw.trim();
    if g.is_empty() || g.len() > 20 || !g.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    ETag::parse(g).ok()
}

fn header_generation(headers: &HeaderMap) -> Option<ETag> {
    generation(headers.get("x-goog-generation")?.to_str().ok()?)
}

/// The `"generation"` of a JSON object resource (GCS sends a string; a number is accepted).
fn body_generation(body: &[u8]) -> Option<ETag> {
    if body.len() > 64 * 1024 {
        return None;
    }
    let v: Value = serde_json::from_slice(body).ok()?;
    match v.get("generation")? {
        Value::String(s) => generation(s),
        Value::Number(n) => generation(&n.to_string()),
        _ => None,
    }
}

/// Classifies Google Cloud Storage's (JSON API) reply to a request of kind `kind` (see the
/// table above).
///
/// A pure function of its inputs: it never panics, and every reply fits its request
/// ([`Response::fits`]).
///
/// ```
/// use http::{HeaderMap, HeaderValue, StatusCode};
/// use sets3lock_proto::reply::gcs;
/// use sets3lock_proto::{IntentKind, Response};
///
/// let object = br#"{"kind":"storage#object","name":"job","generation":"1764500000000001"}"#;
/// let r = gcs::classify(IntentKind::PutIfNoneMatch, StatusCode::OK, &HeaderMap::new(), object);
/// assert!(matches!(r, Response::Written { etag } if etag.as_str() == "1764500000000001"));
///
/// let held = br#"{"error":{"code":412,"message":"At least one of the pre-conditions you specified did not hold.","errors":[{"reason":"conditionNotMet"}]}}"#;
/// let r = gcs::classify(IntentKind::PutIfNoneMatch, StatusCode::PRECONDITION_FAILED, &HeaderMap::new(), held);
/// assert_eq!(r, Response::Exists);
///
/// let mut headers = HeaderMap::new();
/// headers.insert("x-goog-generation", HeaderValue::from_static("1764500000000001"));
/// let r = gcs::classify(IntentKind::Get, StatusCode::OK, &headers, b"{}");
/// assert!(matches!(r, Response::Object { .. }));
///
/// // One write per second per object: over it, the outcome is unknown.
/// let r = gcs::classify(IntentKind::PutIfMatch, StatusCode::TOO_MANY_REQUESTS, &HeaderMap::new(), b"");
/// assert!(matches!(r, Response::Ambiguous(_)));
/// ```
pub fn classify(
    kind: IntentKind,
    status: StatusCode,
    headers: &HeaderMap,
    body: &[u8],
) -> Response {
    use IntentKind::*;
    let s = status.as_u16();
    let err = || GcsError::of(body);
    let missing = || Error::MissingVersion {
        store: Scheme::Gcs,
        op: kind,
        status: s,
    };
    match s {
        200..=299 => {
            // A write's generation is in the object resource it returns (or a header); a
            // read's in `x-goog-generation`.
            let version = match kind {
                PutIfNoneMatch | PutIfMatch => {
                    body_generation(body).or_else(|| header_generation(headers))
                }
                Get | DeleteIfMatch => header_generation(headers),
            };
            success(kind, version, headers, body, missing)
        }
        304 => match kind {
            Get => Response::NotModified,
            PutIfNoneMatch | PutIfMatch | DeleteIfMatch => ambiguous(s, None),
        },
        404 => {
            let e = err();
            // A create cannot miss its object: what is missing is the bucket (fake-gcs-server
            // answers a missing bucket as it answers a missing object, "Not Found").
            if e.missing_bucket() || kind == PutIfNoneMatch {
                Response::Refused(Error::MissingContainer {
                    store: Scheme::Gcs,
                    code: e.code,
                    message: e.message,
                })
            } else {
                Response::Absent
            }
        }
        412 => match kind {
            PutIfNoneMatch => Response::Exists,
            PutIfMatch | DeleteIfMatch => Response::Mismatch,
            // ifGenerationNotMatch fails with 304, never 412: not a reply to our read.
            Get => ambiguous(s, err().code),
        },
        501 => {
            let e = err();
            unsupported(
                kind,
                s,
                XmlErrorBody {
                    code: e.code,
                    message: e.message,
                },
            )
        }
        // 409 is not an answer GCS gives these requests: its outcome is unknown.
        408 | 409 | 429 | 500..=599 => ambiguous(s, err().code),
        400 => {
            let e = err();
            match e.code.as_deref() {
                Some("RequestTimeout") => ambiguous(s, e.code),
                _ => refused(kind, s, e),
            }
        }
        // GCS gives some rate limits as 403: a pause, like a 429, not a refusal.
        403 => {
            let e = err();
            match e.code.as_deref() {
                Some("rateLimitExceeded") | Some("userRateLimitExceeded") => ambiguous(s, e.code),
                _ => refused(kind, s, e),
            }
        }
        _ => refused(kind, s, err()),
    }
}

fn refused(op: IntentKind, status: u16, e: GcsError) -> Response {
    let m = e.lower_message();
    let about_time = ["not valid yet", "not yet valid", "reasonable timeframe"]
        .iter()
        .any(|p| m.contains(p))
        || e.code.as_deref() == Some("RequestTimeTooSkewed");
    if about_time {
        return Response::Refused(Error::Clock {
            op,
            status,
            code: e.code,
            message: e.message,
        });
    }
    let hint = match status {
        401 => "the token was refused: check GOOGLE_APPLICATION_CREDENTIALS (a service-account key), or the metadata server's service account",
        403 => "the service account needs storage.objects.create, storage.objects.get and storage.objects.delete on the bucket (roles/storage.objectUser)",
        404 => "not found: check the endpoint (the JSON API is served under /storage/v1 and /upload/storage/v1) and the bucket name",
        400 => "the store refused the request as malformed: a GCS-compatible endpoint must serve the JSON API's multipart upload",
        405 => "the endpoint does not allow this method on the lock object",
        _ => "see the error reason; retrying will not help",
    };
    Response::Refused(Error::Refused {
        op,
        status,
        code: e.code,
        message: e.message,
        hint,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_read_from_json_then_xml() {
        let e = GcsError::of(br#"{"error":{"code":429,"message":"The object b/k exceeded the rate limit for object mutation operations (create, update, and delete).","errors":[{"message":"x","domain":"usageLimits","reason":"rateLimitExceeded"}]}}"#);
        assert_eq!(e.code.as_deref(), Some("rateLimitExceeded"));
        assert!(e.message.is_some_and(|m| m.starts_with("The object b/k")));
        let e = GcsError::of(br#"{"error":"invalid_grant","error_description":"Invalid JWT"}"#);
        assert_eq!(e.code.as_deref(), Some("invalid_grant"));
        assert_eq!(e.message.as_deref(), Some("Invalid JWT"));
        let e = GcsError::of(b"<Error><Code>NoSuchBucket</Code></Error>");
        assert!(e.missing_bucket());
        let e = GcsError::of(b"[1,2]");
        assert_eq!((e.code, e.message), (None, None));
    }

    #[test]
    fn a_missing_object_is_not_a_missing_bucket_whatever_its_name() {
        let e = GcsError::of(
            br#"{"error":{"code":404,"message":"No such object: bucket-not-found/bucket does not exist","errors":[{"reason":"notFound"}]}}"#,
        );
        assert!(!e.missing_bucket());
        let e = GcsError::of(
            br#"{"error":{"code":404,"message":"The specified bucket does not exist.","errors":[{"reason":"notFound"}]}}"#,
        );
        assert!(e.missing_bucket());
    }

    #[test]
    fn generations_are_decimal() {
        assert!(generation("1764500000000001").is_some());
        assert!(generation("0x12").is_none());
        assert!(generation("").is_none());
        assert!(generation(&"9".repeat(21)).is_none());
        assert_eq!(
            body_generation(br#"{"generation":17}"#).map(|e| e.as_str().to_owned()),
            Some("17".to_owned())
        );
        assert!(body_generation(br#"{"generation":-1}"#).is_none());
        assert!(body_generation(br#"{"generation":1.5}"#).is_none());
    }
}
