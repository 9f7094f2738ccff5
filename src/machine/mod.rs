//! The lock state machine.
//!
//! One acquisition at a time; one request in flight at a time. Inputs carry `now`; outputs
//! are polled. See DESIGN.md §3 for the protocol this implements.
//!
//! This file holds the types, the public API, time and request sending; what each phase
//! does with a reply is in `acquiring`, `held`, `releasing` and `cleanup`.

mod acquiring;
mod cleanup;
mod held;
mod releasing;

use crate::rng::Rng;
use crate::{
    Ambiguity, Config, ConfigError, ETag, Error, Event, Holder, Instant, Intent, IntentKind,
    LostReason, NotAcquired, OwnerId, Purpose, Record, ReleaseOutcome, Request, RequestId,
    Response, Setback, Wait,
};
use bytes::Bytes;
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

/// A write of ours whose outcome we may not know yet.
#[derive(Clone, Copy, Debug)]
struct Write {
    seq: u64,
    sent: Instant,
}

/// The identity and write history of one acquisition.
#[derive(Clone, Debug)]
struct Session {
    owner: OwnerId,
    /// The last sequence number used.
    seq: u64,
    started: Instant,
    started_unix_ms: u64,
    /// Writes that got no definite answer: they may still land.
    unresolved: Vec<Write>,
}

/// The most unresolved writes remembered; beyond that the oldest are forgotten, and a write
/// of ours found later is conservatively dated from the start of the acquisition.
const MAX_UNRESOLVED: usize = 32;

impl Session {
    fn sent_of(&self, seq: u64) -> Instant {
        self.unresolved
            .iter()
            .find(|w| w.seq == seq)
            .map_or(self.started, |w| w.sent)
    }

    fn remember(&mut self, w: Write) {
        if self.unresolved.len() == MAX_UNRESOLVED {
            self.unresolved.remove(0);
        }
        self.unresolved.push(w);
    }

    /// The next write of this session: a new sequence number, so a new body (and a new ETag).
    fn next_write(&mut self, cfg: &Config, now: Instant) -> (Write, Bytes) {
        self.seq += 1;
        let elapsed = now.saturating_duration_since(self.started).as_millis();
        let record = Record {
            owner: self.owner,
            seq: self.seq,
            lease: cfg.lease,
            host: cfg.host.clone(),
            pid: cfg.pid,
            acquired_unix_ms: self.started_unix_ms,
            written_unix_ms: self
                .started_unix_ms
                .saturating_add(u64::try_from(elapsed).unwrap_or(u64::MAX)),
        };
        let write = Write {
            seq: self.seq,
            sent: now,
        };
        (write, record.encode())
    }

    fn is_ours(&self, holder: &Holder) -> Option<u64> {
        match holder {
            Holder::Sets3lock(r) if r.owner == self.owner => Some(r.seq),
            _ => None,
        }
    }
}

/// The request awaiting its reply.
#[derive(Clone, Debug)]
struct Pending {
    id: RequestId,
    kind: IntentKind,
    purpose: Purpose,
    write: Option<Write>,
    /// The ETag a conditional request named.
    etag: Option<ETag>,
}

/// What to send next.
#[derive(Clone, Debug, PartialEq)]
enum Action {
    Create,
    Observe,
    Takeover,
    Renew,
    Release,
    Delete(ETag),
}

type Next = Option<(Instant, Action)>;

/// Why an acquisition tries again (see `retry_or`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pace {
    Progress,
    Setback,
    Conflict,
    Incoherent,
}

#[derive(Clone, Debug)]
struct Observed {
    etag: ETag,
    holder: Holder,
    first_seen: Instant,
    /// Our own write, landed too late to be valid.
    own: bool,
}

#[derive(Debug)]
struct Acquiring {
    s: Session,
    /// Give up as soon as the lock is found held.
    try_once: bool,
    /// When waiting ends, if ever.
    deadline: Option<Instant>,
    observed: Option<Observed>,
    next: Next,
    polls: u32,
    /// Setbacks (5xx, lost replies) since the endpoint last answered.
    retries: u32,
    /// Rounds of "absent, create, lost the race" since a holder was last seen.
    rounds: u32,
    /// 409 conflicts so far.
    conflicts: u32,
    /// Takeovers refused on the very ETag the store then reported again.
    incoherent: u32,
    /// The ETag our last takeover was refused on.
    refused: Option<ETag>,
    last_setback: Option<Box<Setback>>,
}

#[derive(Debug)]
struct Held {
    s: Session,
    etag: ETag,
    valid_until: Option<Instant>,
    next: Next,
    retries: u32,
}

#[derive(Debug)]
struct Releasing {
    s: Session,
    etag: ETag,
    valid_until: Option<Instant>,
    /// A delete may have been applied without our hearing of it.
    delete_unconfirmed: bool,
    next: Next,
    retries: u32,
}

#[derive(Debug)]
struct Cleanup {
    owner: OwnerId,
    etags: Vec<ETag>,
    resolve: bool,
    next: Next,
    retries: u32,
}

#[derive(Debug)]
enum Phase {
    Idle,
    Acquiring(Acquiring),
    Held(Held),
    Releasing(Releasing),
    Cleanup(Cleanup),
}

/// The lock protocol for one S3 object, as a sans-IO state machine.
///
/// It never performs I/O and never reads a clock: the driver pushes user commands
/// ([`acquire`](Lock::acquire), [`release`](Lock::release)), replies
/// ([`handle_response`](Lock::handle_response)) and the passage of time
/// ([`handle_timeout`](Lock::handle_timeout)), and pulls what to send
/// ([`poll_request`](Lock::poll_request)), what to tell the user
/// ([`poll_event`](Lock::poll_event)) and when to wake it next
/// ([`poll_timeout`](Lock::poll_timeout)).
///
/// # A driver loop
///
/// A complete, if synchronous, driver against an in-process fake of S3. A real driver sends
/// each request over HTTP, passes the reply through [`classify`](crate::classify), and sleeps
/// until `poll_timeout()` when there is nothing to send.
///
/// ```
/// use core::time::Duration;
/// use sets3lock::{Config, Event, Instant, Intent, Lock, Response, Wait};
///
/// // A stand-in for S3: one object, ETags from a counter, exact conditional semantics.
/// struct Fake { object: Option<(String, bytes::Bytes)>, n: u32 }
/// impl Fake {
///     fn send(&mut self, intent: &Intent) -> Response {
///         let etag = |s: &str| sets3lock::ETag::parse(s).unwrap();
///         match intent {
///             Intent::PutIfNoneMatch { body } => {
///                 if self.object.is_some() { return Response::Exists; }
///                 self.n += 1;
///                 self.object = Some((self.n.to_string(), body.clone()));
///                 Response::Written { etag: etag(&self.n.to_string()) }
///             }
///             Intent::PutIfMatch { etag: want, body } => match &self.object {
///                 None => Response::Absent,
///                 Some((e, _)) if e != want.as_str() => Response::Mismatch,
///                 Some(_) => {
///                     self.n += 1;
///                     self.object = Some((self.n.to_string(), body.clone()));
///                     Response::Written { etag: etag(&self.n.to_string()) }
///                 }
///             },
///             Intent::DeleteIfMatch { etag: want } => match &self.object {
///                 None => Response::Absent,
///                 Some((e, _)) if e != want.as_str() => Response::Mismatch,
///                 Some(_) => { self.object = None; Response::Deleted }
///             },
///             Intent::Get { .. } => match &self.object {
///                 None => Response::Absent,
///                 Some((e, b)) => Response::Object { etag: etag(e), body: b.clone() },
///             },
///         }
///     }
/// }
///
/// let mut s3 = Fake { object: None, n: 0 };
/// let mut lock = Lock::new(Config::default(), [42; 32]).unwrap();
/// let mut now = Instant::ZERO;
/// let mut events = Vec::new();
///
/// lock.acquire(now, 1_764_500_000_000, Wait::Forever).unwrap();
/// // Run for 100 seconds of (virtual) time; the lease is 60 s, so it must renew.
/// while now < Instant::ZERO + Duration::from_secs(100) {
///     while let Some(req) = lock.poll_request() {
///         let reply = s3.send(&req.intent);
///         lock.handle_response(req.id, reply, now);
///     }
///     while let Some(ev) = lock.poll_event() { events.push(ev); }
///     // Sleep until the core wants to be woken (here: jump the virtual clock).
///     match lock.poll_timeout() {
///         Some(t) => { now = now.max(t); lock.handle_timeout(now); }
///         None => break,
///     }
/// }
/// assert!(matches!(events[0], Event::Acquired { .. }));
/// assert!(events.iter().any(|e| matches!(e, Event::Renewed { .. })));
/// assert!(lock.is_held(now));
///
/// lock.release(now).unwrap();
/// while let Some(req) = lock.poll_request() {
///     let reply = s3.send(&req.intent);
///     lock.handle_response(req.id, reply, now);
/// }
/// let last = std::iter::from_fn(|| lock.poll_event()).last();
/// assert_eq!(last, Some(Event::Released { outcome: sets3lock::ReleaseOutcome::Deleted }));
/// assert!(s3.object.is_none());
/// ```
#[derive(Debug)]
pub struct Lock {
    cfg: Config,
    rng: Rng,
    next_id: u64,
    now: Instant,
    pending: Option<Pending>,
    outbox: Option<Request>,
    events: VecDeque<Event>,
    phase: Phase,
}

impl Lock {
    /// A lock with these settings. `seed` must come from a good random source (the driver's
    /// operating system): owner ids are drawn from it, and two processes with the same seed
    /// would share them.
    ///
    /// ```
    /// # use sets3lock::{Config, Lock};
    /// let lock = Lock::new(Config::default(), [7; 32]).unwrap();
    /// assert!(lock.is_idle());
    /// ```
    pub fn new(config: Config, seed: [u8; 32]) -> Result<Lock, ConfigError> {
        config.validate()?;
        Ok(Lock {
            cfg: config,
            rng: Rng::from_seed(seed),
            next_id: 0,
            now: Instant::ZERO,
            pending: None,
            outbox: None,
            events: VecDeque::new(),
            phase: Phase::Idle,
        })
    }

    /// The settings.
    ///
    /// ```
    /// # use sets3lock::{Config, Lock};
    /// let lock = Lock::new(Config::default(), [7; 32]).unwrap();
    /// assert_eq!(lock.config().lease.as_secs(), 60);
    /// ```
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    // ---- user commands -------------------------------------------------------------------

    /// Starts acquiring the lock. `unix_ms` is the wall-clock time, for the record only (people
    /// read it; the protocol never trusts it).
    ///
    /// Fails with [`CommandError::Busy`] unless [`is_idle`](Lock::is_idle).
    ///
    /// ```
    /// # use sets3lock::{Config, Instant, Intent, Lock, Wait};
    /// let mut lock = Lock::new(Config::default(), [7; 32]).unwrap();
    /// lock.acquire(Instant::ZERO, 0, Wait::No).unwrap();
    /// let req = lock.poll_request().unwrap();
    /// assert!(matches!(req.intent, Intent::PutIfNoneMatch { .. }));
    /// assert!(lock.acquire(Instant::ZERO, 0, Wait::No).is_err());
    /// ```
    pub fn acquire(&mut self, now: Instant, unix_ms: u64, wait: Wait) -> Result<(), CommandError> {
        let now = self.clock(now);
        self.expire(now);
        if !matches!(self.phase, Phase::Idle) || self.pending.is_some() {
            self.drive(now);
            return Err(CommandError::Busy);
        }
        let owner = OwnerId::from_u128(self.rng.next_u128());
        self.phase = Phase::Acquiring(Acquiring {
            s: Session {
                owner,
                seq: 0,
                started: now,
                started_unix_ms: unix_ms,
                unresolved: Vec::new(),
            },
            try_once: wait.is_try_once(),
            deadline: match wait {
                Wait::Timeout(d) => Some(now + d),
                Wait::No | Wait::Forever => None,
            },
            observed: None,
            next: Some((now, Action::Create)),
            polls: 0,
            retries: 0,
            rounds: 0,
            conflicts: 0,
            incoherent: 0,
            refused: None,
            last_setback: None,
        });
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
    /// # use sets3lock::{Config, Event, Instant, Lock, Wait};
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
        match std::mem::replace(&mut self.phase, Phase::Idle) {
            Phase::Held(h) => {
                self.phase = Phase::Releasing(Releasing {
                    s: h.s,
                    etag: h.etag,
                    valid_until: h.valid_until,
                    delete_unconfirmed: false,
                    // A pending renewal or read is answered first; then the delete goes out
                    // with the ETag that is current by then.
                    next: Some((now, Action::Release)),
                    retries: 0,
                });
            }
            Phase::Acquiring(a) => {
                self.events.push_back(Event::Cancelled);
                self.end_acquisition(a.s);
            }
            other => {
                self.phase = other;
                // Expiry may just have scheduled a cleanup.
                self.drive(now);
                return Err(CommandError::NotHeld);
            }
        }
        self.drive(now);
        Ok(())
    }

    // ---- inputs ----------------------------------------------------------------------------

    /// Feeds the reply to request `id`. Replies to requests the core no longer waits for are
    /// ignored.
    ///
    /// ```
    /// # use sets3lock::{Config, Event, ETag, Instant, Lock, Response, Wait};
    /// let mut lock = Lock::new(Config::default(), [7; 32]).unwrap();
    /// lock.acquire(Instant::ZERO, 0, Wait::No).unwrap();
    /// let req = lock.poll_request().unwrap();
    /// lock.handle_response(req.id, Response::Written { etag: ETag::parse("e1").unwrap() }, Instant::ZERO);
    /// assert!(matches!(lock.poll_event(), Some(Event::Acquired { .. })));
    /// ```
    pub fn handle_response(&mut self, id: RequestId, response: Response, now: Instant) {
        let now = self.clock(now);
        if self.pending.as_ref().map(|p| p.id) != Some(id) {
            return;
        }
        self.expire(now);
        let Some(p) = self.pending.take() else {
            // Expiry made the pending read moot.
            self.drive(now);
            return;
        };
        if self.outbox.as_ref().map(|r| r.id) == Some(id) {
            self.outbox = None;
        }
        let response = normalize(&p, response);
        match std::mem::replace(&mut self.phase, Phase::Idle) {
            Phase::Idle => {}
            Phase::Acquiring(a) => self.on_acquiring(a, p, response, now),
            Phase::Held(h) => self.on_held(h, p, response, now),
            Phase::Releasing(r) => self.on_releasing(r, p, response, now),
            Phase::Cleanup(c) => self.on_cleanup(c, p, response, now),
        }
        self.drive(now);
    }

    /// Tells the core that time has passed; call it when [`poll_timeout`](Lock::poll_timeout)
    /// is reached (calling it early or often is harmless).
    ///
    /// ```
    /// # use sets3lock::{Config, Instant, Lock};
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
    /// # use sets3lock::{Config, Instant, Lock, Wait};
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
    /// # use sets3lock::{Config, Lock};
    /// let mut lock = Lock::new(Config::default(), [7; 32]).unwrap();
    /// assert_eq!(lock.poll_event(), None);
    /// ```
    #[must_use]
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// When to call [`handle_timeout`](Lock::handle_timeout) next, if anything is scheduled.
    ///
    /// ```
    /// # use sets3lock::{Config, Instant, Lock};
    /// let lock = Lock::new(Config::default(), [7; 32]).unwrap();
    /// assert_eq!(lock.poll_timeout(), None);
    /// ```
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        let next = |n: &Next| {
            if self.pending.is_none() {
                n.as_ref().map(|(t, _)| *t)
            } else {
                None
            }
        };
        let write_pending = self.pending.as_ref().is_some_and(|p| p.write.is_some());
        let (a, b) = match &self.phase {
            Phase::Idle => (None, None),
            Phase::Acquiring(a) => (next(&a.next), a.deadline.filter(|_| !write_pending)),
            Phase::Held(h) => (next(&h.next), h.valid_until),
            Phase::Releasing(r) => (next(&r.next), None),
            Phase::Cleanup(c) => (next(&c.next), None),
        };
        match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    // ---- queries ---------------------------------------------------------------------------

    /// Whether we hold a valid lock at `now`: acquired, not released, lost or expired, and
    /// `now` is before the end of validity.
    ///
    /// ```
    /// # use sets3lock::{Config, Instant, Lock};
    /// let lock = Lock::new(Config::default(), [7; 32]).unwrap();
    /// assert!(!lock.is_held(Instant::ZERO));
    /// ```
    pub fn is_held(&self, now: Instant) -> bool {
        match &self.phase {
            Phase::Held(h) => h.valid_until.is_none_or(|v| now < v),
            _ => false,
        }
    }

    /// Nothing under way: no acquisition, hold, release or cleanup, and no request awaiting
    /// its reply. A driver that is shutting down should keep driving until this is true, so
    /// that a write of ours that landed late is removed.
    ///
    /// ```
    /// # use sets3lock::{Config, Lock};
    /// assert!(Lock::new(Config::default(), [7; 32]).unwrap().is_idle());
    /// ```
    pub fn is_idle(&self) -> bool {
        matches!(self.phase, Phase::Idle) && self.pending.is_none()
    }

    /// The current hold's owner id and ETag, while held.
    ///
    /// ```
    /// # use sets3lock::{Config, Lock};
    /// assert!(Lock::new(Config::default(), [7; 32]).unwrap().holding().is_none());
    /// ```
    pub fn holding(&self) -> Option<(OwnerId, &ETag)> {
        match &self.phase {
            Phase::Held(h) => Some((h.s.owner, &h.etag)),
            _ => None,
        }
    }

    /// When the current hold stops being valid unless renewed (`None` if not held or if the
    /// lease is zero).
    ///
    /// ```
    /// # use sets3lock::{Config, Lock};
    /// assert!(Lock::new(Config::default(), [7; 32]).unwrap().valid_until().is_none());
    /// ```
    pub fn valid_until(&self) -> Option<Instant> {
        match &self.phase {
            Phase::Held(h) => h.valid_until,
            _ => None,
        }
    }

    // ---- time ------------------------------------------------------------------------------

    /// Time never goes backwards inside the core, whatever the driver passes.
    fn clock(&mut self, now: Instant) -> Instant {
        self.now = self.now.max(now);
        self.now
    }

    /// Ends what has run out of time. Sends nothing.
    fn expire(&mut self, now: Instant) {
        match std::mem::replace(&mut self.phase, Phase::Idle) {
            Phase::Held(h) if h.valid_until.is_some_and(|v| now >= v) => {
                self.events.push_back(Event::Expired);
                self.phase = Phase::Cleanup(Cleanup {
                    owner: h.s.owner,
                    etags: vec![h.etag],
                    resolve: !h.s.unresolved.is_empty(),
                    next: None,
                    retries: 0,
                });
                self.forget_pending_read();
            }
            Phase::Acquiring(a)
                if a.deadline.is_some_and(|d| now >= d)
                    && self.pending.as_ref().is_none_or(|p| p.write.is_none()) =>
            {
                self.events.push_back(Event::NotAcquired {
                    reason: NotAcquired::TimedOut {
                        holder: a.observed.map(|o| o.holder),
                    },
                });
                self.end_acquisition(a.s);
            }
            other => self.phase = other,
        }
    }

    /// Sends the next scheduled request if it is due and nothing is in flight.
    fn drive(&mut self, now: Instant) {
        if self.pending.is_some() {
            return;
        }
        let next = match &mut self.phase {
            Phase::Idle => return,
            Phase::Acquiring(a) => &mut a.next,
            Phase::Held(h) => &mut h.next,
            Phase::Releasing(r) => &mut r.next,
            Phase::Cleanup(c) => {
                if c.next.is_none() {
                    c.next = if c.resolve {
                        Some((now, Action::Observe))
                    } else {
                        c.etags.first().cloned().map(|e| (now, Action::Delete(e)))
                    };
                    if c.next.is_none() {
                        self.phase = Phase::Idle;
                        return;
                    }
                }
                &mut c.next
            }
        };
        let Some((at, _)) = next else { return };
        if *at > now {
            return;
        }
        let Some((_, action)) = next.take() else {
            return;
        };
        self.fire(action, now);
    }

    // ---- requests --------------------------------------------------------------------------

    fn fire(&mut self, action: Action, now: Instant) {
        let (intent, purpose, write) = match (&mut self.phase, action) {
            (Phase::Acquiring(a), Action::Create) => {
                let (w, body) = a.s.next_write(&self.cfg, now);
                (Intent::PutIfNoneMatch { body }, Purpose::Acquire, Some(w))
            }
            (Phase::Acquiring(a), Action::Takeover) => match &a.observed {
                Some(o) => {
                    let etag = o.etag.clone();
                    let (w, body) = a.s.next_write(&self.cfg, now);
                    (
                        Intent::PutIfMatch { etag, body },
                        Purpose::Takeover,
                        Some(w),
                    )
                }
                None => {
                    a.next = Some((now, Action::Observe));
                    return self.drive(now);
                }
            },
            (Phase::Acquiring(a), Action::Observe) => {
                let if_none_match = a
                    .observed
                    .as_ref()
                    .filter(|_| self.cfg.conditional_get)
                    .map(|o| o.etag.clone());
                let purpose = if a.s.unresolved.is_empty() {
                    Purpose::Observe
                } else {
                    Purpose::Resolve
                };
                (Intent::Get { if_none_match }, purpose, None)
            }
            (Phase::Held(h), Action::Renew) => {
                let etag = h.etag.clone();
                let (w, body) = h.s.next_write(&self.cfg, now);
                (Intent::PutIfMatch { etag, body }, Purpose::Renew, Some(w))
            }
            (Phase::Held(_) | Phase::Releasing(_) | Phase::Cleanup(_), Action::Observe) => (
                Intent::Get {
                    if_none_match: None,
                },
                Purpose::Resolve,
                None,
            ),
            (Phase::Releasing(r), Action::Release) => {
                let etag = r.etag.clone();
                (Intent::DeleteIfMatch { etag }, Purpose::Release, None)
            }
            (Phase::Cleanup(_), Action::Delete(etag)) => {
                (Intent::DeleteIfMatch { etag }, Purpose::Cleanup, None)
            }
            // Every phase schedules only its own actions; nothing else can be due.
            _ => return,
        };
        self.send(intent, purpose, write);
    }

    fn send(&mut self, intent: Intent, purpose: Purpose, write: Option<Write>) {
        self.next_id += 1;
        let id = RequestId::from_u64(self.next_id);
        let etag = match &intent {
            Intent::PutIfMatch { etag, .. } | Intent::DeleteIfMatch { etag } => Some(etag.clone()),
            _ => None,
        };
        self.pending = Some(Pending {
            id,
            kind: intent.kind(),
            purpose,
            write,
            etag,
        });
        self.outbox = Some(Request {
            id,
            intent,
            purpose,
        });
    }

    fn forget_pending_read(&mut self) {
        if self.pending.as_ref().is_some_and(|p| p.write.is_none()) {
            self.pending = None;
            self.outbox = None;
        }
    }
}

/// Replies that do not fit the request are treated as "outcome unknown": the safe reading.
fn normalize(p: &Pending, r: Response) -> Response {
    if r.fits(p.kind) {
        r
    } else {
        Response::Ambiguous(Ambiguity::Unexpected {
            reply: r.name(),
            request: p.kind,
        })
    }
}
