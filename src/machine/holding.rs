//! Holding: renewing the lease, and noticing when the lock is lost.

use super::cleanup::Cleanup;
use super::context::Context;
use super::pending::{self, InFlight, Outgoing, Pending};
use super::releasing::Releasing;
use super::retry::Tries;
use super::schedule::Schedule;
use super::session::{Session, Write};
use super::Phase;
use crate::{
    ETag, Event, Fence, Holder, Instant, IntentKind, LockState, LostReason, OwnerId, Purpose,
    Response, Setback,
};

/// What a holder sends next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// `PUT If-Match` on our current ETag, with a new body.
    Renew,
    /// `GET`: did a renewal of ours land, and who holds the lock now?
    Observe,
}

/// A held lock.
#[derive(Debug)]
pub(super) struct Holding {
    s: Session,
    /// The ETag of our last confirmed write: the object as long as we hold the lock.
    etag: ETag,
    /// The end of validity; `None` with a zero lease (never expires).
    valid_until: Option<Instant>,
    /// Fenced mode: this grant's token, written again by every renewal.
    token: Option<u64>,
    next: Schedule<Step>,
    retries: Tries,
    /// The read in flight (or due) follows a retry pause: if it finds our last write still
    /// current, the renewal goes at once. A read sent at once (after a 412) does not: its
    /// renewal waits a retry pause, so that a store that keeps refusing is not hammered.
    paced_read: bool,
    /// When the lock was granted, on our clock (the reply that confirmed the grant): the start
    /// of `hold_at_least`. `None` for a hold adopted from a handle, whose grant was elsewhere.
    granted: Option<Instant>,
}

impl Holding {
    /// The hold that starts with our write `write`, now the object with this ETag.
    pub(super) fn start(
        cx: &Context,
        s: Session,
        etag: ETag,
        write: Write,
        valid_until: Option<Instant>,
        granted: Option<Instant>,
    ) -> Holding {
        let next = if cx.cfg.lease.is_zero() {
            Schedule::none()
        } else {
            Schedule::at(write.sent + cx.cfg.renew_interval(), Step::Renew)
        };
        Holding {
            s,
            etag,
            valid_until,
            token: write.fence.map(|f| f.token),
            next,
            retries: Tries::default(),
            paced_read: false,
            granted,
        }
    }

    pub(super) fn poll_send(&mut self, cx: &Context, now: Instant) -> Option<Outgoing> {
        Some(match self.next.take_due(now)? {
            Step::Renew => {
                // A renewal keeps the grant's token: only a new grant increases it.
                let fence = self.token.map(|token| Fence {
                    state: LockState::Held,
                    token,
                });
                let (w, body) = self.s.next_write(&cx.cfg, now, fence);
                Outgoing::replace(Purpose::Renew, self.etag.clone(), w, body)
            }
            Step::Observe => Outgoing::read(Purpose::Resolve, None),
        })
    }

    /// When to wake: the next step (unless a request is in flight), or the end of validity.
    pub(super) fn wake_at(&self, in_flight: Option<&Pending>) -> Option<Instant> {
        let next = self.next.when().filter(|_| in_flight.is_none());
        super::earliest(next, self.valid_until)
    }

    pub(super) fn is_valid(&self, now: Instant) -> bool {
        self.valid_until.is_none_or(|v| now < v)
    }

    pub(super) fn owner(&self) -> OwnerId {
        self.s.owner
    }

    pub(super) fn etag(&self) -> &ETag {
        &self.etag
    }

    pub(super) fn valid_until(&self) -> Option<Instant> {
        self.valid_until
    }

    pub(super) fn token(&self) -> Option<u64> {
        self.token
    }

    /// The hold's validity ran out: clean up what we may have left behind.
    pub(super) fn expire(self, cx: &mut Context) -> Phase {
        cx.emit(Event::Expired);
        Phase::Cleanup(Cleanup::after_expiry(self.s, self.etag, self.token))
    }

    /// The user releases the lock. A pending renewal or read is answered first; then the
    /// release (a delete, or fenced, a `free` record) goes out with the ETag current by then.
    /// Under `hold_at_least`, a release sooner than that after the grant writes a resting
    /// record instead, whose lease runs until then (see [`Holding::rest`]).
    pub(super) fn release(self, cx: &Context, now: Instant) -> Phase {
        let rest = self.rest(cx, now);
        let mut r = Releasing::start(self.s, self.etag, self.valid_until, self.token, now);
        if let Some(rest) = rest {
            r = r.resting(rest);
        }
        Phase::Releasing(r)
    }

    /// How long a release at `now` must leave the lock resting: `hold_at_least`, stretched by
    /// the drift bound, less the time held so far on our clock (rounded up to the record's
    /// milliseconds); `None` when that is nothing.
    ///
    /// Why that is enough: the grant landed at or before `granted`; the resting record lands
    /// after `now`. A waiter takes over only a full resting lease after it saw that record,
    /// on its own clock, which runs at most ρ fast. So the next grant comes at least
    /// `rest × (1 − ρ) + (now − granted) × (1 − ρ)` after ours in real time, which with
    /// `rest = D × (1 + ρ) / (1 − ρ) − (now − granted)` is at least `D`.
    ///
    /// A hold adopted over a record that was not parked rests too, for as long as the process
    /// that wrote it may still be running under it ([`Session::others_may_run`]), stretched
    /// again for the waiters' clocks: that process learns of our release only at its next
    /// renewal, and until then nobody else may get in.
    fn rest(&self, cx: &Context, now: Instant) -> Option<core::time::Duration> {
        let others = self
            .s
            .others_may_run(now)
            .map(|left| cx.cfg.stretch(left) + core::time::Duration::from_millis(1));
        let hold = cx.cfg.hold_at_least;
        let period = self
            .granted
            .filter(|_| !hold.is_zero() && !cx.cfg.lease.is_zero());
        let period = period.and_then(|granted| {
            let held = now.saturating_duration_since(granted);
            let rest = cx.cfg.stretch(hold).checked_sub(held)?;
            (!rest.is_zero()).then(|| rest + core::time::Duration::from_millis(1))
        });
        others.max(period)
    }

    /// The hold is let go of without a release ([`Lock::detach`](crate::Lock::detach)):
    /// `Some` with a release that parks the record (so a release from the handle may delete
    /// it at once), or `None` when it must stay as it is because another process may still
    /// be running under the hold (a release from the handle then rests the lock).
    pub(super) fn park(self, now: Instant) -> Option<Phase> {
        if self.s.others_may_run(now).is_some() {
            return None;
        }
        let r = Releasing::start(self.s, self.etag, self.valid_until, self.token, now);
        Some(Phase::Releasing(r.parking()))
    }

    pub(super) fn on_reply(
        mut self,
        cx: &mut Context,
        p: Pending,
        r: Response,
        now: Instant,
    ) -> Phase {
        match (p.flight, r) {
            (InFlight::Replace { write, .. }, Response::Written { etag }) => {
                self.confirm(cx, etag, write.sent, write.seq);
            }
            (InFlight::Replace { .. }, Response::Absent) if self.s.has_unresolved() => {
                self.paced_read = false;
                self.next.set(now, Step::Observe);
            }
            (InFlight::Replace { .. }, Response::Mismatch) => {
                // Read before concluding: a write of ours may have landed late, and some
                // servers (SeaweedFS) say 412 for a deleted object too. The read tells which,
                // and who holds it now.
                self.paced_read = false;
                self.next.set(now, Step::Observe);
            }
            (InFlight::Replace { .. }, Response::Absent) => return lose(cx, LostReason::Deleted),
            (InFlight::Replace { write, .. }, r) => {
                let setback = pending::setback(r, IntentKind::PutIfMatch);
                let step = if matches!(&setback, Setback::Ambiguous(a) if a.may_have_landed()) {
                    // The renewal may have landed: find out before writing again.
                    self.s.remember(write);
                    Step::Observe
                } else {
                    Step::Renew
                };
                cx.emit(Event::RenewalDelayed { setback });
                let at = self.retry_at(cx, now);
                self.paced_read = true;
                self.next.set(at, step);
            }
            (InFlight::Read, Response::Object { etag, body, .. }) => {
                let holder = Holder::decode(&body);
                match self.s.is_ours(&holder) {
                    Some(_) if etag == self.etag => {
                        // Our last confirmed write is still there: the renewal did not land.
                        // After a retry pause, the store has just answered: renew at once.
                        // After a 412 read at once, pause first.
                        let at = if std::mem::take(&mut self.paced_read) {
                            now
                        } else {
                            self.retry_at(cx, now)
                        };
                        self.next.set(at, Step::Renew);
                    }
                    Some(write) => self.confirm(cx, etag, write.sent, write.seq),
                    None => {
                        return lose(
                            cx,
                            LostReason::Overwritten {
                                holder: Some(holder),
                            },
                        )
                    }
                }
            }
            (InFlight::Read, Response::Absent) => return lose(cx, LostReason::Deleted),
            (_, _) => {
                let at = self.retry_at(cx, now);
                self.paced_read = true;
                self.next.set(at, Step::Observe);
            }
        }
        Phase::Holding(self)
    }

    /// Our write `seq`, sent at `sent`, is the object with this ETag.
    fn confirm(&mut self, cx: &mut Context, etag: ETag, sent: Instant, seq: u64) {
        self.etag = etag.clone();
        self.retries.reset();
        self.s.settle_through(seq);
        if let Some(valid) = cx.valid_until(sent) {
            // A late confirmation of an older write never shortens validity.
            self.valid_until = Some(self.valid_until.map_or(valid, |v| v.max(valid)));
            self.next.set(sent + cx.cfg.renew_interval(), Step::Renew);
        }
        cx.emit(Event::Renewed {
            etag,
            valid_until: self.valid_until,
        });
    }

    /// A retry pause that never runs past the moment the lock's user stops relying on the
    /// hold (`stop_before` ahead of the end of validity) less a lead for the try to be
    /// answered (a tenth of a renewal interval, at least a retry floor); within that lead, no
    /// longer than half of what is left before that moment (at least a retry floor); past
    /// it, never past the end of validity.
    fn retry_at(&mut self, cx: &mut Context, now: Instant) -> Instant {
        let attempt = self.retries.count();
        let at = cx.retry_at(now, attempt, 0);
        let Some(valid) = self.valid_until else {
            return at;
        };
        let floor = cx.cfg.retry.floor;
        let lead = (cx.cfg.renew_interval() / 10).max(floor);
        let to_stop = valid
            .saturating_duration_since(now)
            .saturating_sub(cx.cfg.stop_before);
        match to_stop.checked_sub(lead) {
            Some(before_lead) if !before_lead.is_zero() => at.min(now + before_lead),
            _ if !to_stop.is_zero() => at.min(now + (to_stop / 2).max(floor)),
            _ => at.min(valid),
        }
    }
}

fn lose(cx: &mut Context, reason: LostReason) -> Phase {
    cx.emit(Event::Lost { reason });
    Phase::Idle
}
