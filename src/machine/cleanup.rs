//! Cleaning up after an expiry or a cancellation: deleting writes of ours that nobody
//! holds, so that others need not wait out their lease.

use super::context::Context;
use super::pending::{InFlight, Outgoing, Pending};
use super::retry::Tries;
use super::schedule::Schedule;
use super::session::Session;
use super::Phase;
use crate::{ETag, Holder, Instant, OwnerId, Purpose, Response};

/// What a cleanup sends next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// `GET`: did a write of ours land?
    Observe,
    /// `DELETE If-Match` on a write of ours.
    Delete(ETag),
}

/// Writes of ours that may be the object while nobody holds the lock.
#[derive(Debug)]
pub(super) struct Cleanup {
    owner: OwnerId,
    /// Our writes known to have landed, to delete.
    etags: Vec<ETag>,
    /// Some write of ours may have landed unseen: read first.
    resolve: bool,
    next: Schedule<Step>,
    retries: Tries,
}

impl Cleanup {
    /// After an acquisition that ended without the lock.
    pub(super) fn after_acquisition(s: &Session) -> Cleanup {
        Cleanup::new(s, Vec::new())
    }

    /// After a hold expired: our last confirmed write may still be the object.
    pub(super) fn after_expiry(s: &Session, etag: ETag) -> Cleanup {
        Cleanup::new(s, vec![etag])
    }

    fn new(s: &Session, etags: Vec<ETag>) -> Cleanup {
        Cleanup {
            owner: s.owner,
            etags,
            resolve: s.has_unresolved(),
            next: Schedule::none(),
            retries: Tries::default(),
        }
    }

    /// Nothing left to do (and nothing in flight, which the caller checks).
    pub(super) fn is_done(&self) -> bool {
        self.next.is_empty() && !self.resolve && self.etags.is_empty()
    }

    /// The request due at `now`: a read while some write may have landed unseen, then a
    /// delete of each write of ours known to be there.
    pub(super) fn poll_send(&mut self, now: Instant) -> Option<Outgoing> {
        if self.next.is_empty() {
            if self.resolve {
                self.next.set(now, Step::Observe);
            } else if let Some(e) = self.etags.first() {
                self.next.set(now, Step::Delete(e.clone()));
            }
        }
        Some(match self.next.take_due(now)? {
            Step::Observe => Outgoing::read(Purpose::Resolve, None),
            Step::Delete(etag) => Outgoing::delete(Purpose::Cleanup, etag),
        })
    }

    pub(super) fn wake_at(&self, in_flight: Option<&Pending>) -> Option<Instant> {
        self.next.when().filter(|_| in_flight.is_none())
    }

    pub(super) fn on_reply(
        mut self,
        cx: &mut Context,
        p: Pending,
        resp: Response,
        now: Instant,
    ) -> Phase {
        match (p.flight, resp) {
            (_, Response::Written { etag }) => self.etags.push(etag),
            (InFlight::Read, Response::Object { etag, body }) => {
                self.resolve = false;
                if Holder::decode(&body).owner() == Some(self.owner) && !self.etags.contains(&etag)
                {
                    self.etags.push(etag);
                }
            }
            (InFlight::Read, Response::Absent | Response::NotModified) => self.resolve = false,
            (
                InFlight::Delete { etag },
                Response::Deleted | Response::Absent | Response::Mismatch,
            ) => {
                self.etags.retain(|e| *e != etag);
            }
            (InFlight::Create { .. } | InFlight::Replace { .. }, r) => {
                // A write of ours was refused or conflicted: not applied. If ambiguous, it
                // may have landed: find out.
                if matches!(r, Response::Ambiguous(_)) {
                    self.resolve = true;
                }
            }
            (flight, _) => {
                let attempt = self.retries.count();
                if attempt > cx.cfg.retry_limit {
                    // Leave it: a leftover object expires after its lease like a crash.
                    return Phase::Idle;
                }
                let step = match flight {
                    InFlight::Delete { etag } => Step::Delete(etag),
                    _ => Step::Observe,
                };
                self.next.set(cx.retry_at(now, attempt, 0), step);
            }
        }
        Phase::Cleanup(self)
    }
}
