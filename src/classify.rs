//! Reply classification: what an HTTP reply to one of our requests means for the lock.
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

use crate::{ETag, Error, IntentKind};
use bytes::Bytes;
use core::fmt;
use http::{HeaderMap, StatusCode};

/// What a reply means, as the state machine consumes it.
///
/// Drivers get one from [`classify`] for every HTTP reply, or build
/// [`Response::Ambiguous`] themselves when no reply came (timeout, reset connection).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Response {
    /// A PUT was applied; the object now has this ETag.
    Written {
        /// The new object's ETag.
        etag: ETag,
    },
    /// A DELETE was applied.
    Deleted,
    /// A GET returned the object.
    Object {
        /// The object's ETag: the version a conditional request names.
        etag: ETag,
        /// The lock record, for [`Holder::decode`](crate::Holder::decode).
        body: Bytes,
        /// How long ago the object was written, by the store's own clock: the reply's `Date`
        /// less the object's `Last-Modified`, in the whole seconds those headers give (see
        /// [`store_age`]). `None` when the reply lacks either header. Only fresh readers of a
        /// resting record ([`Config::hold_at_least`](crate::Config::hold_at_least)) and of an
        /// adopted hold use it; nothing that keeps locks exclusive depends on it.
        age: Option<core::time::Duration>,
    },
    /// A conditional GET: the object still has the ETag we named.
    NotModified,
    /// `PUT If-None-Match: *` failed: the object exists.
    Exists,
    /// An `If-Match` failed: the object exists with another ETag (on some servers: or is gone).
    Mismatch,
    /// The object does not exist.
    Absent,
    /// A concurrent conditional request conflicted (409); not applied, retry soon.
    Conflict {
        /// S3's error code, e.g. `ConditionalRequestConflict` or Ceph's `ConcurrentModification`.
        code: Option<String>,
    },
    /// The outcome is unknown: a write may or may not have been applied.
    Ambiguous(Ambiguity),
    /// The request was refused for a reason retrying will not fix.
    Refused(Error),
}

impl Response {
    /// Whether this reply can answer a request of `kind` (the reply table's non-empty cells).
    /// [`classify`] only ever produces fitting replies; the core reads any other reply, from a
    /// driver of its own, as "outcome unknown".
    ///
    /// ```
    /// use sets3lock_proto::{IntentKind, Response};
    /// assert!(Response::Exists.fits(IntentKind::PutIfNoneMatch));
    /// assert!(!Response::Deleted.fits(IntentKind::PutIfMatch));
    /// ```
    #[must_use]
    pub fn fits(&self, kind: IntentKind) -> bool {
        use IntentKind::*;
        matches!(
            (self, kind),
            (Response::Ambiguous(_) | Response::Refused(_), _)
                | (Response::Written { .. }, PutIfNoneMatch | PutIfMatch)
                | (Response::Exists, PutIfNoneMatch)
                | (
                    Response::Mismatch | Response::Absent,
                    PutIfMatch | DeleteIfMatch
                )
                | (
                    Response::Conflict { .. },
                    PutIfNoneMatch | PutIfMatch | DeleteIfMatch
                )
                | (Response::Deleted, DeleteIfMatch)
                | (
                    Response::Object { .. } | Response::Absent | Response::NotModified,
                    Get
                )
        )
    }

    /// A short name for messages ("written", "mismatch", ...).
    ///
    /// ```
    /// assert_eq!(sets3lock_proto::Response::Mismatch.name(), "mismatch");
    /// ```
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Response::Written { .. } => "written",
            Response::Deleted => "deleted",
            Response::Object { .. } => "object",
            Response::NotModified => "not modified",
            Response::Exists => "exists",
            Response::Mismatch => "mismatch",
            Response::Absent => "absent",
            Response::Conflict { .. } => "conflict",
            Response::Ambiguous(_) => "ambiguous",
            Response::Refused(_) => "refused",
        }
    }
}

/// Why a reply leaves the outcome of a request unknown.
///
/// ```
/// use sets3lock_proto::Ambiguity;
/// assert_eq!(Ambiguity::Timeout.to_string(), "no reply before the request timeout");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Ambiguity {
    /// The server answered with a status that does not say whether the request was applied
    /// (5xx, 429, 408, ...).
    Status {
        /// The HTTP status.
        status: u16,
        /// S3's error code, if the body had one (`SlowDown`, `InternalError`, ...).
        code: Option<String>,
    },
    /// No reply came in time.
    Timeout,
    /// The connection failed before a complete reply.
    Connection {
        /// What the HTTP client said.
        detail: String,
    },
    /// The request never left this machine: no connection could be made (refused, no route,
    /// a failed TLS handshake) or there was nothing to sign it with. No answer, but certainly
    /// not applied: a write that was not sent is not waited for or cleaned up. Drivers build
    /// it only when they know nothing reached the server.
    NotSent {
        /// What stopped it.
        detail: String,
    },
    /// A reply that does not fit the request (a driver bug, or a very odd server).
    Unexpected {
        /// What the reply said.
        reply: &'static str,
        /// The request it answered.
        request: IntentKind,
    },
}

impl Ambiguity {
    /// Whether the request may have been applied: always, but for [`Ambiguity::NotSent`].
    ///
    /// ```
    /// use sets3lock_proto::Ambiguity;
    /// assert!(Ambiguity::Timeout.may_have_landed());
    /// assert!(!Ambiguity::NotSent { detail: "connection refused".into() }.may_have_landed());
    /// ```
    pub fn may_have_landed(&self) -> bool {
        !matches!(self, Ambiguity::NotSent { .. })
    }
}

impl fmt::Display for Ambiguity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ambiguity::Status { status, code } => {
                write!(f, "HTTP {status}")?;
                if let Some(c) = code {
                    write!(f, " {c}")?;
                }
                Ok(())
            }
            Ambiguity::Timeout => f.write_str("no reply before the request timeout"),
            Ambiguity::Connection { detail } => write!(f, "connection failed: {detail}"),
            Ambiguity::NotSent { detail } => write!(f, "not sent: {detail}"),
            Ambiguity::Unexpected { reply, request } => {
                write!(f, "unexpected reply \"{reply}\" to {request}")
            }
        }
    }
}

/// An S3 error document's `<Code>` and `<Message>`.
///
/// ```
/// let e = sets3lock_proto::S3ErrorBody::parse(
///     b"<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><Message>gone &amp; done</Message></Error>");
/// assert_eq!(e.code.as_deref(), Some("NoSuchKey"));
/// assert_eq!(e.message.as_deref(), Some("gone & done"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct S3ErrorBody {
    /// The error code.
    pub code: Option<String>,
    /// The message for people.
    pub message: Option<String>,
}

impl S3ErrorBody {
    /// Extracts the code and message from an error body. Tolerant: a body that is not an S3
    /// error document yields neither.
    ///
    /// ```
    /// assert_eq!(sets3lock_proto::S3ErrorBody::parse(b"oops"), Default::default());
    /// ```
    pub fn parse(body: &[u8]) -> S3ErrorBody {
        let body = &body[..body.len().min(16 * 1024)];
        let text = String::from_utf8_lossy(body);
        S3ErrorBody {
            code: element(&text, "Code", 64)
                .filter(|c| c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.')),
            message: element(&text, "Message", 300),
        }
    }
}

/// The text of the first `<name>…</name>` element, unescaped, trimmed, at most `max` chars.
pub(crate) fn element(text: &str, name: &str, max: usize) -> Option<String> {
    let open = format!("<{name}>");
    let close = format!("</{name}>");
    let start = text.find(&open)? + open.len();
    let len = text[start..].find(&close)?;
    let raw = text[start..start + len].trim();
    let value: String = unescape(raw).chars().take(max).collect();
    (!value.is_empty()).then_some(value)
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// Classifies the reply to a request of kind `kind`.
///
/// A pure function of its inputs: it never panics, whatever the status, headers or body.
///
/// ```
/// use http::{HeaderMap, HeaderValue, StatusCode};
/// use sets3lock_proto::{classify, IntentKind, Response};
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
    let err = || S3ErrorBody::parse(body);
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

/// A 2xx reply to a request of `kind`, naming `version` (the store's version of the object
/// it wrote or read): `Deleted` for a DELETE, else the version is required, and its absence is
/// the refusal `missing` makes.
pub(crate) fn success(
    kind: IntentKind,
    version: Option<ETag>,
    headers: &HeaderMap,
    body: &[u8],
    missing: impl FnOnce() -> Error,
) -> Response {
    match (kind, version) {
        (IntentKind::DeleteIfMatch, _) => Response::Deleted,
        (IntentKind::Get, Some(etag)) => Response::Object {
            etag,
            body: Bytes::copy_from_slice(body),
            age: store_age(headers),
        },
        (_, Some(etag)) => Response::Written { etag },
        (_, None) => Response::Refused(missing()),
    }
}

/// The age of the object a GET returned, by the store's clock: `Date` less `Last-Modified`
/// (both HTTP dates, whole seconds). `None` if either is missing or unreadable; zero if the
/// object seems to be from the future.
///
/// Both headers are truncated to the second, so the true age is within one second either
/// side of this: a reader that needs "older than L" asks for `age >= L + 1 s`.
///
/// ```
/// use http::{HeaderMap, HeaderValue};
/// let mut h = HeaderMap::new();
/// h.insert("date", HeaderValue::from_static("Wed, 02 Dec 2026 10:00:30 GMT"));
/// h.insert("last-modified", HeaderValue::from_static("Wed, 02 Dec 2026 09:59:00 GMT"));
/// assert_eq!(sets3lock_proto::store_age(&h), Some(core::time::Duration::from_secs(90)));
/// ```
pub fn store_age(headers: &HeaderMap) -> Option<core::time::Duration> {
    let read = |name: http::header::HeaderName| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(crate::httpdate::parse)
    };
    let date = read(http::header::DATE)?;
    let modified = read(http::header::LAST_MODIFIED)?;
    Some(core::time::Duration::from_secs(
        date.saturating_sub(modified),
    ))
}

pub(crate) fn etag_of(headers: &HeaderMap) -> Option<ETag> {
    let value = headers.get(http::header::ETAG)?.to_str().ok()?;
    ETag::parse(value).ok()
}

pub(crate) fn ambiguous(status: u16, code: Option<String>) -> Response {
    Response::Ambiguous(Ambiguity::Status { status, code })
}

pub(crate) fn unsupported(op: IntentKind, status: u16, e: S3ErrorBody) -> Response {
    Response::Refused(Error::ConditionalUnsupported {
        op,
        status,
        code: e.code,
        message: e.message,
    })
}

fn refused(op: IntentKind, status: u16, e: S3ErrorBody) -> Response {
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
