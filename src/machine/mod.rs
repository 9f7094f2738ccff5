//! The lock state machine: the [`Lock`] API and the skeleton that routes inputs to the
//! current phase.
//!
//! One acquisition at a time; one request in flight at a time. Inputs carry `now`; outputs
//! are polled. Each phase lives in its own file with its data, its reply handling and the
//! requests it builds: `acquiring`, `holding`, `releasing`, `cleanup`. The protocol is
//! described in `docs/PROTOCOL.md`.

mod acquiring;
mod cleanup;
mod context;
mod holding;
mod inspect;
pub use inspect::MIN_HOLD_REQUEST_WAIT;
mod pending;
mod releasing;
mod resuming;
mod retry;
mod schedule;
mod session;

use crate::rng::Rng;
use crate::{
    Ambiguity, Config, ConfigError, Event, Holder, Instant, OwnerId, Request, RequestId, Response,
    Wait,
};
use acquiring::Acquiring;
use cleanup::Cleanup;
use context::Context;
use holding::Holding;
use pending::{InFlight, Outgoing, Pending};
use releasing::Releasing;
pub use resuming::Resume;
use resuming::Resuming;
use session::Session;
use std::collections::VecDeque;

/// A command that does not fit the lock's current state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// `acquire` while an acquisition, hold, release or cleanup is under way.
    #[error(
        "the lock is busy with a previous acquisition, hold or release; wait until it is idle"
    )]
    Busy,
    /// `release` while nothing is held or being acquired.
    #[error("the lock is not held or being acquired")]
    NotHeld,
}

/// Where the lock stands. Each phase owns its data; a reply or a timeout moves the machine
/// from one phase to the next.
#[derive(Debug)]
// One `Phase` per `Lock`, moved on every transition: boxing the larger phases would add an
// allocation per acquisition and save nothing that matters.
#[allow(clippy::large_enum_variant)]
enum Phase {
    Idle,
    Acquiring(Acquiring),
    Holding(Holding),
    Releasing(Releasing),
    Cleanup(Cleanup),
    Resuming(Resuming),
}

#[doc = include_str!("lock.md")]
#[derive(Debug)]
pub struct Lock {
    cx: Context,
    next_id: u64,
    now: Instant,
    pending: Option<Pending>,
    outbox: Option<Request>,
    phase: Phase,
}

impl Lock {
    /// A lock with these settings. `seed` must come from a good random source (the driver's
    /// operating system): owner ids are drawn from it, and two processes with the same seed
    /// would share them.
    ///
    /// ```
    /// # use sets3lock_proto::{Config, Lock};
    /// let lock = Lock::new(Config::default(), [7; 32]).unwrap();
    /// assert!(lock.is_idle());
    /// ```
    pub fn new(config: Config, seed: [u8; 32]) -> Result<Lock, ConfigError> {
        config.validate()?;
        Ok(Lock {
            cx: Context {
                cfg: config,
                rng: Rng::from_seed(seed),
                events: VecDeque::new(),
                seen_token: None,
            },
            next_id: 0,
            now: Instant::ZERO,
            pending: None,
            outbox: None,
            phase: Phase::Idle,
        })
    }

    /// The settings, for a driver that needs them (for example to bound a request's timeout
    /// by the renewal interval).
    ///
    /// ```
    /// # use sets3lock_proto::{Config, Lock};
    /// let lock = Lock::new(Config::default(), [7; 32]).unwrap();
    /// let request_timeout = lock.config().renew_interval() / 2;
    /// assert_eq!(request_timeout.as_secs(), 10);
    /// ```
    pub fn config(&self) -> &Config {
        &self.cx.cfg
    }

    // ---- user commands -------------------------------------------------------------------

    /// Starts acquiring the lock. `unix_ms` is the wall-clock time, for the record only (people
    /// read it; the protocol never trusts it).
    ///
    /// Fails with [`CommandError::Busy`] unless [`is_idle`](Lock::is_idle).
    ///
    /// ```
    /// # use sets3lock_proto::{Config, Instant, Intent, Lock, Wait};
    /// let mut lock = Lock::new(Config::default(), [7; 32]).unwrap();
    /// lock.acquire(Instant::ZERO, 0, Wait::No).unwrap();
    /// let req = lock.poll_request().unwrap();
    /// assert!(matches!(req.intent, Intent::PutIfNoneMatch { .. }));
    /// assert!(lock.acquire(Instant::ZERO, 0, Wait::No).is_err());
    /// ```
    pub fn acquire(&mut self, now: Instant, unix_ms: u64, wait: Wait) -> Result<(), CommandError> {
        let now = self.clock(now);
        self.expire(now);
        if !self.is_idle() {
            self.drive(now);
            return Err(CommandError::Busy);
        }
        let random = self.cx.rng.next_u128();
        // Terraform's lock ID is this owner written as a UUID: make it a version-4 one.
        let owner = match self.cx.cfg.terraform {
            Some(_) => crate::terraform::uuid_owner(random),
            None => OwnerId::from_u128(random),
        };
        let session = Session::new(owner, now, unix_ms);
        let fenced = self.cx.cfg.fenced;
        self.phase = Phase::Acquiring(Acquiring::start(session, wait, fenced, now));
        self.drive(now);
        Ok(())
    }

    /// Releases the lock, or cancels an acquisition under way.
    ///
    /// From the moment of the call the lock is no longer [held](Lock::is_held). A release ends
    /// with [`Event::Released`] (or [`Event::Failed`]); a cancellation emits
    /// [`Event::Cancelled`] at once and then removes any write of ours that lands.
    ///
    /// ```
    /// # use sets3lock_proto::{Config, Event, Instant, Lock, Wait};
    /// let mut lock = Lock::new(Config::default(), [7; 32]).unwrap();
    /// assert!(lock.release(Instant::ZERO).is_err());
    /// lock.acquire(Instant::ZERO, 0, Wait::Forever).unwrap();
    /// lock.release(Instant::ZERO).unwrap();
    /// assert_eq!(lock.poll_event(), Some(Event::Cancelled));
    /// ```
    pub fn release(&mut self, now: Instant) -> Result<(), CommandError> {
        let now = self.clock(now);
        // A hold whose validity ran out is reported as expired, not released.
        self.expire(now);
        let result = match std::mem::replace(&mut self.phase, Phase::Idle) {
            Phase::Holding(h) => {
                self.phase = h.release(&self.cx, now);
                Ok(())
            }
            Phase::Acquiring(a) => {
                self.forget_pending_read();
                let write_in_flight = self.pending.is_some();
                self.phase = a.cancel(&mut self.cx, write_in_flight);
                Ok(())
            }
            Phase::Resuming(_) => {
                // Nothing of ours to clean up: a renewal of the hold that lands late only
                // renews it, and the hold stays where the handle left it.
                self.pending = None;
                self.outbox = None;
                self.cx.emit(Event::Cancelled);
                Ok(())
            }
            other => {
                self.phase = other;
                Err(CommandError::NotHeld)
            }
        };
        // Expiry may just have scheduled a cleanup.
        self.drive(now);
        result
    }

    /// Continues the hold that `handle` names, in a process that did not acquire it: reads
    /// the record, and if it is still the hold's and live, either renews it and holds it
    /// ([`Resume::Hold`]: [`Event::Acquired`] once our renewal lands, then renewed like any
    /// hold) or releases it ([`Resume::Release`]: [`Event::Released`]). A hold that has ended
    /// (taken over, deleted, released, or older than its lease by the store's clock) ends the
    /// call with [`NotAcquired::Ended`](crate::NotAcquired::Ended) and nothing written (a
    /// release of an expired hold still removes it, and says
    /// [`ReleaseOutcome::Overdue`](crate::ReleaseOutcome::Overdue)). A hold with lease 0
    /// whose record is not parked may have a process running under it that would never learn
    /// of us (it never renews): both kinds of resumption end with
    /// [`NotAcquired::InUse`](crate::NotAcquired::InUse) and nothing written.
    ///
    /// Our writes carry a writer id of our own (from the seed), so if two processes continue
    /// one hold at once, the last to resume keeps it and the other learns at its next renewal
    /// that it lost it. The settings' lease is the one renewals write (usually the handle's).
    /// Fails with [`CommandError::Busy`] unless [`is_idle`](Lock::is_idle).
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use sets3lock_proto::{Config, Handle, Instant, Intent, Lock, OwnerId, Resume};
    /// let handle: Handle = "s3://locks/k#sets3lock-hold:owner=0000000000000000000000000000002a,lease_ms=60000"
    ///     .parse().unwrap();
    /// let mut lock = Lock::new(Config::default(), [7; 32]).unwrap();
    /// lock.adopt(Instant::ZERO, 0, &handle, Resume::Hold).unwrap();
    /// let req = lock.poll_request().unwrap();
    /// assert!(matches!(req.intent, Intent::Get { .. }));
    /// ```
    pub fn adopt(
        &mut self,
        now: Instant,
        unix_ms: u64,
        handle: &crate::Handle,
        then: Resume,
    ) -> Result<(), CommandError> {
        let now = self.clock(now);
        self.expire(now);
        if !self.is_idle() {
            self.drive(now);
            return Err(CommandError::Busy);
        }
        let writer = self.cx.rng.next_u64();
        let session = Session::adopted(handle.owner, writer, now, unix_ms);
        self.phase = Phase::Resuming(Resuming::start(session, handle.token, then, now));
        self.drive(now);
        Ok(())
    }

    /// Lets go of the current hold without releasing it: the lock object stays, with its
    /// lease running and nobody renewing it, and the returned [`Handle`](crate::Handle)
    /// names it for whoever continues it ([`Lock::adopt`]).
    ///
    /// The record is then rewritten once, conditionally, as *parked*
    /// ([`Record::parked`](crate::Record::parked): nobody runs under it), which ends with
    /// [`Event::Released`] and [`ReleaseOutcome::Parked`](crate::ReleaseOutcome::Parked) (or
    /// what the write found instead). A release from the handle deletes a parked record at
    /// once, and leaves any other resting until its writer's lease is surely over. The one
    /// exception: a hold adopted over a record that was not parked, while its writer may still
    /// be running, is let go of as it stands (idle at once, nothing written), since we cannot
    /// vouch for that process.
    ///
    /// Fails with [`CommandError::NotHeld`] unless the lock is [held](Lock::is_held).
    ///
    /// ```
    /// # use sets3lock_proto::{Config, ETag, Event, Instant, Lock, ReleaseOutcome, Response, Wait};
    /// let mut lock = Lock::new(Config::default(), [7; 32]).unwrap();
    /// lock.acquire(Instant::ZERO, 0, Wait::No).unwrap();
    /// let req = lock.poll_request().unwrap();
    /// lock.handle_response(req.id, Response::Written { etag: ETag::parse("e1").unwrap() }, Instant::ZERO);
    /// let handle = lock.detach(Instant::ZERO, "s3://locks/k".parse().unwrap()).unwrap();
    /// assert!(handle.to_string().starts_with("s3://locks/k#sets3lock-hold:owner="));
    /// let park = lock.poll_request().unwrap(); // PUT If-Match: e1, of the parked record
    /// lock.handle_response(park.id, Response::Written { etag: ETag::parse("e2").unwrap() }, Instant::ZERO);
    /// let last = std::iter::from_fn(|| lock.poll_event()).last();
    /// assert_eq!(last, Some(Event::Released { outcome: ReleaseOutcome::Parked }));
    /// assert!(lock.is_idle());
    /// ```
    pub fn detach(
        &mut self,
        now: Instant,
        url: crate::LockUrl,
    ) -> Result<crate::Handle, CommandError> {
        let now = self.clock(now);
        self.expire(now);
        match std::mem::replace(&mut self.phase, Phase::Idle) {
            Phase::Holding(h) if h.is_valid(now) => {
                let handle = crate::Handle {
                    url,
                    owner: h.owner(),
                    lease: self.cx.cfg.lease,
                    token: h.token(),
                };
                // A renewal in flight is answered first, as before a release.
                match h.park(now) {
                    Some(parking) => self.phase = parking,
                    None => {
                        self.pending = None;
                        self.outbox = None;
                    }
                }
                self.drive(now);
                Ok(handle)
            }
            other => {
                self.phase = other;
                self.drive(now);
                Err(CommandError::NotHeld)
            }
        }
    }

    // ---- inputs ----------------------------------------------------------------------------

    /// Feeds the reply to request `id`. Replies to requests the core no longer waits for are
    /// ignored.
    ///
    /// ```
    /// # use sets3lock_proto::{Config, Event, ETag, Instant, Lock, Response, Wait};
    /// let mut lock = Lock::new(Config::default(), [7; 32]).unwrap();
    /// lock.acquire(Instant::ZERO, 0, Wait::No).unwrap();
    /// let req = lock.poll_request().unwrap();
    /// lock.handle_response(req.id, Response::Written { etag: ETag::parse("e1").unwrap() }, Instant::ZERO);
    /// assert!(matches!(lock.poll_event(), Some(Event::Acquired { .. })));
    /// ```
    pub fn handle_response(&mut self, id: RequestId, response: Response, now: Instant) {
        let now = self.clock(now);
        // Every record read on the key counts towards the highest token seen, even one that
        // answers a request given up on: a later grant never writes a token at or below it.
        if let Response::Object { body, .. } = &response {
            self.cx.saw(Holder::decode(body).fence());
        }
        if self.pending.as_ref().map(|p| p.id) != Some(id) {
            return;
        }
        self.expire(now);
        // Expiry may have made the pending read moot.
        if let Some(p) = self.pending.take() {
            if self.outbox.as_ref().map(|r| r.id) == Some(id) {
                self.outbox = None;
            }
            let response = fit(&p.flight, response);
            let cx = &mut self.cx;
            self.phase = match std::mem::replace(&mut self.phase, Phase::Idle) {
                Phase::Idle => Phase::Idle,
                Phase::Acquiring(a) => a.on_reply(cx, p, response, now),
                Phase::Holding(h) => h.on_reply(cx, p, response, now),
                Phase::Releasing(r) => r.on_reply(cx, p, response, now),
                Phase::Cleanup(c) => c.on_reply(cx, p, response, now),
                Phase::Resuming(r) => r.on_reply(cx, p, response, now),
            };
        }
        self.drive(now);
    }

    /// Tells the core that time has passed; call it when [`poll_timeout`](Lock::poll_timeout)
    /// is reached (calling it early or often is harmless).
    ///
    /// ```
    /// # use sets3lock_proto::{Config, Instant, Lock};
    /// let mut lock = Lock::new(Config::default(), [7; 32]).unwrap();
    /// lock.handle_timeout(Instant::ZERO);
    /// assert!(lock.poll_request().is_none());
    /// ```
    pub fn handle_timeout(&mut self, now: Instant) {
        let now = self.clock(now);
        self.expire(now);
        self.drive(now);
    }

    // ---- outputs ---------------------------------------------------------------------------

    /// The next request to send, if any. Each request is handed out once.
    ///
    /// ```
    /// # use sets3lock_proto::{Config, Instant, Lock, Wait};
    /// let mut lock = Lock::new(Config::default(), [7; 32]).unwrap();
    /// lock.acquire(Instant::ZERO, 0, Wait::No).unwrap();
    /// assert!(lock.poll_request().is_some());
    /// assert!(lock.poll_request().is_none());
    /// ```
    #[must_use]
    pub fn poll_request(&mut self) -> Option<Request> {
        self.outbox.take()
    }

    /// The next event for the user, if any.
    ///
    /// ```
    /// # use sets3lock_proto::{Config, Lock};
    /// let mut lock = Lock::new(Config::default(), [7; 32]).unwrap();
    /// assert_eq!(lock.poll_event(), None);
    /// ```
    #[must_use]
    pub fn poll_event(&mut self) -> Option<Event> {
        self.cx.events.pop_front()
    }

    /// When to call [`handle_timeout`](Lock::handle_timeout) next, if anything is scheduled.
    ///
    /// ```
    /// # use sets3lock_proto::{Config, Instant, Lock};
    /// let lock = Lock::new(Config::default(), [7; 32]).unwrap();
    /// assert_eq!(lock.poll_timeout(), None);
    /// ```
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        let in_flight = self.pending.as_ref();
        match &self.phase {
            Phase::Idle => None,
            Phase::Acquiring(a) => a.wake_at(in_flight),
            Phase::Holding(h) => h.wake_at(in_flight),
            Phase::Releasing(r) => r.wake_at(in_flight),
            Phase::Cleanup(c) => c.wake_at(in_flight),
            Phase::Resuming(r) => r.wake_at(in_flight),
        }
    }

    // ---- time and sending ------------------------------------------------------------------

    /// Time never goes backwards inside the core, whatever the driver passes.
    fn clock(&mut self, now: Instant) -> Instant {
        self.now = self.now.max(now);
        self.now
    }

    /// Ends what has run out of time. Sends nothing.
    fn expire(&mut self, now: Instant) {
        let write_in_flight = self
            .pending
            .as_ref()
            .is_some_and(|p| p.flight.write().is_some());
        self.phase = match std::mem::replace(&mut self.phase, Phase::Idle) {
            Phase::Holding(h) if !h.is_valid(now) => {
                // A read in flight was for the hold; a renewal in flight may still land and is
                // answered to the cleanup.
                self.forget_pending_read();
                h.expire(&mut self.cx)
            }
            Phase::Acquiring(a) if a.timed_out(now, write_in_flight) => {
                self.forget_pending_read();
                a.time_out(&mut self.cx)
            }
            other => other,
        };
    }

    /// Sends the current phase's next request if it is due and nothing is in flight.
    fn drive(&mut self, now: Instant) {
        if self.pending.is_some() {
            return;
        }
        let cx = &self.cx;
        let outgoing = match &mut self.phase {
            Phase::Idle => None,
            Phase::Acquiring(a) => a.poll_send(cx, now),
            Phase::Holding(h) => h.poll_send(cx, now),
            Phase::Releasing(r) => r.poll_send(cx, now),
            Phase::Resuming(r) => r.poll_send(cx, now),
            Phase::Cleanup(c) => {
                let outgoing = c.poll_send(cx, now);
                if outgoing.is_none() && c.is_done() {
                    self.phase = Phase::Idle;
                }
                outgoing
            }
        };
        if let Some(outgoing) = outgoing {
            self.send(outgoing);
        }
    }

    fn send(&mut self, outgoing: Outgoing) {
        self.next_id += 1;
        let (request, pending) = outgoing.with_id(RequestId::from_u64(self.next_id));
        self.pending = Some(pending);
        self.outbox = Some(request);
    }

    /// Drops a read in flight whose answer no longer matters (its reply will be ignored).
    fn forget_pending_read(&mut self) {
        if self
            .pending
            .as_ref()
            .is_some_and(|p| matches!(p.flight, InFlight::Read))
        {
            self.pending = None;
            self.outbox = None;
        }
    }
}

/// A reply that does not fit its request (see [`Response::fits`]) is read as "outcome
/// unknown": the safe reading.
fn fit(flight: &InFlight, r: Response) -> Response {
    let kind = flight.kind();
    if r.fits(kind) {
        r
    } else {
        Response::Ambiguous(Ambiguity::Unexpected {
            reply: r.name(),
            request: kind,
        })
    }
}

/// The earlier of two optional instants.
fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}
