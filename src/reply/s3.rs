//! Amazon S3 and S3-compatible stores: the reply table.
//!
//! One pure function, shared by every driver and reached by fuzzing, so that no driver has a
//! classifier of its own. The table it implements:
//!
//! | reply | PutIfNoneMatch | PutIfMatch | DeleteIfMatch | Get |
//! |---|---|---|---|---|
//! | 2xx | `Written` (ETag required) | `Written` | `Deleted` | `Object` |
//! | 304 | `Exists` (old MinIO) | ambiguous | ambiguous | `NotModified` |
//! | 404 NoSuchBucket | refused | refused | refused | refused |
//! | 404 other | refused | `Absent` | `Absent` | `Absent` |
//! | 409 conflict codes | `Conflict` | `Conflict` | `Conflict` | ambiguous |
//! | 412 | `Exists` | `Mismatch` | `Mismatch` | `Absent` (SeaweedFS, missing key) |
//! | 408, 429, 5xx but 501, 400 RequestTimeout | ambiguous | ambiguous | ambiguous | ambiguous |
//! | 501, 400 NotImplemented | refused: conditional requests unsupported | same | same | same |
//! | other 3xx/4xx | refused, with a hint | same | same | same |
//! | 2xx without ETag | refused: endpoint not compatible | same | `Deleted` | refused |
//!
//! `docs/PROTOCOL.md` ("Reply table") gives the reason for every cell S3 does not define.

use crate::reply::xml::XmlErrorBody;
use crate::reply::{ambiguous, etag_of, success, unsupported};
use crate::{Error, IntentKind, Response};
use http::{HeaderMap, StatusCode};

/// Classifies the reply to a request of kind `kind`.
///
/// A pure function of its inputs: it never panics, whatever the status, headers or body.
///
/// ```
/// use http::{HeaderMap, HeaderValue, StatusCode};
/// use sets3lock_proto::reply::s3::classify;
/// use sets3lock_proto::{IntentKind, Response};
///
/// let mut headers = HeaderMap::new();
/// headers.insert("etag", HeaderValue::from_static("\"d41d8cd98f00b204e9800998ecf8427e\""));
/// let r = classify(IntentKind::PutIfNoneMatch, StatusCode::OK, &headers, b"");
/// assert!(matches!(r, Response::Written { .. }));
///
/// let body = b"<Error><Code>PreconditionFailed</Code></Error>";
/// let r = classify(IntentKind::PutIfNoneMatch, StatusCode::PRECONDITION_FAILED, &HeaderMap::new(), body);
/// assert_eq!(r, Response::Exists);
///
/// let r = classify(IntentKind::PutIfMatch, StatusCode::SERVICE_UNAVAILABLE, &HeaderMap::new(), b"");
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
    let err = || XmlErrorBody::parse(body);
    match s {
        // S3 sends no ETag with a DELETE; every other success must name the version, or
        // nothing could be renewed, taken over or released after it.
        200..=299 => success(kind, etag_of(headers), headers, body, || {
            Error::MissingETag {
                op: kind,
                status: s,
            }
        }),
        304 => match kind {
            // MinIO's 2023 releases refused a create of an existing key with 304.
            PutIfNoneMatch => Response::Exists,
            Get => Response::NotModified,
            // Says nothing about whether the write was applied: the core must read back.
            PutIfMatch | DeleteIfMatch => ambiguous(s, None),
        },
        404 => {
            let e = err();
            if e.code.as_deref() == Some("NoSuchBucket") {
                Response::Refused(Error::NoSuchBucket { message: e.message })
            } else if kind == PutIfNoneMatch {
                // A create cannot miss its key: the endpoint or the addressing style is wrong.
                refused(kind, s, e)
            } else {
                Response::Absent
            }
        }
        409 => {
            let e = err();
            let conflict = matches!(
                e.code.as_deref(),
                None | Some("ConditionalRequestConflict")
                    | Some("ConcurrentModification")
                    | Some("OperationAborted")
            );
            match (conflict, kind) {
                // A read has nothing to conflict with; read again rather than trust it.
                (true, Get) => ambiguous(s, e.code),
                (true, _) => Response::Conflict { code: e.code },
                (false, _) => refused(kind, s, e),
            }
        }
        412 => match kind {
            PutIfNoneMatch => Response::Exists,
            PutIfMatch | DeleteIfMatch => Response::Mismatch,
            // SeaweedFS answers a conditional GET of a missing key with 412. Were the key there
            // after all, the cost is one create refused with 412 and one more read.
            Get => Response::Absent,
        },
        501 => unsupported(kind, s, err()),
        408 | 429 | 500..=599 => ambiguous(s, err().code),
        400 => {
            let e = err();
            match e.code.as_deref() {
                Some("RequestTimeout") | Some("SlowDown") => ambiguous(s, e.code),
                Some("NotImplemented") => unsupported(kind, s, e),
                _ => refused(kind, s, e),
            }
        }
        _ => refused(kind, s, err()),
    }
}

fn refused(op: IntentKind, status: u16, e: XmlErrorBody) -> Response {
    if is_about_time(e.code.as_deref(), e.message.as_deref()) {
        return Response::Refused(Error::Clock {
            op,
            status,
            code: e.code,
            message: e.message,
        });
    }
    let hint = hint(op, status, e.code.as_deref());
    Response::Refused(Error::Refused {
        op,
        status,
        code: e.code,
        message: e.message,
        hint,
    })
}

/// Whether a refusal is about the request's time, not about who sent it: S3's
/// `RequestTimeTooSkewed`, or a presigned request refused as expired or not yet valid
/// (AWS, SeaweedFS and s3rver answer `403 AccessDenied` "Request has expired"). An expired
/// session token (`ExpiredToken`, "The provided token has expired") is about credentials.
fn is_about_time(code: Option<&str>, message: Option<&str>) -> bool {
    match code {
        Some("RequestTimeTooSkewed") | Some("RequestExpired") => true,
        Some("AccessDenied") | None => message.is_some_and(|m| {
            let m = m.to_ascii_lowercase();
            m.contains("request has expired")
                || m.contains("not valid yet")
                || m.contains("not yet valid")
        }),
        _ => false,
    }
}

fn hint(op: IntentKind, status: u16, code: Option<&str>) -> &'static str {
    match code {
        Some("InvalidAccessKeyId") => {
            "the endpoint does not know this access key: check AWS_ACCESS_KEY_ID and the endpoint"
        }
        Some("SignatureDoesNotMatch") => {
            "the signature does not match: check AWS_SECRET_ACCESS_KEY and the region"
        }
        Some("ExpiredToken") | Some("TokenRefreshRequired") | Some("InvalidToken") => {
            "the session token is expired or invalid: refresh the credentials"
        }
        Some("AuthorizationHeaderMalformed") | Some("AuthorizationQueryParametersError") => {
            "the region is wrong: set AWS_REGION to the bucket's region"
        }
        Some("PermanentRedirect") | Some("TemporaryRedirect") => {
            "the bucket lives in another region or behind another endpoint: set AWS_REGION or the endpoint"
        }
        Some("MissingContentLength") => "the driver sent no Content-Length: report this as a bug",
        _ => match status {
            301 | 307 | 308 => {
                "the bucket lives in another region or behind another endpoint: set AWS_REGION or the endpoint"
            }
            403 if op == IntentKind::Get => {
                "access denied: the credentials need s3:GetObject on the lock key (and without s3:ListBucket, S3 answers 403 instead of 404 for a missing key)"
            }
            401 | 403 => {
                "access denied: the credentials need s3:PutObject, s3:GetObject and s3:DeleteObject on the lock key"
            }
            404 => "not found: check the endpoint URL and the addressing style (path-style for most S3-compatible stores)",
            405 => "the endpoint does not allow this method on the lock key",
            _ => "see the error code; retrying will not help",
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(status: u16, code: &str, message: &str) -> Response {
        let body = format!("<Error><Code>{code}</Code><Message>{message}</Message></Error>");
        classify(
            IntentKind::PutIfNoneMatch,
            StatusCode::from_u16(status).expect("status"),
            &HeaderMap::new(),
            body.as_bytes(),
        )
    }

    fn is_clock(r: &Response) -> bool {
        matches!(r, Response::Refused(Error::Clock { .. }))
    }

    #[test]
    fn refusals_of_the_requests_time_name_the_clock_not_the_permissions() {
        for (status, code, message) in [
            (403, "AccessDenied", "Request has expired"),
            (403, "AccessDenied", "Request is not valid yet"),
            (403, "AccessDenied", "request is not yet valid"),
            (
                403,
                "RequestTimeTooSkewed",
                "The difference between the request time and the current time is too large.",
            ),
            (400, "RequestExpired", "Request has expired"),
        ] {
            let r = refusal(status, code, message);
            assert!(is_clock(&r), "{code} {message}: {r:?}");
            let text = match r {
                Response::Refused(e) => e.to_string(),
                other => panic!("{other:?}"),
            };
            assert!(text.contains("clock"), "{text}");
            assert!(!text.contains("s3:PutObject"), "{text}");
        }
    }

    #[test]
    fn credential_refusals_are_not_about_the_clock() {
        for (code, message) in [
            ("ExpiredToken", "The provided token has expired."),
            ("AccessDenied", "Access Denied"),
            ("InvalidAccessKeyId", "Request has expired"),
        ] {
            let r = refusal(403, code, message);
            assert!(!is_clock(&r), "{code} {message}: {r:?}");
        }
    }
}
