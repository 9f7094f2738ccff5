//! Releasing: the conditional delete, and telling deleted, taken over and already gone
//! apart.

use super::context::Context;
use super::pending::{InFlight, Outgoing, Pending};
use super::retry::Tries;
use super::schedule::Schedule;
use super::session::Session;
use super::Phase;
use crate::{
    Ambiguity, ETag, Error, Event, Holder, Instant, Purpose, ReleaseOutcome, Response, Setback,
};

/// What a release sends next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// `DELETE If-Match` on our current ETag.
    Delete,
    /// `GET`: whose object is there now?
    Observe,
}

/// A release under way.
#[derive(Debug)]
pub(super) struct Releasing {
    s: Session,
    /// The ETag of our last confirmed write.
    etag: ETag,
    valid_until: Option<Instant>,
    /// A delete may have been applied without our hearing of it.
    delete_unconfirmed: bool,
    next: Schedule<Step>,
    retries: Tries,
}

impl Releasing {
    pub(super) fn start(
        s: Session,
        etag: ETag,
        valid_until: Option<Instant>,
        now: Instant,
    ) -> Releasing {
        Releasing {
            s,
            etag,
            valid_until,
            delete_unconfirmed: false,
            next: Schedule::at(now, Step::Delete),
            retries: Tries::default(),
        }
    }

    pub(super) fn poll_send(&mut self, now: Instant) -> Option<Outgoing> {
        Some(match self.next.take_due(now)? {
            Step::Delete => Outgoing::delete(Purpose::Release, self.etag.clone()),
            Step::Observe => Outgoing::read(Purpose::Resolve, None),
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
        let outcome = match (p.flight, resp) {
            // A renewal that was in flight when release was asked for (the only write a
            // release can have in flight).
            (InFlight::Replace { .. }, Response::Written { etag }) => {
                self.etag = etag;
                self.next.set(now, Step::Delete);
                None
            }
            (
                InFlight::Replace { write, .. },
                Response::Ambiguous(_) | Response::Mismatch | Response::Absent,
            ) => {
                self.s.remember(write);
                self.next.set(now, Step::Observe);
                None
            }
            (InFlight::Replace { .. }, _) => {
                self.next.set(now, Step::Delete);
                None
            }
            (InFlight::Delete { .. }, Response::Deleted) => Some(ReleaseOutcome::Deleted),
            (InFlight::Delete { .. }, Response::Absent) => Some(ReleaseOutcome::AlreadyGone),
            (InFlight::Delete { .. }, Response::Mismatch) => {
                // Some servers say 412 for a missing key too: read to tell the cases apart.
                self.next.set(now, Step::Observe);
                None
            }
            (_, Response::Refused(error)) => {
                cx.emit(Event::Failed { error });
                return Phase::Idle;
            }
            (InFlight::Read, Response::Object { etag, body }) => {
                let holder = Holder::decode(&body);
                if self.s.is_ours(&holder).is_some() {
                    // Ours (a renewal landed late, or the store refused a delete it should
                    // have accepted): delete that version, paced, a bounded number of times.
                    let incoherent = Setback::Incoherent { etag: etag.clone() };
                    self.etag = etag;
                    if !self.retry(cx, Step::Delete, now, incoherent) {
                        return Phase::Idle;
                    }
                    None
                } else if self.delete_unconfirmed && self.valid_until.is_none_or(|v| now < v) {
                    // Nobody can have taken over before our validity ended, so our delete
                    // landed and someone acquired the free lock since.
                    Some(ReleaseOutcome::Deleted)
                } else {
                    Some(ReleaseOutcome::TakenOver)
                }
            }
            (InFlight::Read, Response::Absent) => Some(if self.delete_unconfirmed {
                ReleaseOutcome::Deleted
            } else {
                ReleaseOutcome::AlreadyGone
            }),
            (flight, other) => {
                // Conflict, ambiguity, or a reply that does not fit: read, then try again.
                let kind = flight.kind();
                if let InFlight::Delete { .. } = flight {
                    self.delete_unconfirmed = true;
                }
                let setback = match other {
                    Response::Conflict { code } => Setback::Conflict { code },
                    Response::Ambiguous(a) => Setback::Ambiguous(a),
                    other => Setback::Ambiguous(Ambiguity::Unexpected {
                        reply: other.name(),
                        request: kind,
                    }),
                };
                if !self.retry(cx, Step::Observe, now, setback) {
                    return Phase::Idle;
                }
                None
            }
        };
        match outcome {
            Some(outcome) => {
                cx.emit(Event::Released { outcome });
                Phase::Idle
            }
            None => Phase::Releasing(self),
        }
    }

    /// Schedules `step` after a retry pause (the first at once), or reports failure when the
    /// attempts run out. Returns whether the release goes on.
    fn retry(&mut self, cx: &mut Context, step: Step, now: Instant, last: Setback) -> bool {
        let attempt = self.retries.count();
        if attempt > cx.cfg.retry_limit {
            cx.emit(Event::Failed {
                error: Error::GaveUp {
                    attempts: attempt,
                    last: Box::new(last),
                },
            });
            return false;
        }
        let at = cx.retry_at(now, attempt, 1);
        self.next.set(at, step);
        true
    }
}
