//! The async driver: the core run by a tokio task.

use crate::clock::{nap_until, Stamp};
use crate::engine::Engine;
use crate::hold::{acquire_outcome, loss_of, loss_settled, release_outcome, Loss, WaitFor};
use crate::http::{async_client, send_async};
use crate::state::{Phase, Shared};
use crate::target::Target;
use crate::{Error, S3Options};
use sets3lock::{ETag, LockUrl, OwnerId, ReleaseOutcome};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc;

/// Opens locks on S3 from async code.
///
/// ```no_run
/// use sets3lock_s3::{tokio::Locker, WaitFor};
/// # async fn run() -> Result<(), sets3lock_s3::Error> {
/// let locker = Locker::from_env("s3://my-bucket/locks/nightly")?;
/// let held = locker.acquire(WaitFor::Timeout(std::time::Duration::from_secs(60))).await?;
/// tokio::select! {
///     _ = async { /* the critical section */ } => {}
///     loss = held.lost() => eprintln!("lock lost ({loss:?}): stopping"),
/// }
/// let outcome = held.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Locker {
    target: Arc<Target>,
    options: S3Options,
    client: reqwest::Client,
    requests: Arc<AtomicU64>,
    drivers: std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl Locker {
    /// A locker for `url` (`s3://bucket/key`) with these options.
    pub fn new(url: &str, options: S3Options) -> Result<Locker, Error> {
        let target = Target::open(url, &options)?;
        let client = async_client(options.request_timeout)?;
        Ok(Locker {
            target,
            options,
            client,
            requests: Arc::new(AtomicU64::new(0)),
            drivers: std::sync::Mutex::new(Vec::new()),
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

    /// Waits until every background driver of this locker has finished: releases and
    /// cleanups done (a cancelled acquisition whose write landed late is removed). Call it
    /// before the process exits.
    pub async fn shutdown(&self) {
        let drivers = match self.drivers.lock() {
            Ok(mut d) => std::mem::take(&mut *d),
            Err(_) => return,
        };
        for driver in drivers {
            let _ = driver.await;
        }
    }

    /// How many S3 requests this locker's holds have sent so far.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Acquires the lock. The returned handle renews the lease in the background until it is
    /// released or dropped. Dropping this future while it waits cancels the acquisition (and
    /// removes any write of ours that lands).
    pub async fn acquire(&self, wait: WaitFor) -> Result<Held, Error> {
        let mut engine = Engine::new(self.target.clone(), &self.options)?;
        let now = engine.now();
        engine
            .lock
            .acquire(now, Engine::unix_ms(), wait.to_core(now))
            .map_err(|_| Error::DriverGone)?;
        let shared = Arc::new(Shared::new());
        let (commands, receiver) = mpsc::unbounded_channel();
        let driver = tokio::spawn(drive(
            engine,
            self.client.clone(),
            shared.clone(),
            receiver,
            self.requests.clone(),
        ));
        if let Ok(mut drivers) = self.drivers.lock() {
            drivers.retain(|d| !d.is_finished());
            drivers.push(driver);
        }
        let snapshot = shared
            .wait_async(|s| !matches!(s.phase, Phase::Acquiring), None)
            .await;
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

/// A held lock. Renewed in the background; released by [`release`](Held::release), or on
/// drop (then in the background, without a report: prefer `release`).
#[derive(Debug)]
pub struct Held {
    owner: OwnerId,
    url: LockUrl,
    shared: Arc<Shared>,
    commands: mpsc::UnboundedSender<()>,
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

    /// Resolves when the lock is lost or expires: stop relying on it then. Never resolves
    /// while the hold is healthy.
    pub async fn lost(&self) -> Loss {
        loop {
            let s = self.shared.get();
            if let Some(loss) = loss_of(&s, Stamp::now()) {
                return loss;
            }
            let valid_until = s.valid_until;
            self.shared
                .wait_async(|s| loss_settled(s, valid_until), valid_until)
                .await;
        }
    }

    /// Releases the lock and reports what the conditional delete found.
    pub async fn release(mut self) -> Result<ReleaseOutcome, Error> {
        self.released = true;
        self.shared.set_releasing();
        let _ = self.commands.send(());
        let s = self
            .shared
            .wait_async(|s| matches!(s.phase, Phase::Ended(_)), None)
            .await;
        release_outcome(&s)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if !self.released {
            self.shared.set_releasing();
            let _ = self.commands.send(());
        }
    }
}

/// Sends what the core asks, feeds back the replies, sleeps until the core's next timer or a
/// release command. Ends when the core is idle.
async fn drive(
    mut engine: Engine,
    client: reqwest::Client,
    shared: Arc<Shared>,
    mut commands: mpsc::UnboundedReceiver<()>,
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
                Ok(prepared) => send_async(&client, prepared, kind).await,
                Err(response) => response,
            };
            engine.answer(&request, response, started.elapsed());
            engine.publish(&shared);
        }
        engine.publish(&shared);
        if engine.lock.is_idle() {
            break;
        }
        let wake = engine.lock.poll_timeout().map(|t| engine.to_stamp(t));
        tokio::select! {
            _ = nap(wake) => {}
            command = commands.recv(), if listening => {
                // A command, or every handle gone: release either way.
                listening = command.is_some();
                let _ = engine.lock.release(engine.now());
            }
        }
        let now = engine.now();
        engine.lock.handle_timeout(now);
    }
}

/// Sleeps towards `t` (at most a second at a time: see `clock`); forever without one.
async fn nap(t: Option<Stamp>) {
    match t {
        Some(t) => tokio::time::sleep(nap_until(t)).await,
        None => std::future::pending().await,
    }
}
