//! Acquiring: creating the object, observing the holder, taking over a stale lock, and
//! recovering our own writes whose replies were lost.

use super::cleanup::Cleanup;
use super::context::Context;
use super::holding::Holding;
use super::pending::{self, InFlight, Outgoing, Pending};
use super::retry::Tries;
use super::schedule::Schedule;
use super::session::{Session, Write};
use super::Phase;
use crate::{
    ETag, Error, Event, Fence, Holder, Instant, NotAcquired, Purpose, Response, Setback, Wait,
};

/// What an acquisition sends next.
#[derive(Clone, Debug, PartialEq)]
enum Step {
    /// `PUT If-None-Match: *`.
    Create,
    /// `GET`: who holds it, or did a write of ours land?
    Observe,
    /// `PUT If-Match` on this ETag, seen unchanged for a full lease (or our own stale write),
    /// writing this fence (`None`: a presence-mode record).
    Takeover { etag: ETag, fence: Option<Fence> },
    /// Fenced mode: `PUT If-Match` on this `free` record, granting the next token.
    Claim { etag: ETag, fence: Option<Fence> },
}

/// Why an acquisition tries again (see [`Acquiring::retry_or`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pace {
    Progress,
    Setback,
    Conflict,
    Incoherent,
}

/// The lock object as we last saw it while acquiring.
#[derive(Clone, Debug)]
struct Observed {
    etag: ETag,
    holder: Holder,
    /// When we first saw this ETag, on our clock: the start of its lease.
    first_seen: Instant,
    /// Our own write, landed too late to be valid.
    own: bool,
    /// A resting record (`Config::hold_at_least`): when its lease has run out by the store's
    /// clock, if the store told us its age. Readers that have watched nothing use it.
    rests_until: Option<Instant>,
}

/// An acquisition under way.
#[derive(Debug)]
pub(super) struct Acquiring {
    s: Session,
    /// Give up as soon as the lock is found held.
    try_once: bool,
    /// When waiting ends, if ever.
    deadline: Option<Instant>,
    observed: Option<Observed>,
    next: Schedule<Step>,
    polls: u32,
    /// Setbacks (5xx, lost replies) since the endpoint last answered.
    retries: Tries,
    /// Rounds of "absent, create, lost the race" since a holder was last seen.
    rounds: Tries,
    /// 409 conflicts so far.
    conflicts: Tries,
    /// Takeovers refused on the very ETag the store then reported again.
    incoherent: Tries,
    /// The ETag our last takeover was refused on.
    refused: Option<ETag>,
    /// Fenced mode's first request is a read; until its reply, a 403 to it may only mean
    /// that the key is absent and we may not list the bucket (S3 answers 403, not 404, then).
    reading_first: bool,
    last_setback: Option<Box<Setback>>,
}

impl Acquiring {
    /// A new acquisition: presence mode creates the object at once (a free presence-mode
    /// key is absent); fenced mode reads it first (a free fenced key holds a `free` record,
    /// whose ETag the grant needs), and creates it only if it is absent.
    pub(super) fn start(s: Session, wait: Wait, fenced: bool, now: Instant) -> Acquiring {
        Acquiring {
            s,
            try_once: wait.is_try_once(),
            deadline: match wait {
                Wait::Timeout(d) => Some(now + d),
                Wait::No | Wait::Forever => None,
            },
            observed: None,
            next: Schedule::at(now, if fenced { Step::Observe } else { Step::Create }),
            polls: 0,
            retries: Tries::default(),
            rounds: Tries::default(),
            conflicts: Tries::default(),
            incoherent: Tries::default(),
            refused: None,
            last_setback: None,
            reading_first: fenced,
        }
    }

    /// The request due at `now`, if any.
    pub(super) fn poll_send(&mut self, cx: &Context, now: Instant) -> Option<Outgoing> {
        Some(match self.next.take_due(now)? {
            Step::Create => {
                let fence = cx.grant_fence(None);
                let (w, body) = self.s.next_write(&cx.cfg, now, fence);
                Outgoing::create(Purpose::Acquire, w, body)
            }
            Step::Takeover { etag, fence } => {
                let (w, body) = self.s.next_write(&cx.cfg, now, fence);
                Outgoing::replace(Purpose::Takeover, etag, w, body)
            }
            Step::Claim { etag, fence } => {
                let (w, body) = self.s.next_write(&cx.cfg, now, fence);
                Outgoing::replace(Purpose::Acquire, etag, w, body)
            }
            Step::Observe => {
                let if_none_match = self
                    .observed
                    .as_ref()
                    .filter(|_| cx.cfg.conditional_get)
                    .map(|o| o.etag.clone());
                let purpose = if self.s.has_unresolved() {
                    Purpose::Resolve
                } else {
                    Purpose::Observe
                };
                Outgoing::read(purpose, if_none_match)
            }
        })
    }

    /// When to wake: the next step (unless a request is in flight), or the deadline. The
    /// deadline does not fire while a write of ours is in flight: its reply may say we hold
    /// the lock, and giving up then would leave that write to be cleaned up blind.
    pub(super) fn wake_at(&self, in_flight: Option<&Pending>) -> Option<Instant> {
        let next = self.next.when().filter(|_| in_flight.is_none());
        let write_in_flight = in_flight.is_some_and(|p| p.flight.write().is_some());
        let deadline = self.deadline.filter(|_| !write_in_flight);
        super::earliest(next, deadline)
    }

    /// Whether the deadline has passed at `now` (never while a write of ours is in flight).
    pub(super) fn timed_out(&self, now: Instant, write_in_flight: bool) -> bool {
        !write_in_flight && self.deadline.is_some_and(|d| now >= d)
    }

    /// Ends a waiting acquisition at its deadline.
    pub(super) fn time_out(self, cx: &mut Context) -> Phase {
        cx.emit(Event::NotAcquired {
            reason: NotAcquired::TimedOut {
                holder: self.observed.map(|o| o.holder),
            },
        });
        end(self.s, false)
    }

    /// Ends the acquisition at the user's request.
    pub(super) fn cancel(self, cx: &mut Context, write_in_flight: bool) -> Phase {
        cx.emit(Event::Cancelled);
        end(self.s, write_in_flight)
    }

    /// Handles the reply to our request.
    pub(super) fn on_reply(
        mut self,
        cx: &mut Context,
        p: Pending,
        r: Response,
        now: Instant,
    ) -> Phase {
        if !matches!(r, Response::Ambiguous(_) | Response::Conflict { .. }) {
            // The endpoint answered: setbacks so far were not a broken endpoint.
            self.retries.reset();
        }
        let first_read = std::mem::take(&mut self.reading_first);
        match (p.flight, r) {
            (InFlight::Read, Response::Refused(Error::Refused { status: 403, .. }))
                if first_read =>
            {
                // Without s3:ListBucket a missing key reads as 403: create it. If it does
                // exist, the create's 412 sends us back to a read, whose 403 then ends this.
                self.retry_or(cx, Step::Create, now, Pace::Progress)
            }
            (_, Response::Refused(error)) => {
                // A refused write was not applied, but earlier unanswered ones may still land:
                // `end` cleans those up.
                cx.emit(Event::Failed { error });
                end(self.s, false)
            }
            (
                InFlight::Create { write } | InFlight::Replace { write, .. },
                Response::Written { etag },
            ) => {
                let took_over = self
                    .observed
                    .as_ref()
                    .filter(|o| p.purpose == Purpose::Takeover && !o.own)
                    .map(|o| o.holder.clone());
                self.won(cx, etag, write, took_over, now)
            }
            (InFlight::Create { .. }, Response::Exists) => {
                self.next.set(now, Step::Observe);
                Phase::Acquiring(self)
            }
            (InFlight::Replace { etag, .. }, Response::Mismatch) => {
                // Normally the holder renewed: the read will show a new ETag.
                self.refused = Some(etag);
                self.next.set(now, Step::Observe);
                Phase::Acquiring(self)
            }
            (InFlight::Replace { .. } | InFlight::Read, Response::Absent) => {
                self.retry_or(cx, Step::Create, now, Pace::Progress)
            }
            (flight, Response::Conflict { code }) => {
                self.last_setback = Some(Box::new(Setback::Conflict { code }));
                // The same write again: a conflict means it was not applied.
                let step = match flight {
                    InFlight::Replace { etag, write } if p.purpose == Purpose::Takeover => {
                        Step::Takeover {
                            etag,
                            fence: write.fence,
                        }
                    }
                    InFlight::Replace { etag, write } => Step::Claim {
                        etag,
                        fence: write.fence,
                    },
                    _ => Step::Create,
                };
                self.retry_or(cx, step, now, Pace::Conflict)
            }
            (InFlight::Read, Response::Object { etag, body, age }) => {
                self.on_observation(cx, etag, Holder::decode(&body), age, now)
            }
            (InFlight::Read, Response::NotModified) => match self.observed.clone() {
                Some(o) => self.on_observation(cx, o.etag, o.holder, None, now),
                None => self.retry_or(cx, Step::Observe, now, Pace::Setback),
            },
            (flight, r) => {
                // Ambiguous (or a reply that does not fit): a write may have landed, unless
                // it was never sent.
                let landed = pending::may_have_landed(&r);
                if let Response::Ambiguous(why) = r {
                    self.last_setback = Some(Box::new(Setback::Ambiguous(why)));
                }
                if let Some(w) = flight.write().filter(|_| landed) {
                    self.s.remember(w);
                }
                self.retry_or(cx, Step::Observe, now, Pace::Setback)
            }
        }
    }

    /// Schedules `step`, paced by why it is needed, or gives up:
    /// - progress (the object was absent, or our own write expired): at once, then with
    ///   backoff if it keeps happening; a try-once acquisition stops when the lock keeps
    ///   changing hands under it;
    /// - a setback (5xx, lost reply): after a retry pause; past the limit in a row without an
    ///   answer, the endpoint is broken (unreachable, or failing every request);
    /// - a 409 conflict: after a retry pause; a sign of contention on a healthy endpoint, so it
    ///   only bounds try-once acquisitions;
    /// - an incoherent store (it refused `If-Match` on the ETag it reports): after a retry
    ///   pause, and past the limit the acquisition fails rather than spin.
    fn retry_or(mut self, cx: &mut Context, step: Step, now: Instant, pace: Pace) -> Phase {
        let limit = cx.cfg.retry_limit;
        let (attempt, bounded) = match pace {
            Pace::Progress => (self.rounds.count(), self.try_once),
            Pace::Setback => (self.retries.count(), true),
            Pace::Conflict => (self.conflicts.count(), self.try_once),
            Pace::Incoherent => (self.incoherent.count(), true),
        };
        if bounded && attempt > limit {
            let last = self
                .last_setback
                .take()
                .unwrap_or_else(|| Box::new(Setback::LostRace));
            cx.emit(Event::Failed {
                error: Error::GaveUp {
                    attempts: attempt,
                    last,
                },
            });
            return end(self.s, false);
        }
        // Two rounds of progress in a row go at once; more are paced like retries.
        let at_once = if pace == Pace::Progress { 2 } else { 0 };
        self.next.set(cx.retry_at(now, attempt, at_once), step);
        Phase::Acquiring(self)
    }

    fn on_observation(
        mut self,
        cx: &mut Context,
        etag: ETag,
        holder: Holder,
        age: Option<core::time::Duration>,
        now: Instant,
    ) -> Phase {
        cx.saw(holder.fence());
        let fence = cx.grant_fence(holder.fence());
        if self.refused.take().as_ref() == Some(&etag) {
            // Our takeover's If-Match was refused, yet the store still reports that ETag:
            // weak ETags, or a proxy that rewrites them. Retry a few times, then give up.
            self.last_setback = Some(Box::new(Setback::Incoherent { etag: etag.clone() }));
            let step = if holder.is_free() {
                Step::Claim { etag, fence }
            } else {
                Step::Takeover { etag, fence }
            };
            return self.retry_or(cx, step, now, Pace::Incoherent);
        }
        if let Some(write) = self.s.is_ours(&holder) {
            // A write of ours whose reply we did not get has landed.
            return self.won(cx, etag, write, None, now);
        }
        if holder.is_free() {
            // Fenced mode, released: claim it at once (try-once too), paced like a create if
            // the lock keeps changing hands under us.
            return self.retry_or(cx, Step::Claim { etag, fence }, now, Pace::Progress);
        }
        // Someone else holds it: the lock is not slipping through our fingers.
        self.rounds.reset();
        let changed = self.observed.as_ref().is_none_or(|o| o.etag != etag);
        if changed {
            let new_holder = self
                .observed
                .as_ref()
                .is_none_or(|o| !same_holder(&o.holder, &holder));
            let observed = Observed {
                etag: etag.clone(),
                holder: holder.clone(),
                first_seen: now,
                own: false,
                rests_until: rests_until(&holder, age, now),
            };
            let stale_at = stale_at(cx, &observed);
            self.observed = Some(observed);
            if new_holder && !self.try_once {
                cx.emit(Event::Contended {
                    holder: holder.clone(),
                    etag: etag.clone(),
                    stale_at,
                });
            }
        }
        if let Some(o) = self.observed.as_mut().filter(|o| o.rests_until.is_none()) {
            o.rests_until = rests_until(&o.holder, age, now);
        }
        let stale_at = self.observed.as_ref().and_then(|o| stale_at(cx, o));
        if self.try_once && stale_at.is_none_or(|t| t > now) {
            cx.emit(Event::NotAcquired {
                reason: NotAcquired::Busy { holder, etag },
            });
            return end(self.s, false);
        }
        if stale_at.is_some_and(|t| t <= now) {
            self.next.set(now, Step::Takeover { etag, fence });
        } else {
            let mut at = cx.poll_at(now, self.polls);
            self.polls = self.polls.saturating_add(1);
            if let Some(t) = stale_at {
                at = at.min(t);
            }
            if let Some(d) = self.deadline {
                at = at.min(d);
            }
            self.next.set(at, Step::Observe);
        }
        Phase::Acquiring(self)
    }

    /// Our write `write` is the object, with this ETag.
    fn won(
        mut self,
        cx: &mut Context,
        etag: ETag,
        write: Write,
        took_over: Option<Holder>,
        now: Instant,
    ) -> Phase {
        let valid_until = cx.valid_until(write.sent);
        if valid_until.is_some_and(|v| v <= now) {
            // Our write landed, but so long ago that it is no longer valid: replace it. The
            // observation is our own record, so that reading it again leads back here.
            let holder = self.s.own_holder(&cx.cfg, write);
            let fence = cx.grant_fence(holder.fence());
            self.observed = Some(Observed {
                etag: etag.clone(),
                holder,
                first_seen: now,
                own: true,
                rests_until: None,
            });
            return self.retry_or(cx, Step::Takeover { etag, fence }, now, Pace::Progress);
        }
        self.s.settle_all();
        cx.saw(write.fence);
        let token = write.fence.map(|f| f.token);
        cx.emit(Event::Acquired {
            owner: self.s.owner,
            etag: etag.clone(),
            valid_until,
            took_over,
            token,
        });
        Phase::Holding(Holding::start(
            cx,
            self.s,
            etag,
            write,
            valid_until,
            Some(now),
        ))
    }
}

/// The acquisition is over without the lock: clean up writes of ours that may still land
/// (`write_in_flight`: one is on its way now).
fn end(s: Session, write_in_flight: bool) -> Phase {
    if s.has_unresolved() || write_in_flight {
        Phase::Cleanup(Cleanup::after_acquisition(s))
    } else {
        Phase::Idle
    }
}

/// When an unchanged observation becomes stale: a full lease, by the holder's own record
/// (or the configured lease for foreign records), after we first saw that ETag; or, for a
/// resting record, when its lease has run out by the store's clock, if that is sooner.
fn stale_at(cx: &Context, o: &Observed) -> Option<Instant> {
    let lease = o
        .holder
        .assumed_lease(cx.cfg.foreign_lease, cx.cfg.terraform_lease)?;
    let watched = (!lease.is_zero()).then(|| o.first_seen + lease);
    super::earliest(watched, o.rests_until)
}

/// When a resting record read at `now`, `age` old by the store's clock, has rested its lease
/// by that clock: `now + lease + 1 s − age`. The second is the headers' truncation (the true
/// age may be up to a second less than `age`); `now` is after the reply's `Date`, so the
/// store's clock reads at least `age` now. `None` for any other record, or without an age.
fn rests_until(
    holder: &Holder,
    age: Option<core::time::Duration>,
    now: Instant,
) -> Option<Instant> {
    match holder {
        Holder::Sets3lock(r) if r.cooldown && !r.lease.is_zero() => {
            let wait = (r.lease + core::time::Duration::from_secs(1)).saturating_sub(age?);
            Some(now + wait)
        }
        _ => None,
    }
}

/// Whether two observations are the same holder (an ETag change may only be a renewal).
fn same_holder(a: &Holder, b: &Holder) -> bool {
    match (a, b) {
        (Holder::Sets3lock(x), Holder::Sets3lock(y)) => x.owner == y.owner,
        _ => a == b,
    }
}
