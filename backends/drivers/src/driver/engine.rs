//! The driver: the core, the clock, and the one loop both modes run, over any store.

use crate::driver::clock::time_limit;
use crate::driver::clock::Stamp;
use crate::driver::meter::Meter;
use crate::driver::mode::Mode;
use crate::driver::state::{FinishOnDrop, Shared, Snapshot};
use crate::driver::store::Store;
use crate::{Error, Observation, Options};
use core::time::Duration;
use sets3lock_proto::{Event, Handle, Instant, Lock, LockUrl, Request, Response, Resume, Wait};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// One lock's driver state: everything but the waiting.
pub(crate) struct Engine {
    lock: Lock,
    /// Where the lock lives, and the lock's key in it.
    store: Arc<dyn Store>,
    url: LockUrl,
    origin: Stamp,
    observer: Option<crate::Observer>,
    shared: Arc<Shared>,
    /// The locker's count of requests sent.
    requests: Arc<AtomicU64>,
    /// The handle's release (or cancellation) has been passed to the core.
    release_sent: bool,
    /// How long one request may take.
    request_timeout: Duration,
    /// While acquiring: when the wait ends. No request of the acquisition may run on past it
    /// by more than `clock::LAST_REQUEST` (none with lease 0).
    deadline: Option<Stamp>,
    /// The instruments (feature `metrics`).
    meter: Meter,
    /// The locker's memory of the highest fencing token seen on the key (0: none), carried
    /// from one acquisition to the next: see [`Engine::remember_tokens`].
    tokens: Option<Arc<AtomicU64>>,
}

/// What a new driver's core starts with.
#[derive(Clone, Debug)]
pub(crate) enum Start {
    /// Acquiring, waiting this way.
    Acquire(Wait),
    /// Continuing the hold a handle names, then holding it or releasing it.
    Adopt(Handle, Resume),
}

/// What the driver does next.
#[allow(clippy::large_enum_variant)] // matched as soon as it is made, never stored
pub(crate) enum Next {
    /// Send this request.
    Send(Sending),
    /// Wait until this time (`None`: no timer), or until the handle asks for the release if
    /// `for_release`.
    Wait {
        until: Option<Stamp>,
        for_release: bool,
    },
    /// The core is idle: the driver is done.
    Stop,
}

/// A request on its way.
pub(crate) struct Sending {
    request: Request,
    started: std::time::Instant,
}

impl Engine {
    /// A new core, already acquiring.
    pub(crate) fn acquiring(
        store: Arc<dyn Store>,
        url: LockUrl,
        options: &Options,
        wait: Wait,
        requests: Arc<AtomicU64>,
        bell: Option<Arc<Shared>>,
    ) -> Result<Engine, Error> {
        Engine::starting(store, url, options, Start::Acquire(wait), requests, bell)
    }

    /// A new core, already doing what `start` says.
    pub(crate) fn starting(
        store: Arc<dyn Store>,
        url: LockUrl,
        options: &Options,
        start: Start,
        requests: Arc<AtomicU64>,
        bell: Option<Arc<Shared>>,
    ) -> Result<Engine, Error> {
        let origin = Stamp::now();
        let mut config = options.lock.clone();
        if let Start::Adopt(handle, _) = &start {
            // Renewals from a handle write the handle's lease.
            config.lease = handle.lease;
        }
        let wait = match &start {
            Start::Acquire(wait) => *wait,
            Start::Adopt(..) => Wait::Forever,
        };
        if config.host.is_empty() {
            config.host = hostname();
        }
        if config.pid == 0 {
            config.pid = std::process::id();
        }
        // Terraform's format as asked (refused by the core without a lease, or fenced); a hold
        // continued from a handle whose lease is 0 or that is fenced was taken in sets3lock's
        // own format (the command refuses Terraform's for it), and keeps it.
        let adopted_without_it = match &start {
            Start::Adopt(handle, _) => handle.lease.is_zero() || handle.token.is_some(),
            Start::Acquire(_) => false,
        };
        if config.terraform.is_none()
            && options.lock_format.is_terraform(url.key())
            && !adopted_without_it
        {
            config.terraform = Some(crate::lock_format::terraform_format(
                options,
                &url,
                &config.host,
            ));
        }
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(Error::no_randomness)?;
        let name = options
            .metrics_name
            .clone()
            .unwrap_or_else(|| url.to_string());
        // A semaphore's slots (the drivers with a bell) are measured by the semaphore, once.
        let measured = matches!(start, Start::Acquire(_)) && bell.is_none();
        let meter = Meter::new(&name, config.fenced, measured);
        let mut engine = Engine {
            lock: Lock::new(config, seed)?,
            store,
            url,
            origin,
            observer: options.observer.clone(),
            shared: Arc::new(Shared::ringing(bell)),
            requests,
            release_sent: false,
            request_timeout: options.request_timeout,
            // With lease 0 nothing would ever remove a write that landed unanswered: such
            // writes are waited for, whatever the deadline.
            deadline: match wait {
                Wait::Timeout(d) if !options.lock.lease.is_zero() => Some(origin.plus(d)),
                _ => None,
            },
            meter,
            tokens: None,
        };
        let now = engine.now();
        let started = match start {
            Start::Acquire(wait) => engine.lock.acquire(now, unix_ms(), wait),
            Start::Adopt(handle, then) => engine.lock.adopt(now, unix_ms(), &handle, then),
        };
        // A new core is idle: it cannot refuse.
        started.map_err(|_| Error::DriverGone)?;
        Ok(engine)
    }

    /// Numbers this driver's grants above every token `memory` holds (the highest seen on the
    /// key by the locker's earlier drivers), and adds what this one sees to it: tokens never
    /// go back for a locker that saw them, even if the lock object is removed behind its back.
    /// Call before the first request is taken.
    pub(crate) fn remember_tokens(&mut self, memory: Arc<AtomicU64>) {
        let seen = memory.load(Ordering::Relaxed);
        if seen > 0 {
            self.lock.saw_token(seen);
        }
        self.tokens = Some(memory);
    }

    /// The state this driver shares with its handle.
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// The core's clock: the suspend-aware clock, from this driver's start.
    fn now(&self) -> Instant {
        Instant::from_duration(Stamp::now().since(self.origin))
    }

    /// A core instant on the drivers' clock.
    fn to_stamp(&self, t: Instant) -> Stamp {
        self.origin.plus(t.since_origin())
    }

    fn observe(&self, o: Observation<'_>) {
        if let Some(observer) = &self.observer {
            observer.see(o);
        }
    }

    /// Hands the core's events to the shared state (and to the observer).
    fn publish(&mut self) {
        while let Some(event) = self.lock.poll_event() {
            // The meter first: an observer that reads the instruments sees this event in them.
            self.meter.event(&event);
            self.observe(Observation::Event(&event));
            if !matches!(event, Event::Contended { .. }) {
                // The acquisition is over: held, given up, failed or cancelled.
                self.deadline = None;
            }
            self.shared.apply(&event, |t| self.to_stamp(t));
        }
    }

    /// Publishes what the core has to say, then: the next request, or how long to wait.
    pub(crate) fn next(&mut self) -> Next {
        self.publish();
        if let Some(request) = self.lock.poll_request() {
            self.requests.fetch_add(1, Ordering::Relaxed);
            self.observe(Observation::Sending(&request));
            let now = self.now();
            let left = self
                .lock
                .valid_until()
                .map(|v| v.saturating_duration_since(now));
            self.meter.sending(&request, left);
            let started = std::time::Instant::now();
            return Next::Send(Sending { request, started });
        }
        if self.lock.is_idle() {
            return Next::Stop;
        }
        let until = self.lock.poll_timeout().map(|t| self.to_stamp(t));
        if until.is_none() && self.release_sent {
            // Not idle, nothing in flight, no timer, and released: nothing can wake the core
            // any more (which a correct core never leaves us in). Stop rather than hang.
            return Next::Stop;
        }
        Next::Wait {
            until,
            for_release: !self.release_sent,
        }
    }

    /// Feeds a reply to the core (and to the observer).
    pub(crate) fn answer(&mut self, sending: Sending, response: Response) {
        let Sending { request, started } = sending;
        let took = started.elapsed();
        self.meter.received(&request, &response, took);
        self.observe(Observation::Received(&request, &response, took));
        let now = self.now();
        self.lock.handle_response(request.id, response, now);
        if let (Some(memory), Some(seen)) = (&self.tokens, self.lock.highest_token_seen()) {
            memory.fetch_max(seen, Ordering::Relaxed);
        }
    }

    /// After a wait: passes on the handle's release (or detach) if it asked for one, and the
    /// time.
    pub(crate) fn woke(&mut self, release_asked: bool, detach_asked: bool) {
        if detach_asked && !self.release_sent {
            self.release_sent = true;
            // Refused when the hold has already ended: the handle then sees how it ended.
            // Otherwise the core parks the record (its `Released { Parked }` ends the hold as
            // detached), or, when it cannot vouch for the hold, is idle at once.
            if self.lock.detach(self.now(), self.url.clone()).is_ok() && self.lock.is_idle() {
                self.shared.detached();
            }
        }
        if release_asked && !self.release_sent {
            self.release_sent = true;
            // Refused only when there is nothing to release or cancel any more.
            let _ = self.lock.release(self.now());
        }
        let now = self.now();
        self.lock.handle_timeout(now);
    }

    /// Sends `sending`'s request through the store, within the request timeout and ending by
    /// the acquisition's deadline (but given at least `LAST_REQUEST`), and a hold's request
    /// within the core's [`request_limit`](sets3lock_proto::Lock::request_limit).
    async fn send(&self, sending: &Sending) -> Response {
        let limit = time_limit(self.request_timeout, self.deadline);
        let limit = self.lock.request_limit(limit, self.now());
        let (key, intent) = (self.url.key(), &sending.request.intent);
        self.store.send(key, intent, limit).await
    }
}

/// Wall-clock milliseconds, for the record only.
fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// The driver loop for `engine`, in a span named after its lock with the `tracing` feature.
/// Whatever becomes of the future (it finishes, it panics, or it is dropped before it ever ran:
/// a runtime shutting down), the handle learns that the driver stopped.
pub(crate) fn driver<M: Mode>(
    engine: Engine,
) -> impl core::future::Future<Output = ()> + Send + 'static {
    let finish = FinishOnDrop::new(engine.shared.clone());
    let span = span(&engine);
    finish_driving::<M>(engine, finish, span)
}

/// Starts `engine`'s driver, and returns once it is started, or has finished.
///
/// Most modes spawn the whole loop. A mode that drives here (the blocking mode, whose caller
/// waits for the acquisition anyway) runs the loop on this thread until the acquisition (or
/// adoption) is decided, then hands what is left, if the core is not idle, to one of its
/// driver threads (`threads.rs`). That thread is reserved before the first request: once the
/// lock may be ours, handing it on cannot fail and leave it with nobody to renew or release
/// it. A thread that cannot be reserved is an error before anything is written.
pub(crate) async fn launch<M: Mode>(mut engine: Engine) -> Result<(), Error> {
    let finish = FinishOnDrop::new(engine.shared.clone());
    let span = span(&engine);
    if !M::DRIVE_HERE {
        return M::spawn(finish_driving::<M>(engine, finish, span));
    }
    let thread = crate::driver::threads::reserve().map_err(|source| Error::Thread {
        name: "lock driver",
        source,
    })?;
    if in_span(drive_until_decided::<M>(&mut engine), &span).await {
        thread.run(Box::pin(finish_driving::<M>(engine, finish, span)));
    }
    // Else the core is idle: nothing is left in flight, the reserved thread is free again,
    // and `finish` marks the driver finished as it drops.
    Ok(())
}

/// The rest of `engine`'s loop, to its end; `finish` marks it finished however it ends.
fn finish_driving<M: Mode>(
    engine: Engine,
    finish: FinishOnDrop,
    span: Span,
) -> impl core::future::Future<Output = ()> + Send + 'static {
    let run = async move {
        let _finish = finish;
        let mut engine = engine;
        while step::<M>(&mut engine).await {}
    };
    in_span(run, &span)
}

/// The span a driver runs in with the `tracing` feature: one per lock, named after it, entered
/// wherever its loop runs.
#[cfg(feature = "tracing")]
type Span = tracing::Span;
#[cfg(not(feature = "tracing"))]
type Span = NoSpan;

/// Without the `tracing` feature, no span.
#[cfg(not(feature = "tracing"))]
struct NoSpan;

#[cfg(feature = "tracing")]
fn span(engine: &Engine) -> Span {
    tracing::info_span!(target: "sets3lock", "sets3lock", lock = %engine.url)
}

#[cfg(not(feature = "tracing"))]
fn span(_: &Engine) -> Span {
    NoSpan
}

/// `run`, in `span`.
fn in_span<F: core::future::Future>(
    run: F,
    span: &Span,
) -> impl core::future::Future<Output = F::Output> {
    #[cfg(feature = "tracing")]
    let run = tracing::Instrument::instrument(run, span.clone());
    #[cfg(not(feature = "tracing"))]
    let _ = span;
    run
}

/// Runs `engine`'s loop until the acquisition is decided (held, or ended), as its events
/// show once published. Returns whether the core has more to do then; `false` once it is idle
/// (an acquisition that ended with nothing of ours left in the store, or a release by handle
/// that is done).
async fn drive_until_decided<M: Mode>(engine: &mut Engine) -> bool {
    loop {
        engine.publish();
        if engine.shared.is_decided() {
            return !engine.lock.is_idle();
        }
        if !step::<M>(engine).await {
            return false;
        }
    }
}

/// One turn of the driver loop, the same for every mode: sends what the core asks and feeds
/// back the reply, publishes the core's events, or waits (the mode's way) for the core's next
/// timer or the handle's release. Returns `false` once the core is idle: cleanups of late
/// writes included.
async fn step<M: Mode>(engine: &mut Engine) -> bool {
    match engine.next() {
        Next::Send(sending) => {
            let response = engine.send(&sending).await;
            engine.answer(sending, response);
        }
        Next::Wait { until, for_release } => {
            let done = move |s: &Snapshot| for_release && (s.release_asked || s.detach_asked);
            let seen = M::wait(&engine.shared, done, until).await;
            engine.woke(seen.release_asked, seen.detach_asked);
        }
        Next::Stop => return false,
    }
    true
}

/// This machine's name, for the lock record.
pub(crate) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .unwrap_or_else(|| "unknown-host".into())
}
