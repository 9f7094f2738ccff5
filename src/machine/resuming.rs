//! Resuming: continuing a hold named by a handle, in a process that did not acquire it.
//!
//! The handle names the hold's owner id, not a version of the object: we read the record,
//! check that it is the hold's and that the hold is live, and then write with `If-Match` on the
//! ETag we read. The condition makes the check and the write one step, so whatever changed in
//! between (a takeover, another process renewing the same hold) makes the write fail, and we
//! read again. Validity starts from our own confirmed write, never from someone else's.

use super::context::Context;
use super::holding::Holding;
use super::pending::{self, InFlight, Outgoing, Pending};
use super::releasing::Releasing;
use super::retry::Tries;
use super::schedule::Schedule;
use super::session::{Session, Write};
use super::Phase;
use crate::{
    ETag, Error, Event, Fence, HoldEnded, Holder, Instant, LockState, NotAcquired, Purpose,
    Response, Setback,
};
use core::time::Duration;

/// What to do with the hold once it is found live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resume {
    /// Renew it and hold it: the lock is then held as after an acquisition, renewed by the
    /// driver (or renewed once and [detached](crate::Lock::detach) again).
    Hold,
    /// Release it, as [`Lock::release`](crate::Lock::release) would.
    Release,
}

/// What a resumption sends next.
#[derive(Clone, Debug, PartialEq)]
enum Step {
    /// `GET`: is the hold still there, and at which ETag?
    Read,
    /// `PUT If-Match` on the ETag we read, of our own record of the hold.
    Renew { etag: ETag },
}

/// A resumption under way.
#[derive(Debug)]
pub(super) struct Resuming {
    s: Session,
    /// The hold's fencing token, from the handle.
    token: Option<u64>,
    then: Resume,
    next: Schedule<Step>,
    /// Setbacks in a row.
    retries: Tries,
    /// Our renewals refused since the start (another writer between our read and our write,
    /// each time): bounded, and paced, so a store that refuses every condition cannot keep
    /// us reading and writing for ever.
    refusals: Tries,
    last_setback: Option<Setback>,
}

impl Resuming {
    pub(super) fn start(s: Session, token: Option<u64>, then: Resume, now: Instant) -> Resuming {
        Resuming {
            s,
            token,
            then,
            next: Schedule::at(now, Step::Read),
            retries: Tries::default(),
            refusals: Tries::default(),
            last_setback: None,
        }
    }

    pub(super) fn poll_send(&mut self, cx: &Context, now: Instant) -> Option<Outgoing> {
        Some(match self.next.take_due(now)? {
            Step::Read => Outgoing::read(Purpose::Resolve, None),
            Step::Renew { etag } => {
                let fence = self.token.map(|token| Fence {
                    state: LockState::Held,
                    token,
                });
                let (w, body) = self.s.next_write(&cx.cfg, now, fence);
                Outgoing::replace(Purpose::Renew, etag, w, body)
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
        r: Response,
        now: Instant,
    ) -> Phase {
        match (p.flight, r) {
            (_, Response::Refused(error)) => {
                cx.emit(Event::Failed { error });
                Phase::Idle
            }
            (InFlight::Replace { write, .. }, Response::Written { etag }) => {
                self.resumed(cx, etag, write, now)
            }
            (InFlight::Replace { etag, .. }, Response::Mismatch | Response::Absent) => {
                // Someone wrote since we read (another process of this hold, or a takeover),
                // or the object is gone: read again to see which (the first time at once).
                let attempt = self.refusals.count();
                if attempt > cx.cfg.retry_limit {
                    cx.emit(Event::Failed {
                        error: Error::GaveUp {
                            attempts: attempt,
                            last: Box::new(Setback::Incoherent { etag }),
                        },
                    });
                    return Phase::Idle;
                }
                let at = cx.retry_at(now, attempt, 1);
                self.next.set(at, Step::Read);
                Phase::Resuming(self)
            }
            (InFlight::Read, Response::Object { etag, body, age }) => {
                self.retries.reset();
                self.on_record(cx, etag, Holder::decode(&body), age, now)
            }
            (InFlight::Read, Response::Absent) => ended(cx, HoldEnded::Gone),
            (flight, r) => {
                // A lost reply, a 5xx, a conflict: our write may have landed; read, paced.
                if let Some(w) = flight.write().filter(|_| pending::may_have_landed(&r)) {
                    self.s.remember(w);
                }
                self.last_setback = Some(pending::setback(r, flight.kind()));
                let attempt = self.retries.count();
                if attempt > cx.cfg.retry_limit {
                    let last = self.last_setback.take().unwrap_or(Setback::LostRace);
                    cx.emit(Event::Failed {
                        error: Error::GaveUp {
                            attempts: attempt,
                            last: Box::new(last),
                        },
                    });
                    return Phase::Idle;
                }
                let at = cx.retry_at(now, attempt, 0);
                self.next.set(at, Step::Read);
                Phase::Resuming(self)
            }
        }
    }

    /// The record read: ours (a write of ours landed), the hold's (continue it), or the end.
    fn on_record(
        mut self,
        cx: &mut Context,
        etag: ETag,
        holder: Holder,
        age: Option<Duration>,
        now: Instant,
    ) -> Phase {
        if let Some(write) = self.s.is_ours(&holder) {
            // A renewal of ours whose reply was lost has landed.
            return self.resumed(cx, etag, write, now);
        }
        let record = match &holder {
            Holder::Sets3lock(r) if r.owner == self.s.owner => r,
            _ => return ended(cx, HoldEnded::TakenOver { holder }),
        };
        if record.cooldown || holder.is_free() {
            return ended(cx, HoldEnded::Released { holder });
        }
        if record.fence.map(|f| f.token) != self.token {
            // The same owner with another token cannot be this hold's record.
            return ended(cx, HoldEnded::TakenOver { holder });
        }
        let (lease, parked) = (record.lease, record.parked);
        if !parked && (lease.is_zero() || cx.cfg.lease.is_zero()) {
            // Whoever runs under a lease-0 hold never renews, so would never learn of us:
            // leave it be. And a lease-0 write of ours over someone's live lease could never
            // be parked, which would leave the hold stuck as in use.
            cx.emit(Event::NotAcquired {
                reason: NotAcquired::InUse { holder, etag },
            });
            return Phase::Idle;
        }
        self.s.adopt_record(cx, record, now);
        // Older than its lease by the store's clock, with a second for the headers' rounding:
        // a waiter may be taking it over now.
        let expired = age.filter(|&a| !lease.is_zero() && a >= lease + Duration::from_secs(1));
        match (self.then, expired) {
            (Resume::Hold, Some(age)) => ended(cx, HoldEnded::Expired { age, lease }),
            (Resume::Hold, None) => {
                self.next.set(now, Step::Renew { etag });
                Phase::Resuming(self)
            }
            (Resume::Release, expired) => {
                // Validity unknown on our clock: treat it as over, so a read after a lost
                // reply never assumes that nobody could have taken over.
                let r = Releasing::start(self.s, etag, Some(now), self.token, now).of_a_handle();
                Phase::Releasing(match expired {
                    Some(_) => r.overdue(),
                    // Parked: nobody runs under it.
                    None if parked => r,
                    // Someone may still be running under it, and learns of this release only
                    // at its next renewal: the lock rests until that process's lease is
                    // surely over (it sent its last write before our read was answered).
                    None => r.resting(cx.cfg.stretch(lease) + Duration::from_millis(1)),
                })
            }
        }
    }

    /// Our write `write` is the object, with this ETag: the hold is ours in this process.
    fn resumed(mut self, cx: &mut Context, etag: ETag, write: Write, now: Instant) -> Phase {
        let valid_until = cx.valid_until(write.sent);
        if valid_until.is_some_and(|v| v <= now) {
            // Confirmed too late to be valid: write again over it.
            self.next.set(now, Step::Renew { etag });
            return Phase::Resuming(self);
        }
        self.s.settle_all();
        cx.emit(Event::Acquired {
            owner: self.s.owner,
            etag: etag.clone(),
            valid_until,
            took_over: None,
            token: self.token,
        });
        Phase::Holding(Holding::start(cx, self.s, etag, write, valid_until, None))
    }
}

fn ended(cx: &mut Context, ended: HoldEnded) -> Phase {
    cx.emit(Event::NotAcquired {
        reason: NotAcquired::Ended { ended },
    });
    Phase::Idle
}
