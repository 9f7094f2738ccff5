//! Releasing: the conditional delete (fenced mode: the conditional write of a `free` record),
//! and telling released, taken over and already gone apart.

use super::context::Context;
use super::pending::{self, InFlight, Outgoing, Pending};
use super::retry::Tries;
use super::schedule::Schedule;
use super::session::Session;
use super::Phase;
use crate::{ETag, Error, Event, Holder, Instant, Purpose, ReleaseOutcome, Response, Setback};

/// What a release sends next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// Presence mode: `DELETE If-Match` on our current ETag. Fenced mode: `PUT If-Match` on
    /// it, of a `free` record with our token.
    Release,
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
    /// Fenced mode: our grant's token, which the `free` record keeps.
    token: Option<u64>,
    /// Our release (delete or `free` write) may have been applied without our hearing of it.
    unconfirmed: bool,
    next: Schedule<Step>,
    retries: Tries,
    /// Under `hold_at_least`: instead of a delete or a `free` record, a resting record with
    /// this lease (our `cooldown` record), so nobody acquires before it runs out.
    rest: Option<core::time::Duration>,
    /// Released from a handle after its lease had run out by the store's clock.
    overdue: bool,
    /// Not a release: a detach, which parks the record ([`crate::Record::parked`]).
    park: bool,
    /// A release from a handle ([`crate::Resume::Release`]): the user asked to end the hold
    /// wherever it is, so a record of it parked since our read is released too.
    from_handle: bool,
}

impl Releasing {
    pub(super) fn start(
        s: Session,
        etag: ETag,
        valid_until: Option<Instant>,
        token: Option<u64>,
        now: Instant,
    ) -> Releasing {
        Releasing {
            s,
            etag,
            valid_until,
            token,
            unconfirmed: false,
            next: Schedule::at(now, Step::Release),
            retries: Tries::default(),
            rest: None,
            overdue: false,
            park: false,
            from_handle: false,
        }
    }

    /// This release comes from a handle: it ends the hold, whichever process parked it last.
    pub(super) fn of_a_handle(mut self) -> Releasing {
        self.from_handle = true;
        self
    }

    /// This is a detach: it parks the record instead of removing it.
    pub(super) fn parking(mut self) -> Releasing {
        self.park = true;
        self
    }

    /// This release leaves the lock resting for `lease` (see `Config::hold_at_least`).
    pub(super) fn resting(mut self, lease: core::time::Duration) -> Releasing {
        self.rest = Some(lease);
        self
    }

    /// This release is of a hold whose lease had run out (a handle's, by the store's clock).
    pub(super) fn overdue(mut self) -> Releasing {
        self.overdue = true;
        self
    }

    pub(super) fn poll_send(&mut self, cx: &Context, now: Instant) -> Option<Outgoing> {
        Some(match self.next.take_due(now)? {
            Step::Release if self.park => {
                let fence = self.token.map(|token| crate::Fence {
                    state: crate::LockState::Held,
                    token,
                });
                let (w, body) = self.s.next_park_write(&cx.cfg, now, fence);
                Outgoing::free(Purpose::Release, self.etag.clone(), w, body)
            }
            Step::Release => match (self.rest, self.token) {
                (Some(lease), token) => {
                    let fence = token.map(|token| crate::Fence {
                        state: crate::LockState::Held,
                        token,
                    });
                    let (w, body) = self.s.next_rest_write(&cx.cfg, now, lease, fence);
                    Outgoing::free(Purpose::Release, self.etag.clone(), w, body)
                }
                (None, None) => Outgoing::delete(Purpose::Release, self.etag.clone()),
                (None, Some(token)) => {
                    let (w, body) = self.s.next_free_write(&cx.cfg, now, token);
                    Outgoing::free(Purpose::Release, self.etag.clone(), w, body)
                }
            },
            Step::Observe => Outgoing::read(Purpose::Resolve, None),
        })
    }

    pub(super) fn wake_at(&self, in_flight: Option<&Pending>) -> Option<Instant> {
        self.next.when().filter(|_| in_flight.is_none())
    }

    /// How a release that did what we asked is reported.
    fn done(&self) -> ReleaseOutcome {
        match self.token {
            _ if self.park => ReleaseOutcome::Parked,
            _ if self.rest.is_some() => ReleaseOutcome::Resting,
            _ if self.overdue => ReleaseOutcome::Overdue,
            None => ReleaseOutcome::Deleted,
            Some(_) => ReleaseOutcome::Freed,
        }
    }

    pub(super) fn on_reply(
        mut self,
        cx: &mut Context,
        p: Pending,
        resp: Response,
        now: Instant,
    ) -> Phase {
        let outcome = match (p.flight, resp) {
            // A renewal that was in flight when release was asked for (the only other write a
            // release can have in flight).
            (InFlight::Replace { .. }, Response::Written { etag }) => {
                self.etag = etag;
                self.next.set(now, Step::Release);
                None
            }
            (
                InFlight::Replace { write, .. },
                r @ (Response::Ambiguous(_) | Response::Mismatch | Response::Absent),
            ) if pending::may_have_landed(&r) => {
                self.s.remember(write);
                self.next.set(now, Step::Observe);
                None
            }
            (InFlight::Replace { .. }, _) => {
                self.next.set(now, Step::Release);
                None
            }
            (InFlight::Delete { .. }, Response::Deleted)
            | (InFlight::Free { .. }, Response::Written { .. }) => Some(self.done()),
            (InFlight::Delete { .. } | InFlight::Free { .. }, Response::Absent) => {
                Some(ReleaseOutcome::AlreadyGone)
            }
            (InFlight::Delete { .. } | InFlight::Free { .. }, Response::Mismatch) => {
                // Some servers say 412 for a missing key too: read to tell the cases apart.
                self.next.set(now, Step::Observe);
                None
            }
            (_, Response::Refused(error)) => {
                cx.emit(Event::Failed { error });
                return Phase::Idle;
            }
            (InFlight::Read, Response::Object { etag, body, .. }) => {
                let holder = Holder::decode(&body);
                if self.s.is_ours(&holder).is_some() {
                    // Ours (a renewal landed late, or the store refused a release it should
                    // have accepted): release that version, paced, a bounded number of times.
                    let incoherent = Setback::Incoherent { etag: etag.clone() };
                    self.etag = etag;
                    if !self.retry(cx, Step::Release, now, incoherent) {
                        return Phase::Idle;
                    }
                    None
                } else if self.s.freed_by_us(&holder)
                    || self.s.rested_by_us(&holder)
                    || self.s.parked_by_us(&holder)
                {
                    // Our `free` (resting, parked) record: the release (or detach) landed.
                    Some(self.done())
                } else if self.from_handle && self.s.parked_elsewhere(&holder, self.token) {
                    // Parked since our read (a detach that landed after it): nobody runs
                    // under the hold now, so release that version as a parked one (not
                    // overdue: it was renewed since), paced and a bounded number of times.
                    if let Holder::Sets3lock(r) = &holder {
                        self.s.follow(cx, r);
                    }
                    let incoherent = Setback::Incoherent { etag: etag.clone() };
                    self.etag = etag;
                    self.rest = None;
                    self.overdue = false;
                    if !self.retry(cx, Step::Release, now, incoherent) {
                        return Phase::Idle;
                    }
                    None
                } else if self.s.held_elsewhere(&holder) {
                    // Another process continued this hold from its handle: it holds the lock
                    // now, and learns nothing from us.
                    Some(ReleaseOutcome::HeldElsewhere)
                } else if let Some(ended) = self.s.ended_elsewhere(&holder) {
                    // Another process of this hold released it from the handle meanwhile (a
                    // record of the hold by another writer: ours did not land, for after our
                    // release nobody of the hold writes again).
                    Some(ended)
                } else if self.unconfirmed && !self.park && self.valid_until.is_none_or(|v| now < v)
                {
                    // Nobody can have taken over before our validity ended, so our release
                    // landed and someone acquired the free lock since.
                    Some(self.done())
                } else {
                    Some(ReleaseOutcome::TakenOver)
                }
            }
            (InFlight::Read, Response::Absent) => Some(if self.unconfirmed && !self.park {
                self.done()
            } else {
                ReleaseOutcome::AlreadyGone
            }),
            (flight, other) => {
                // Conflict, ambiguity, or a reply that does not fit: read, then try again.
                let kind = flight.kind();
                if matches!(flight, InFlight::Delete { .. } | InFlight::Free { .. })
                    && pending::may_have_landed(&other)
                {
                    self.unconfirmed = true;
                }
                let setback = pending::setback(other, kind);
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
