//! The blocking driver: the core run by a thread.

use crate::clock::{nap_until, Stamp};
use crate::engine::Engine;
use crate::hold::{acquire_outcome, loss_of, loss_settled, release_outcome, Loss, WaitFor};
use crate::http::{blocking_client, send_blocking};
use crate::state::{Phase, Shared};
use crate::target::Target;
use crate::{Error, S3Options};
use sets3lock::{ETag, LockUrl, OwnerId, ReleaseOutcome};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

/// Opens locks on S3 from blocking code.
///
/// ```no_run
/// use sets3lock_s3::{blocking::Locker, WaitFor};
/// # fn run() -> Result<(), sets3lock_s3::Error> {
/// let locker = Locker::from_env("s3://my-bucket/locks/nightly")?;
/// let held = locker.acquire(WaitFor::Forever)?;
/// // ... the critical section, checking held.is_held() before irreversible steps ...
/// println!("{:?}", held.release()?);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Locker {
    target: Arc<Target>,
    options: S3Options,
    client: reqwest::blocking::Client,
    requests: Arc<AtomicU64>,
}

impl Locker {
    /// A locker for `url` (`s3://bucket/key`) with these options.
    pub fn new(url: &str, options: S3Options) -> Result<Locker, Error> {
        let target = Target::open(url, &options)?;
        let client = blocking_client(options.request_timeout)?;
        Ok(Locker {
            target,
            options,
            client,
            requests: Arc::new(AtomicU64::new(0)),
        })
    }

    /// A locker for `url` configured from the standard AWS environment variables.
    pub fn from_env(url: &str) -> Result<Locker, Error> {
        Locker::new(url, S3Options::from_env()?)
    }

    /// The lock's address.
    pub fn url(&self) -> &LockUrl {
        &self.target.url
    }

    /// How many S3 requests this locker's holds have sent so far.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Acquires the lock, blocking until it is held or the wait ends. The returned handle
    /// renews the lease on a background thread until it is released or dropped.
    pub fn acquire(&self, wait: WaitFor) -> Result<Held, Error> {
        let mut engine = Engine::new(self.target.clone(), &self.options)?;
        let now = engine.now();
        engine
            .lock
            .acquire(now, Engine::unix_ms(), wait.to_core(now))
            .map_err(|_| Error::DriverGone)?;
        let shared = Arc::new(Shared::new());
        let (commands, receiver) = mpsc::channel();
        let client = self.client.clone();
        let driver_shared = shared.clone();
        let requests = self.requests.clone();
        std::thread::Builder::new()
            .name("sets3lock".into())
            .spawn(move || drive(engine, client, driver_shared, receiver, requests))
            .map_err(|e| Error::Http(format!("could not start the lock thread: {e}")))?;
        let snapshot = shared.wait_blocking(|s| !matches!(s.phase, Phase::Acquiring), None);
        acquire_outcome(&snapshot)?;
        Ok(Held {
            owner: snapshot.owner.unwrap_or(OwnerId::from_u128(0)),
            url: self.target.url.clone(),
            shared,
            commands,
            released: false,
        })
    }
}

/// A held lock. Renewed on a background thread; released by [`release`](Held::release), or
/// on drop (which blocks until the release is done).
#[derive(Debug)]
pub struct Held {
    owner: OwnerId,
    url: LockUrl,
    shared: Arc<Shared>,
    commands: mpsc::Sender<()>,
    released: bool,
}

impl Held {
    /// This hold's owner id (in the lock record).
    pub fn owner(&self) -> OwnerId {
        self.owner
    }

    /// The ETag of our latest confirmed write.
    pub fn etag(&self) -> Option<ETag> {
        self.shared.get().etag
    }

    /// The lock's address.
    pub fn url(&self) -> &LockUrl {
        &self.url
    }

    /// How long the hold stays valid unless a renewal lands first, by a clock that counts
    /// through system suspend (`None` with a zero lease, or once the hold has ended).
    pub fn remaining_validity(&self) -> Option<std::time::Duration> {
        self.shared.get().remaining(Stamp::now())
    }

    /// Whether the lock is held and valid now.
    pub fn is_held(&self) -> bool {
        self.shared.get().is_held(Stamp::now())
    }

    /// Blocks until the lock is lost or expires, or until `timeout` passes (then `None`).
    pub fn wait_lost(&self, timeout: Option<Duration>) -> Option<Loss> {
        let deadline = timeout.map(|t| Stamp::now().plus(t));
        loop {
            let s = self.shared.get();
            let now = Stamp::now();
            if let Some(loss) = loss_of(&s, now) {
                return Some(loss);
            }
            if deadline.is_some_and(|d| now >= d) {
                return None;
            }
            let valid_until = s.valid_until;
            let wake = match (valid_until, deadline) {
                (Some(v), Some(d)) => Some(v.min(d)),
                (v, d) => v.or(d),
            };
            self.shared
                .wait_blocking(|s| loss_settled(s, valid_until), wake);
        }
    }

    /// Releases the lock and reports what the conditional delete found.
    pub fn release(mut self) -> Result<ReleaseOutcome, Error> {
        self.finish()
    }

    fn finish(&mut self) -> Result<ReleaseOutcome, Error> {
        self.released = true;
        self.shared.set_releasing();
        let _ = self.commands.send(());
        let s = self
            .shared
            .wait_blocking(|s| matches!(s.phase, Phase::Ended(_)), None);
        release_outcome(&s)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if !self.released {
            let _ = self.finish();
        }
    }
}

/// Sends what the core asks, feeds back the replies, sleeps until the core's next timer or a
/// release command. Ends when the core is idle.
fn drive(
    mut engine: Engine,
    client: reqwest::blocking::Client,
    shared: Arc<Shared>,
    commands: mpsc::Receiver<()>,
    requests: Arc<AtomicU64>,
) {
    // Whatever happens below (a panic included), the handles must learn that we stopped.
    let _finish = crate::state::FinishOnDrop(shared.clone());
    let mut listening = true;
    loop {
        while let Some(request) = engine.lock.poll_request() {
            let kind = request.intent.kind();
            requests.fetch_add(1, Ordering::Relaxed);
            engine.observe(crate::Observation::Sending(&request));
            let started = std::time::Instant::now();
            let response = match engine.prepare(&request) {
                Ok(prepared) => send_blocking(&client, prepared, kind),
                Err(response) => response,
            };
            engine.answer(&request, response, started.elapsed());
            engine.publish(&shared);
        }
        engine.publish(&shared);
        if engine.lock.is_idle() {
            break;
        }
        // At most a second at a time (see `clock`).
        let wait = engine
            .lock
            .poll_timeout()
            .map(|t| nap_until(engine.to_stamp(t)));
        let command = match (listening, wait) {
            (true, Some(w)) => commands.recv_timeout(w),
            (true, None) => commands.recv().map_err(|_| RecvTimeoutError::Disconnected),
            (false, Some(w)) => {
                std::thread::sleep(w);
                Err(RecvTimeoutError::Timeout)
            }
            (false, None) => break,
        };
        match command {
            Err(RecvTimeoutError::Timeout) => {}
            // A command, or every handle gone: release either way.
            Ok(()) | Err(RecvTimeoutError::Disconnected) => {
                listening = command.is_ok();
                let _ = engine.lock.release(engine.now());
            }
        }
        let now = engine.now();
        engine.lock.handle_timeout(now);
    }
}
