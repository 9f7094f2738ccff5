//! What the core asks the world to do: one store request at a time.

use crate::ETag;
use bytes::Bytes;
use core::fmt;

/// The `Content-Type` of every lock record the core writes.
pub const CONTENT_TYPE: &str = "application/json";

/// Identifies a request so that its reply can be matched to it. A lock numbers its requests
/// 1, 2, 3, … in the order it sends them (logs can be read in that order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestId(u64);

impl RequestId {
    /// A request id from a number (useful to drivers replaying traces and to fuzzing).
    ///
    /// ```
    /// assert_eq!(sets3lock_proto::RequestId::from_u64(1).to_string(), "#1");
    /// ```
    pub const fn from_u64(n: u64) -> RequestId {
        RequestId(n)
    }

    /// The number.
    pub const fn as_u64(self) -> u64 {
        self.0
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// One request on the lock object, in the store's terms (the table shows S3's; each reply
/// module in [`reply`](crate::reply) gives its store's). The driver adds the bucket, the key
/// and the signature.
///
/// | intent | S3 request |
/// |---|---|
/// | `PutIfNoneMatch { body }` | `PUT key`, `If-None-Match: *`, `Content-Type: application/json` |
/// | `PutIfMatch { etag, body }` | `PUT key`, `If-Match: "etag"`, `Content-Type: application/json` |
/// | `DeleteIfMatch { etag }` | `DELETE key`, `If-Match: "etag"` |
/// | `Get { if_none_match }` | `GET key`, with `If-None-Match: "etag"` when given |
///
/// ```
/// use sets3lock_proto::{Intent, IntentKind};
/// let get = Intent::Get { if_none_match: None };
/// assert_eq!(get.kind(), IntentKind::Get);
/// assert_eq!(get.method(), "GET");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Intent {
    /// Create the object only if it does not exist: acquisition.
    PutIfNoneMatch {
        /// The lock record.
        body: Bytes,
    },
    /// Replace the object only if its ETag is `etag`: renewal, or takeover of a stale lock.
    PutIfMatch {
        /// The version to replace.
        etag: ETag,
        /// The lock record.
        body: Bytes,
    },
    /// Delete the object only if its ETag is `etag`: release.
    DeleteIfMatch {
        /// The version to delete.
        etag: ETag,
    },
    /// Read the object: observe the holder, or find out whether an unanswered write landed.
    Get {
        /// Ask for `304 Not Modified` if the object still has this ETag.
        if_none_match: Option<ETag>,
    },
}

impl Intent {
    /// The kind of request, without its data: what [`classify`](crate::reply) needs.
    pub fn kind(&self) -> IntentKind {
        match self {
            Intent::PutIfNoneMatch { .. } => IntentKind::PutIfNoneMatch,
            Intent::PutIfMatch { .. } => IntentKind::PutIfMatch,
            Intent::DeleteIfMatch { .. } => IntentKind::DeleteIfMatch,
            Intent::Get { .. } => IntentKind::Get,
        }
    }

    /// The HTTP method.
    ///
    /// ```
    /// # use sets3lock_proto::{ETag, Intent};
    /// assert_eq!(Intent::DeleteIfMatch { etag: ETag::parse("e").unwrap() }.method(), "DELETE");
    /// ```
    pub fn method(&self) -> &'static str {
        match self {
            Intent::PutIfNoneMatch { .. } | Intent::PutIfMatch { .. } => "PUT",
            Intent::DeleteIfMatch { .. } => "DELETE",
            Intent::Get { .. } => "GET",
        }
    }

    /// The request body, for PUTs.
    ///
    /// ```
    /// # use sets3lock_proto::Intent;
    /// assert!(Intent::Get { if_none_match: None }.body().is_none());
    /// ```
    pub fn body(&self) -> Option<&bytes::Bytes> {
        match self {
            Intent::PutIfNoneMatch { body } | Intent::PutIfMatch { body, .. } => Some(body),
            _ => None,
        }
    }
}

/// The four kinds of request, for classifying replies.
///
/// ```
/// assert_eq!(sets3lock_proto::IntentKind::PutIfMatch.to_string(), "PUT If-Match");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IntentKind {
    /// `PUT` with `If-None-Match: *`.
    PutIfNoneMatch,
    /// `PUT` with `If-Match`.
    PutIfMatch,
    /// `DELETE` with `If-Match`.
    DeleteIfMatch,
    /// `GET`.
    Get,
}

impl IntentKind {
    /// Whether the request changes the object.
    ///
    /// ```
    /// assert!(!sets3lock_proto::IntentKind::Get.is_write());
    /// ```
    pub fn is_write(self) -> bool {
        self != IntentKind::Get
    }
}

impl fmt::Display for IntentKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IntentKind::PutIfNoneMatch => "PUT If-None-Match",
            IntentKind::PutIfMatch => "PUT If-Match",
            IntentKind::DeleteIfMatch => "DELETE If-Match",
            IntentKind::Get => "GET",
        })
    }
}

/// Why the core sends a request: for logs, traces and the simulation's checks.
///
/// ```
/// assert_eq!(sets3lock_proto::Purpose::Renew.to_string(), "renew");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Purpose {
    /// Create the lock object.
    Acquire,
    /// Read the holder while waiting.
    Observe,
    /// Find out whether a write whose reply was lost landed.
    Resolve,
    /// Replace a stale holder's object.
    Takeover,
    /// Extend our lease.
    Renew,
    /// Delete our object at the user's request.
    Release,
    /// Delete an object of ours that nobody holds any more (after expiry or cancellation).
    Cleanup,
}

impl fmt::Display for Purpose {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Purpose::Acquire => "acquire",
            Purpose::Observe => "observe",
            Purpose::Resolve => "resolve",
            Purpose::Takeover => "takeover",
            Purpose::Renew => "renew",
            Purpose::Release => "release",
            Purpose::Cleanup => "cleanup",
        })
    }
}

/// A request the core wants sent, from [`Lock::poll_request`](crate::Lock::poll_request).
///
/// Every request must be answered exactly once with
/// [`Lock::handle_response`](crate::Lock::handle_response), carrying the same `id`; a timeout or
/// a broken connection is answered with [`Response::Ambiguous`](crate::Response::Ambiguous).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// Matches the reply to the request.
    pub id: RequestId,
    /// What to send.
    pub intent: Intent,
    /// Why the core sends it, for logs and traces; it changes nothing in the HTTP request.
    pub purpose: Purpose,
}
