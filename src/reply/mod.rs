//! Replies: what an HTTP reply to one of the core's requests means for the lock.
//!
//! Every store has its own reply table, a pure function shared by every driver of that store
//! and reached by fuzzing, so that no driver has a classifier of its own: [`s3::classify`]
//! (Amazon S3 and S3-compatible stores), [`azure::classify`] (Azure Blob Storage) and
//! [`gcs::classify`] (Google Cloud Storage's JSON API). Each maps the store's native replies
//! onto the same [`Response`]s, so the state machine is the same on every store; each module
//! gives its table in full. A driver calls the table of the store it speaks to, never
//! another's: the same status can mean different things (a 409 is a lost race on Azure, a
//! conflict to retry on S3).
//!
//! `docs/PROTOCOL.md` ("Reply table") gives the reason for every cell a store does not define.

pub mod azure;
pub mod gcs;
pub mod s3;
mod xml;

pub use xml::XmlErrorBody;

use crate::{ETag, Error, IntentKind};
use bytes::Bytes;
use core::fmt;
use http::HeaderMap;

/// What a reply means, as the state machine consumes it.
///
/// Drivers get one from their store's reply table ([`s3::classify`], [`azure::classify`],
/// [`gcs::classify`]) for every HTTP reply, or build
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
        /// The store's error code, e.g. S3's `ConditionalRequestConflict` or Ceph's
        /// `ConcurrentModification`.
        code: Option<String>,
    },
    /// The outcome is unknown: a write may or may not have been applied.
    Ambiguous(Ambiguity),
    /// The request was refused for a reason retrying will not fix.
    Refused(Error),
}

impl Response {
    /// Whether this reply can answer a request of `kind` (the reply table's non-empty cells).
    /// The reply tables ([`s3::classify`] and the others) only ever produce fitting replies;
    /// the core reads any other reply, from a driver of its own, as "outcome unknown".
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
        /// The store's error code, if the reply had one (`SlowDown`, `InternalError`, ...).
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

pub(crate) fn unsupported(op: IntentKind, status: u16, e: XmlErrorBody) -> Response {
    Response::Refused(Error::ConditionalUnsupported {
        op,
        status,
        code: e.code,
        message: e.message,
    })
}
