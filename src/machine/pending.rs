//! The request in flight, typed by what its reply needs: a write carries its sequence number
//! and send time, a conditional request the ETag it named, a read nothing.

use super::session::Write;
use crate::{Ambiguity, ETag, Intent, IntentKind, Purpose, Request, RequestId, Response, Setback};
use bytes::Bytes;

/// What the request in flight was.
#[derive(Clone, Debug)]
pub(super) enum InFlight {
    /// `PUT If-None-Match: *` of our write.
    Create { write: Write },
    /// `PUT If-Match: etag` of our write.
    Replace { write: Write, etag: ETag },
    /// `DELETE If-Match: etag`.
    Delete { etag: ETag },
    /// `PUT If-Match: etag` of a `free` record of ours (fenced mode's release).
    Free { write: Write, etag: ETag },
    /// `GET`.
    Read,
}

impl InFlight {
    pub(super) fn kind(&self) -> IntentKind {
        match self {
            InFlight::Create { .. } => IntentKind::PutIfNoneMatch,
            InFlight::Replace { .. } | InFlight::Free { .. } => IntentKind::PutIfMatch,
            InFlight::Delete { .. } => IntentKind::DeleteIfMatch,
            InFlight::Read => IntentKind::Get,
        }
    }

    /// Our write, if this was one: it may land even when its reply is lost.
    pub(super) fn write(&self) -> Option<Write> {
        match self {
            InFlight::Create { write }
            | InFlight::Replace { write, .. }
            | InFlight::Free { write, .. } => Some(*write),
            InFlight::Delete { .. } | InFlight::Read => None,
        }
    }
}

/// The request awaiting its reply.
#[derive(Clone, Debug)]
pub(super) struct Pending {
    pub(super) id: RequestId,
    pub(super) purpose: Purpose,
    pub(super) flight: InFlight,
}

/// A request a phase wants sent, before it has an id.
#[derive(Debug)]
pub(super) struct Outgoing {
    purpose: Purpose,
    flight: InFlight,
    intent: Intent,
}

impl Outgoing {
    pub(super) fn create(purpose: Purpose, write: Write, body: Bytes) -> Outgoing {
        Outgoing {
            purpose,
            flight: InFlight::Create { write },
            intent: Intent::PutIfNoneMatch { body },
        }
    }

    pub(super) fn replace(purpose: Purpose, etag: ETag, write: Write, body: Bytes) -> Outgoing {
        Outgoing {
            purpose,
            flight: InFlight::Replace {
                write,
                etag: etag.clone(),
            },
            intent: Intent::PutIfMatch { etag, body },
        }
    }

    pub(super) fn free(purpose: Purpose, etag: ETag, write: Write, body: Bytes) -> Outgoing {
        Outgoing {
            purpose,
            flight: InFlight::Free {
                write,
                etag: etag.clone(),
            },
            intent: Intent::PutIfMatch { etag, body },
        }
    }

    pub(super) fn delete(purpose: Purpose, etag: ETag) -> Outgoing {
        Outgoing {
            purpose,
            flight: InFlight::Delete { etag: etag.clone() },
            intent: Intent::DeleteIfMatch { etag },
        }
    }

    pub(super) fn read(purpose: Purpose, if_none_match: Option<ETag>) -> Outgoing {
        Outgoing {
            purpose,
            flight: InFlight::Read,
            intent: Intent::Get { if_none_match },
        }
    }

    /// The request to hand out, and what to remember until its reply.
    pub(super) fn with_id(self, id: RequestId) -> (Request, Pending) {
        let request = Request {
            id,
            intent: self.intent,
            purpose: self.purpose,
        };
        let pending = Pending {
            id,
            purpose: self.purpose,
            flight: self.flight,
        };
        (request, pending)
    }
}

/// Whether the request this reply answers may have been applied (anything but a request that
/// was never sent: refused, conflicted and failed replies are handled as such by the caller).
pub(super) fn may_have_landed(reply: &Response) -> bool {
    !matches!(reply, Response::Ambiguous(a) if !a.may_have_landed())
}

/// The setback a reply that is no answer stands for: a 409, a refusal, no reply, or a reply
/// that does not fit a request of `kind`.
pub(super) fn setback(reply: Response, kind: IntentKind) -> Setback {
    match reply {
        Response::Conflict { code } => Setback::Conflict { code },
        Response::Refused(e) => Setback::Refused(e),
        Response::Ambiguous(a) => Setback::Ambiguous(a),
        other => Setback::Ambiguous(Ambiguity::Unexpected {
            reply: other.name(),
            request: kind,
        }),
    }
}
