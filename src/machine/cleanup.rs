//! Cleaning up after an expiry or a cancellation: removing writes of ours that nobody holds,
//! so that others need not wait out their lease. Presence mode deletes them; fenced mode
//! writes a `free` record over them (a fenced object is never deleted).

use super::context::Context;
use super::pending::{InFlight, Outgoing, Pending};
use super::retry::Tries;
use super::schedule::Schedule;
use super::session::Session;
use super::Phase;
use crate::{ETag, Holder, Instant, Purpose, Response};

/// A write of ours known to be (or to have been) the object: its ETag, and its token if it
/// is a fenced record.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Leftover {
    etag: ETag,
    token: Option<u64>,
}

/// What a cleanup sends next.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Step {
    /// `GET`: did a write of ours land?
    Observe,
    /// Remove this leftover: `DELETE If-Match`, or, fenced, `PUT If-Match` of a `free` record.
    Remove(Leftover),
}

/// Writes of ours that may be the object while nobody holds the lock.
#[derive(Debug)]
pub(super) struct Cleanup {
    s: Session,
    /// Our writes known to have landed, to remove.
    leftovers: Vec<Leftover>,
    /// Some write of ours may have landed unseen: read first.
    resolve: bool,
    next: Schedule<Step>,
    retries: Tries,
}

impl Cleanup {
    /// After an acquisition that ended without the lock.
    pub(super) fn after_acquisition(s: Session) -> Cleanup {
        Cleanup::new(s, Vec::new())
    }

    /// After a hold expired: our last confirmed write may still be the object.
    pub(super) fn after_expiry(s: Session, etag: ETag, token: Option<u64>) -> Cleanup {
        Cleanup::new(s, vec![Leftover { etag, token }])
    }

    fn new(s: Session, leftovers: Vec<Leftover>) -> Cleanup {
        Cleanup {
            resolve: s.has_unresolved(),
            s,
            leftovers,
            next: Schedule::none(),
            retries: Tries::default(),
        }
    }

    /// Nothing left to do (and nothing in flight, which the caller checks).
    pub(super) fn is_done(&self) -> bool {
        self.next.is_empty() && !self.resolve && self.leftovers.is_empty()
    }

    /// The request due at `now`: a read while some write may have landed unseen, then the
    /// removal of each write of ours known to be there.
    pub(super) fn poll_send(&mut self, cx: &Context, now: Instant) -> Option<Outgoing> {
        if self.next.is_empty() {
            if self.resolve {
                self.next.set(now, Step::Observe);
            } else if let Some(l) = self.leftovers.first() {
                self.next.set(now, Step::Remove(l.clone()));
            }
        }
        Some(match self.next.take_due(now)? {
            Step::Observe => Outgoing::read(Purpose::Resolve, None),
            Step::Remove(Leftover { etag, token: None }) => {
                Outgoing::delete(Purpose::Cleanup, etag)
            }
            Step::Remove(Leftover {
                etag,
                token: Some(token),
            }) => {
                let (w, body) = self.s.next_free_write(&cx.cfg, now, token);
                Outgoing::free(Purpose::Cleanup, etag, w, body)
            }
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
            // Our `free` record replaced the leftover.
            (InFlight::Free { etag, .. }, Response::Written { .. }) => self.forget(&etag),
            // A write of the acquisition or hold that ended landed after all.
            (
                InFlight::Create { write } | InFlight::Replace { write, .. },
                Response::Written { etag },
            ) => self.leftovers.push(Leftover {
                etag,
                token: write.fence.map(|f| f.token),
            }),
            (InFlight::Read, Response::Object { etag, body, .. }) => {
                self.resolve = false;
                let holder = Holder::decode(&body);
                if self.s.is_ours(&holder).is_some()
                    && !self.leftovers.iter().any(|l| l.etag == etag)
                {
                    self.leftovers.push(Leftover {
                        etag,
                        token: holder.fence().map(|f| f.token),
                    });
                }
            }
            (InFlight::Read, Response::Absent | Response::NotModified) => self.resolve = false,
            (
                InFlight::Delete { etag } | InFlight::Free { etag, .. },
                Response::Deleted | Response::Absent | Response::Mismatch,
            ) => self.forget(&etag),
            (InFlight::Create { .. } | InFlight::Replace { .. }, r) => {
                // A write of ours was refused, conflicted or not sent: not applied. If
                // ambiguous, it may have landed: find out.
                if matches!(&r, Response::Ambiguous(a) if a.may_have_landed()) {
                    self.resolve = true;
                }
            }
            (flight, _) => {
                let attempt = self.retries.count();
                if attempt > cx.cfg.retry_limit {
                    // Leave it: a leftover object expires after its lease like a crash.
                    return Phase::Idle;
                }
                // A removal may or may not have landed: try it again (a landed one now
                // fails its condition, which settles it). A read: read again.
                let step = match flight {
                    InFlight::Delete { etag } => Step::Remove(Leftover { etag, token: None }),
                    InFlight::Free { etag, write } => Step::Remove(Leftover {
                        etag,
                        token: write.fence.map(|f| f.token),
                    }),
                    _ => Step::Observe,
                };
                self.next.set(cx.retry_at(now, attempt, 0), step);
            }
        }
        Phase::Cleanup(self)
    }

    fn forget(&mut self, etag: &ETag) {
        self.leftovers.retain(|l| l.etag != *etag);
    }
}
