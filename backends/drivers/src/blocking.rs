//! The blocking driver: the handle's methods block, and each held lock is driven by a thread.
//!
//! An acquisition is driven on the thread that asked for it, which waits for it anyway; once
//! the lock is held (or an acquisition that ended has a late write to clean up), a thread of
//! its own takes over, found before the first request. That thread is done once nothing of
//! ours is left in flight; it then waits up to 10 s for the next lock to drive rather than
//! ending at once (unless 16 free threads wait already). Dropping a handle releases the lock
//! before the drop returns; [`Locker::with_lock`] also waits out a cleanup of writes that
//! landed late, which a process about to exit should not leave behind.

// The driver and the handle run the same async code as the tokio driver: this mode's futures
// do their waiting inside `poll` (blocking HTTP, a condition variable), so `block_on` runs
// them to completion without a runtime.

use crate::driver::clock::{nap_until, Stamp};
use crate::driver::http::Io;
use crate::driver::mode::{sealed::Waiting, Mode};
use crate::driver::state::{Shared, Snapshot, Standing};
use crate::driver::threads::{self, block_on};
use crate::driver::ureq_http::Ureq;
use crate::{Error, Loss};
use core::future::Future;
use core::time::Duration;
use sets3lock_proto::{ReleaseOutcome, Wait};

/// The blocking mode: a thread drives the lock.
#[derive(Clone, Copy, Debug)]
pub struct Blocking;

impl Mode for Blocking {}

impl Waiting for Blocking {
    // Many locks of one `Locks` share a thread: a tokio runtime of its own runs their drivers.
    #[cfg(feature = "tokio")]
    type Hub = crate::generic::Tokio;
    // Without tokio, each lock of a `Locks` is driven on a thread of its own.
    #[cfg(not(feature = "tokio"))]
    type Hub = Blocking;
    #[cfg(not(feature = "tokio"))]
    const HUB: bool = false;
    // The caller's thread is blocked until the acquisition ends: it drives it.
    const DRIVE_HERE: bool = true;

    async fn wait(
        shared: &Shared,
        done: impl Fn(&Snapshot) -> bool + Send,
        deadline: Option<Stamp>,
    ) -> Snapshot {
        let mut seen = shared.lock();
        loop {
            if done(&seen) || seen.finished {
                return seen.clone();
            }
            // Poisoned: see `Shared::lock`.
            seen = match deadline {
                None => shared.changed.wait(seen).unwrap_or_else(|e| e.into_inner()),
                Some(d) => {
                    if Stamp::now() >= d {
                        return seen.clone();
                    }
                    // At most a second at a time (see `clock`).
                    let nap = nap_until(d);
                    let woken = shared.changed.wait_timeout(seen, nap);
                    woken.unwrap_or_else(|e| e.into_inner()).0
                }
            };
        }
    }

    async fn sleep_until(deadline: Stamp) {
        loop {
            // At most a second at a time (see `clock`).
            let nap = nap_until(deadline);
            if nap.is_zero() {
                return;
            }
            std::thread::sleep(nap);
        }
    }

    fn spawn(driver: impl Future<Output = ()> + Send + 'static) -> Result<(), Error> {
        // On a thread of its own: a waiting one if a driver has just finished, else a new one.
        threads::start(Box::pin(driver)).map_err(|source| Error::Thread {
            name: "lock driver",
            source,
        })
    }

    #[cfg(feature = "tokio")]
    fn spawn_hub(hub: impl Future<Output = ()> + Send + 'static) -> Result<(), Error> {
        let thread = |source| Error::Thread {
            name: "lock hub",
            source,
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(thread)?;
        std::thread::Builder::new()
            .name("sets3lock-hub".into())
            .spawn(move || runtime.block_on(hub))
            .map(drop)
            .map_err(thread)
    }

    #[cfg(not(feature = "tokio"))]
    fn spawn_hub(hub: impl Future<Output = ()> + Send + 'static) -> Result<(), Error> {
        // Not used: without tokio, `HUB` is false and each lock gets a thread (`spawn`).
        Blocking::spawn(hub)
    }

    fn dropped(shared: &Shared) {
        // The release (or the cancellation) is done before the drop returns.
        let ended = |s: &Snapshot| matches!(s.standing, Standing::Ended { .. });
        block_on(Blocking::wait(shared, ended, None));
    }

    fn io() -> Io {
        io()
    }
}

/// How the blocking mode's stores send: a blocking HTTP client, and the thread's sleep.
pub(crate) fn io() -> Io {
    Io {
        http: |settings| Ok(std::sync::Arc::new(Ureq::new(settings)?)),
        pause: |d| Box::pin(async move { std::thread::sleep(d) }),
        blocks: true,
    }
}

/// Opens locks on S3, Azure Blob Storage or Google Cloud Storage from blocking code.
///
/// [`with_lock`](Locker::with_lock) is the simple, complete use: it acquires, runs the
/// critical section, releases, and returns once nothing of ours is left in flight.
///
/// ```no_run
/// use sets3lock::{blocking::Locker, Wait};
/// # fn run() -> Result<(), sets3lock::Error> {
/// let locker = Locker::from_env("s3://my-bucket/locks/nightly")?;
/// let ((), outcome) = locker.with_lock(Wait::Forever, |held| {
///     // ... the critical section, checking held.is_held() before irreversible steps ...
/// })?;
/// println!("{outcome:?}");
/// # Ok(()) }
/// ```
pub type Locker = crate::generic::Locker<Blocking>;

/// A held lock. Renewed on a thread of its own; released by
/// [`release`](crate::generic::Held::release), or on drop (which blocks until the release is done).
pub type Held = crate::generic::Held<Blocking>;

impl crate::generic::Locker<Blocking> {
    /// Acquires the lock, blocking until it is held or the wait ends. The returned handle
    /// renews the lease on a background thread until it is released or dropped.
    pub fn acquire(&self, wait: Wait) -> Result<Held, Error> {
        block_on(self.acquire_as(wait))
    }

    /// Continues the hold `handle` names ([`Held::handle`](crate::generic::Held::handle), or
    /// `sets3lock acquire`'s output), in this process: reads the record, renews it with
    /// `If-Match` on what it read, and returns an ordinary handle renewed in the background
    /// from then on (with the handle's lease). Fails with [`Error::HoldEnded`] if the hold was
    /// taken over, deleted, released, or is older than its lease by the store's clock; with
    /// [`Error::HandleElsewhere`] if the handle names another lock; with
    /// [`Error::HoldInUse`] if the hold has lease 0 and its record is not parked (a process
    /// running under it would never learn of us), or if this adoption would write lease 0
    /// over an unparked record with a lease.
    ///
    /// If two processes continue one hold with a lease at once, the last to adopt it keeps
    /// it: the other learns it lost the lock at its next renewal ([`Loss::Lost`]).
    ///
    /// ```no_run
    /// # fn run() -> Result<(), sets3lock::Error> {
    /// use sets3lock::blocking::Locker;
    /// let handle: sets3lock::proto::Handle = std::env::var("SETS3LOCK_HANDLE").unwrap_or_default()
    ///     .parse().expect("a handle from `sets3lock acquire`");
    /// let locker = Locker::from_env(&handle.url.to_string())?;
    /// let held = locker.adopt(&handle)?;
    /// // ... work under the lock; it is renewed meanwhile ...
    /// held.release()?;
    /// # Ok(()) }
    /// ```
    pub fn adopt(&self, handle: &sets3lock_proto::Handle) -> Result<Held, Error> {
        block_on(self.adopt_as(handle))
    }

    /// Renews the hold `handle` names once, and leaves it held with nobody renewing it: for
    /// runtimes that freeze between invocations (a serverless function renews on each
    /// invocation). Returns how long the hold is valid now, by this process's clock (`None`
    /// with a zero lease); errors as [`adopt`](Self::adopt).
    pub fn renew_handle(
        &self,
        handle: &sets3lock_proto::Handle,
    ) -> Result<Option<Duration>, Error> {
        block_on(self.renew_handle_as(handle))
    }

    /// Releases the hold `handle` names, and reports what it found, as
    /// [`Held::release`](crate::generic::Held::release) does; [`ReleaseOutcome::Overdue`] if it was
    /// still ours but older than its lease. Errors as [`adopt`](Self::adopt).
    pub fn release_handle(
        &self,
        handle: &sets3lock_proto::Handle,
    ) -> Result<ReleaseOutcome, Error> {
        block_on(self.release_handle_as(handle))
    }

    /// Acquires the lock, runs `work` with the handle, releases, and returns `work`'s result
    /// with what the release found, once the driver has finished (a cleanup of writes that
    /// landed late included). A hold lost while `work` ran is an error
    /// ([`Error::AlreadyLost`], [`Error::AlreadyExpired`]).
    pub fn with_lock<T>(
        &self,
        wait: Wait,
        work: impl FnOnce(&Held) -> T,
    ) -> Result<(T, ReleaseOutcome), Error> {
        block_on(self.scoped(wait, async move |held: &Held| work(held)))
    }
}

impl crate::generic::Held<Blocking> {
    /// Blocks until the lock is lost or expires, or until `timeout` passes (then `None`).
    pub fn wait_lost(&self, timeout: Option<Duration>) -> Option<Loss> {
        block_on(self.wait_loss(timeout.map(|t| Stamp::now().plus(t))))
    }

    /// Releases the lock and reports what the conditional delete found.
    pub fn release(self) -> Result<ReleaseOutcome, Error> {
        block_on(self.end())
    }

    /// Lets go of the hold without releasing it, and returns its handle: the driver stops
    /// renewing it, and the lock object stays with its lease running, for another process to
    /// continue ([`Locker::adopt`]) or release ([`Locker::release_handle`]). Fails if the
    /// hold had already ended.
    pub fn detach(self) -> Result<sets3lock_proto::Handle, Error> {
        block_on(self.let_go())
    }
}

/// Watches a lock from blocking code: an iterator over the holder now, then each change.
///
/// ```no_run
/// use sets3lock::{blocking::Watcher, Options, Scheme, WatchConfig, WatchEvent};
/// # fn run() -> Result<(), sets3lock::Error> {
/// let watcher = Watcher::new("s3://my-bucket/locks/leader", Options::from_env(Scheme::S3)?,
///     WatchConfig::default())?;
/// for event in watcher {
///     if let WatchEvent::Changed(sighting) = event {
///         println!("{:?}", sighting.holder());
///     }
/// }
/// # Ok(()) }
/// ```
pub type Watcher = crate::generic::Watcher<Blocking>;

/// A watch on a hold's loss, from [`Held::loss_watch`](crate::generic::Held::loss_watch).
pub type LossWatch = crate::generic::LossWatch<Blocking>;

impl crate::generic::LossWatch<Blocking> {
    /// Blocks until the hold is lost, expires or ends (then the loss), or for at most
    /// `timeout` (then `None`).
    pub fn wait_lost(&self, timeout: Option<Duration>) -> Option<Loss> {
        block_on(self.wait(timeout.map(|t| Stamp::now().plus(t))))
    }
}

impl Iterator for crate::generic::Watcher<Blocking> {
    type Item = sets3lock_proto::WatchEvent;

    /// Blocks until the next change (the first: the holder now) or trouble; `None` once the
    /// watch has stopped on a refusal that retrying cannot fix.
    fn next(&mut self) -> Option<sets3lock_proto::WatchEvent> {
        block_on(self.next_event())
    }
}

/// A semaphore from blocking code: at most N holders at once (see [`crate::generic::Semaphore`]).
///
/// ```no_run
/// use sets3lock::{blocking::Semaphore, Options, Scheme, Wait};
/// # fn run() -> Result<(), sets3lock::Error> {
/// let deploys = Semaphore::new("s3://my-bucket/deploys", 3, Options::from_env(Scheme::S3)?)?;
/// let held = deploys.acquire(Wait::Forever)?;
/// println!("deploying in slot {:?}", held.slot());
/// held.release()?;
/// # Ok(()) }
/// ```
pub type Semaphore = crate::generic::Semaphore<Blocking>;

impl crate::generic::Semaphore<Blocking> {
    /// Takes a slot: the handle renews it in a thread until released or dropped.
    pub fn acquire(&self, wait: Wait) -> Result<Held, Error> {
        block_on(self.acquire_as(wait))
    }
}

/// Many locks of one bucket from blocking code, all driven by one thread (see
/// [`crate::generic::Locks`]).
///
/// ```no_run
/// use sets3lock::{blocking::Locks, Options, Scheme, Wait};
/// # fn run() -> Result<(), sets3lock::Error> {
/// let locks = Locks::new("s3://my-bucket", Options::from_env(Scheme::S3)?)?;
/// let a = locks.acquire("jobs/a", Wait::No)?;
/// a.release()?;
/// # Ok(()) }
/// ```
pub type Locks = crate::generic::Locks<Blocking>;

impl crate::generic::Locks<Blocking> {
    /// Acquires the lock at `key` of the bucket; the handle renews it until released or
    /// dropped (a drop releases it before it returns).
    pub fn acquire(&self, key: &str, wait: Wait) -> Result<Held, Error> {
        block_on(self.acquire_as(key, wait))
    }
}

/// Leader election from blocking code (see [`crate::generic::Election`]).
///
/// ```no_run
/// use sets3lock::{blocking::Election, Options, Scheme};
/// # fn run() -> Result<(), sets3lock::Error> {
/// let election = Election::new("s3://my-bucket/leader", "worker-3", Options::from_env(Scheme::S3)?)?;
/// let leadership = election.campaign()?;
/// // ... lead, checking leadership.is_held() before each irreversible step ...
/// leadership.release()?; // resign
/// # Ok(()) }
/// ```
pub type Election = crate::generic::Election<Blocking>;

impl crate::generic::Election<Blocking> {
    /// Campaigns until elected (blocks as long as it takes): the leadership, renewed in a
    /// thread until it is released (resigned) or lost.
    pub fn campaign(&self) -> Result<Held, Error> {
        self.locker().acquire(Wait::Forever)
    }

    /// The leader now (one read).
    pub fn leader(&self) -> Result<sets3lock_proto::Sighting, Error> {
        block_on(self.leader_as())
    }
}
