//! Observing a lock without taking part in it: who holds it now, and every change, learned by
//! polling the lock object with conditional GETs.

use crate::rng::Rng;
use crate::{
    Ambiguity, Backoff, ConfigError, ETag, Error, Holder, Instant, Intent, IntentKind, Purpose,
    Request, RequestId, Response, Setback,
};
use core::time::Duration;
use std::collections::VecDeque;

/// Settings for a [`Watch`].
///
/// ```
/// use core::time::Duration;
/// use sets3lock_proto::WatchConfig;
/// let every_ten = WatchConfig { interval: Duration::from_secs(10), ..WatchConfig::default() };
/// assert!(every_ten.validate().is_ok());
/// assert_eq!(every_ten.requests_per_minute(), 6.0);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchConfig {
    /// The mean pause between two polls (each is drawn between ¾ and 5⁄4 of it).
    pub interval: Duration,
    /// Pacing of the retries after a failed poll (5xx, no reply, a refusal).
    pub retry: Backoff,
    /// The lease to assume for a holder whose record declares none (the Go sets3lock, or any
    /// other body; never a lock Terraform or OpenTofu wrote, which is never reported stale).
    /// `None`: such holders are never reported stale.
    pub foreign_lease: Option<Duration>,
}

impl Default for WatchConfig {
    /// A poll every 2 s on average, retries between 50 ms and 2 s, no foreign lease.
    fn default() -> WatchConfig {
        WatchConfig {
            interval: Duration::from_secs(2),
            retry: Backoff::new(Duration::from_millis(50), Duration::from_secs(2)),
            foreign_lease: None,
        }
    }
}

impl WatchConfig {
    /// Checks that the settings can work: an interval of at least 10 ms, a sound retry range.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use sets3lock_proto::WatchConfig;
    /// let busy = WatchConfig { interval: Duration::from_millis(1), ..WatchConfig::default() };
    /// assert!(busy.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.interval < Duration::from_millis(10) {
            return Err(ConfigError::IntervalTooShort(self.interval));
        }
        if self.retry.floor.is_zero() || self.retry.floor > self.retry.cap {
            return Err(ConfigError::BadBackoff { which: "retry" });
        }
        Ok(())
    }

    /// What one observer costs while the store answers: `GET`s a minute, on average.
    ///
    /// ```
    /// assert_eq!(sets3lock_proto::WatchConfig::default().requests_per_minute(), 30.0);
    /// ```
    pub fn requests_per_minute(&self) -> f64 {
        60.0 / self.interval.as_secs_f64()
    }
}

/// What the lock object looked like to an observer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sighting {
    /// There is no lock object: nobody holds the lock (or the key was never used).
    Free,
    /// A fenced record that says `free`: nobody holds the lock; the record keeps the last
    /// grant's token (`holder.fence()`), and who released it.
    Released {
        /// The record's ETag.
        etag: ETag,
        /// The record.
        holder: Holder,
    },
    /// Someone holds the lock, as its record says.
    Held {
        /// The record's ETag: it changes with every renewal.
        etag: ETag,
        /// Who, from the record.
        holder: Holder,
        /// When this holder was first seen, on the observer's clock (a renewal by the same
        /// owner keeps it).
        since: Instant,
        /// When the record will be stale if it does not change, on the observer's clock
        /// (`None`: never, the holder declared no lease).
        stale_at: Option<Instant>,
    },
    /// The record has not changed for a full lease: its holder stopped renewing (crashed,
    /// frozen or cut off), and a waiter may take the lock over.
    Stale {
        /// The record's ETag.
        etag: ETag,
        /// Who held it.
        holder: Holder,
        /// When this holder was first seen, on the observer's clock.
        since: Instant,
    },
}

impl Sighting {
    /// Whether somebody holds the lock (a stale holder still does until someone takes over).
    ///
    /// ```
    /// assert!(!sets3lock_proto::Sighting::Free.is_held());
    /// ```
    pub fn is_held(&self) -> bool {
        matches!(self, Sighting::Held { .. } | Sighting::Stale { .. })
    }

    /// The holder's record, when there is an object.
    ///
    /// ```
    /// assert!(sets3lock_proto::Sighting::Free.holder().is_none());
    /// ```
    pub fn holder(&self) -> Option<&Holder> {
        match self {
            Sighting::Free => None,
            Sighting::Released { holder, .. }
            | Sighting::Held { holder, .. }
            | Sighting::Stale { holder, .. } => Some(holder),
        }
    }

    /// The object's ETag, when there is an object.
    ///
    /// ```
    /// assert!(sets3lock_proto::Sighting::Free.etag().is_none());
    /// ```
    pub fn etag(&self) -> Option<&ETag> {
        match self {
            Sighting::Free => None,
            Sighting::Released { etag, .. }
            | Sighting::Held { etag, .. }
            | Sighting::Stale { etag, .. } => Some(etag),
        }
    }
}

/// What a [`Watch`] tells its user.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WatchEvent {
    /// The first sighting, then every change: a new holder, the lock freed, a holder gone
    /// stale. A renewal (a new ETag, the same owner) is not a change.
    Changed(Sighting),
    /// A poll failed (5xx, no reply, a 409, a refusal that may pass); polls go on, and the last
    /// sighting may be out of date until [`WatchEvent::Reachable`]. Sent once per outage.
    Unreachable {
        /// The first failure.
        setback: Setback,
    },
    /// A poll was answered again after [`WatchEvent::Unreachable`].
    Reachable,
    /// A refusal that retrying will not fix (no such bucket, access denied, a bad signature):
    /// the watch has stopped.
    Failed {
        /// The cause, with what fixes it.
        error: Error,
    },
}

/// An observer of one lock key: a sans-IO state machine.
///
/// A [`Watch`] is a second sans-IO state machine beside [`Lock`](crate::Lock), driven the same
/// way: drain [`poll_request`](Watch::poll_request) and answer each request once with
/// [`handle_response`](Watch::handle_response), sleep until
/// [`poll_timeout`](Watch::poll_timeout) and call [`handle_timeout`](Watch::handle_timeout),
/// and read [`poll_event`](Watch::poll_event) after every input. It only ever sends `GET`s,
/// so it can neither take nor disturb the lock.
///
/// **Cadence and cost.** One `GET` at a time, each starting a pause after the one before it
/// started (or when its reply comes, if that is later), the pause drawn uniformly between ¾
/// and 5⁄4 of [`WatchConfig::interval`] (observers started together drift apart instead of
/// polling in lockstep): on average `60 s / interval` requests a minute per observer (30 with the default
/// 2 s). Every poll after the first names the last ETag seen (`If-None-Match`), so while the
/// lock does not change each costs a `304` without a body. A failed poll is retried sooner,
/// paced by [`WatchConfig::retry`].
///
/// **What is seen.** Each sighting is the object as one `GET` found it, so sightings come in
/// the order the writes were made; a holder that came and went between two polls is not
/// seen. A record left unchanged for a full lease (the holder's own, from its record) on the
/// observer's clock is reported [`Sighting::Stale`]: its holder stopped renewing, and a waiter
/// may take it over now (the same rule the lock uses).
///
/// ```
/// use core::time::Duration;
/// use sets3lock_proto::{Instant, Intent, Response, Sighting, Watch, WatchConfig, WatchEvent};
///
/// let mut watch = Watch::new(WatchConfig::default(), [1; 32]).unwrap();
/// let request = watch.poll_request().unwrap(); // the first poll goes out at once
/// assert_eq!(request.intent, Intent::Get { if_none_match: None });
/// watch.handle_response(request.id, Response::Absent, Instant::ZERO);
/// assert_eq!(watch.poll_event(), Some(WatchEvent::Changed(Sighting::Free)));
/// // The next poll is due within 5/4 of the interval.
/// let next = watch.poll_timeout().unwrap();
/// assert!(next <= Instant::ZERO + Duration::from_millis(2500));
/// ```
#[derive(Debug)]
pub struct Watch {
    cfg: WatchConfig,
    rng: Rng,
    next_id: u64,
    current: Option<Sighting>,
    /// The poll to hand out.
    outgoing: Option<Request>,
    /// The poll awaiting its reply.
    in_flight: Option<RequestId>,
    /// When the next poll is due (`None` while one is out).
    due: Option<Instant>,
    /// When the poll out was due: the next is paced from it, not from its reply.
    polled_at: Option<Instant>,
    /// Failed polls in a row.
    failures: u32,
    events: VecDeque<WatchEvent>,
    stopped: bool,
}

impl Watch {
    /// A watch whose first poll goes out at once. `seed` (256 random bits) spreads the
    /// pauses of observers started together. Fails if the settings cannot work.
    pub fn new(cfg: WatchConfig, seed: [u8; 32]) -> Result<Watch, ConfigError> {
        cfg.validate()?;
        let mut watch = Watch {
            cfg,
            rng: Rng::from_seed(seed),
            next_id: 0,
            current: None,
            outgoing: None,
            in_flight: None,
            due: None,
            polled_at: None,
            failures: 0,
            events: VecDeque::new(),
            stopped: false,
        };
        watch.queue_poll();
        Ok(watch)
    }

    /// The latest sighting (`None` before the first answered poll).
    pub fn current(&self) -> Option<&Sighting> {
        self.current.as_ref()
    }

    /// Whether the watch has stopped for good (after [`WatchEvent::Failed`], or [`Watch::stop`]).
    pub fn is_stopped(&self) -> bool {
        self.stopped
    }

    /// Stops polling: no more requests or timers (a reply still out is ignored).
    pub fn stop(&mut self) {
        self.stopped = true;
        self.due = None;
        self.outgoing = None;
        self.in_flight = None;
    }

    /// The next request to send, if one is due (see [`Watch::handle_timeout`]).
    pub fn poll_request(&mut self) -> Option<Request> {
        let request = self.outgoing.take()?;
        self.in_flight = Some(request.id);
        Some(request)
    }

    /// The next event for the user.
    pub fn poll_event(&mut self) -> Option<WatchEvent> {
        self.events.pop_front()
    }

    /// When to call [`Watch::handle_timeout`] next: the next poll, or the moment the current
    /// holder goes stale, whichever is sooner (`None` while a poll is out and nothing can go
    /// stale, or once stopped).
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.stopped {
            return None;
        }
        let stale_at = match self.current() {
            Some(Sighting::Held { stale_at, .. }) => *stale_at,
            _ => None,
        };
        match (self.due, stale_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Time has passed: reports a holder gone stale, and queues the next poll if it is due.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.stopped {
            return;
        }
        if let Some(Sighting::Held {
            etag,
            holder,
            since,
            stale_at: Some(stale_at),
        }) = &self.current
        {
            if now >= *stale_at {
                let stale = Sighting::Stale {
                    etag: etag.clone(),
                    holder: holder.clone(),
                    since: *since,
                };
                self.see(stale);
            }
        }
        if let Some(due) = self.due.filter(|due| now >= *due) {
            self.polled_at = Some(due);
            self.queue_poll();
        }
    }

    /// Queues the next poll: conditional on the last ETag seen, if any.
    fn queue_poll(&mut self) {
        self.due = None;
        self.next_id += 1;
        self.outgoing = Some(Request {
            id: RequestId::from_u64(self.next_id),
            intent: Intent::Get {
                if_none_match: self.current().and_then(Sighting::etag).cloned(),
            },
            purpose: Purpose::Observe,
        });
    }

    /// The reply to request `id` (a reply to anything else is ignored).
    pub fn handle_response(&mut self, id: RequestId, response: Response, now: Instant) {
        if self.stopped || self.in_flight != Some(id) {
            return;
        }
        self.in_flight = None;
        let answered = match response {
            Response::Absent => {
                self.see(Sighting::Free);
                true
            }
            Response::NotModified if self.current().and_then(Sighting::etag).is_some() => true,
            Response::Object { etag, body, .. } => {
                self.object(etag, Holder::decode(&body), now);
                true
            }
            Response::Refused(error) if is_permanent(&error) => {
                self.events.push_back(WatchEvent::Failed { error });
                self.stop();
                return;
            }
            Response::Refused(error) => self.failed(Setback::Refused(error)),
            Response::Conflict { code } => self.failed(Setback::Conflict { code }),
            Response::Ambiguous(why) => self.failed(Setback::Ambiguous(why)),
            other => self.failed(Setback::Ambiguous(Ambiguity::Unexpected {
                reply: other.name(),
                request: IntentKind::Get,
            })),
        };
        let pause = if answered {
            if self.failures > 0 {
                self.events.push_back(WatchEvent::Reachable);
            }
            self.failures = 0;
            let quarter = self.cfg.interval / 4;
            let spread = u64::try_from((quarter * 2).as_nanos()).unwrap_or(u64::MAX);
            self.cfg.interval - quarter + Duration::from_nanos(self.rng.up_to(spread))
        } else {
            self.cfg.retry.draw(self.failures - 1, &mut self.rng)
        };
        // Paced from when this poll was due, so that the interval is start to start whatever
        // the round trip; never in the past.
        let from = match answered {
            true => self.polled_at.unwrap_or(now),
            // A retry is paced from the failure.
            false => now,
        };
        self.due = Some((from + pause).max(now));
    }

    /// A poll that failed and will be retried: counts it (and says so at the first). Returns
    /// `false`: not answered.
    fn failed(&mut self, setback: Setback) -> bool {
        if self.failures == 0 {
            self.events.push_back(WatchEvent::Unreachable { setback });
        }
        self.failures = self.failures.saturating_add(1);
        false
    }

    /// An object was read.
    fn object(&mut self, etag: ETag, holder: Holder, now: Instant) {
        if holder.is_free() {
            return self.see(Sighting::Released { etag, holder });
        }
        let previous = self.current.as_ref();
        if let Some(Sighting::Held { etag: e, .. } | Sighting::Stale { etag: e, .. }) = previous {
            if *e == etag {
                // The same version (a store that ignored If-None-Match): nothing new.
                return;
            }
        }
        // A renewal: the same owner wrote again. Keep when it was first seen.
        let since = match previous {
            Some(
                Sighting::Held {
                    holder: h, since, ..
                }
                | Sighting::Stale {
                    holder: h, since, ..
                },
            ) if h.owner().is_some() && h.owner() == holder.owner() => *since,
            _ => now,
        };
        let lease = holder.assumed_lease(self.cfg.foreign_lease, None);
        // Stale a full lease after this version was first seen; never for a zero lease.
        let stale_at = lease.filter(|l| !l.is_zero()).map(|l| now + l);
        self.see(Sighting::Held {
            etag,
            holder,
            since,
            stale_at,
        });
    }

    /// Records a sighting, and reports it if it changes what a user sees.
    fn see(&mut self, sighting: Sighting) {
        // The first sighting is a change: it falls to the last arm.
        let changed = match (self.current(), &sighting) {
            (Some(Sighting::Free), Sighting::Free) => false,
            (Some(Sighting::Released { etag: a, .. }), Sighting::Released { etag: b, .. }) => {
                a != b
            }
            // Renewed by the same holder: not a change (an unowned record's new version is).
            (Some(Sighting::Held { holder: a, .. }), Sighting::Held { holder: b, .. }) => {
                a.owner().is_none() || a.owner() != b.owner()
            }
            _ => true,
        };
        if changed {
            self.events.push_back(WatchEvent::Changed(sighting.clone()));
        }
        self.current = Some(sighting);
    }
}

/// Whether a refusal stops the watch: one that nothing but the user can fix. A refusal about
/// the request's time or an expired credential may pass (a clock corrected, a credential
/// refreshed); it is retried.
fn is_permanent(error: &Error) -> bool {
    match error {
        Error::NoSuchBucket { .. }
        | Error::MissingContainer { .. }
        | Error::ConditionalUnsupported { .. } => true,
        Error::Refused { code, .. } => !matches!(
            code.as_deref(),
            Some("ExpiredToken" | "TokenRefreshRequired" | "RequestTimeTooSkewed")
        ),
        _ => false,
    }
}
