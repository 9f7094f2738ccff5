//! The async face, re-exported at the crate's root: each lock is driven by a tokio task; the
//! handle's methods are async. (The crate's docs say when the task ends.)

use crate::driver::reqwest_http::ReqwestAsync;
use crate::rt::{HttpClient, HttpSettings, Runtime};
use crate::Error;
use core::future::Future;
use core::time::Duration;
use std::sync::Arc;

/// The async runtime of the crate's root types: a tokio task drives each lock, and reqwest's
/// async client sends its requests.
#[derive(Clone, Copy, Debug)]
pub struct Tokio;

impl Runtime for Tokio {
    fn sleep(duration: Duration) -> impl Future<Output = ()> + Send {
        tokio::time::sleep(duration)
    }

    fn spawn(task: impl Future<Output = ()> + Send + 'static) -> Result<(), Error> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| Error::NoRuntime)?;
        // Not joined: the task ends by itself (see the module docs).
        drop(runtime.spawn(task));
        Ok(())
    }

    fn http(settings: &HttpSettings) -> Result<Arc<dyn HttpClient>, Error> {
        Ok(Arc::new(ReqwestAsync::new(settings)?))
    }
}

/// Opens locks on S3, Azure Blob Storage or Google Cloud Storage from async code.
///
/// [`with_lock`](Locker::with_lock) is the simple, complete use: it acquires, runs the
/// critical section, releases, and returns once nothing of ours is left in flight.
///
/// ```no_run
/// use sets3lock::{Locker, Wait};
/// # async fn run() -> Result<(), sets3lock::Error> {
/// let locker = Locker::from_env("s3://my-bucket/locks/nightly")?;
/// let wait = Wait::Timeout(std::time::Duration::from_secs(60));
/// let ((), outcome) = locker // outcome: Deleted, TakenOver or AlreadyGone
///     .with_lock(wait, async |held| {
///         tokio::select! {
///             _ = async { /* the critical section */ } => {}
///             loss = held.lost() => eprintln!("lock lost ({loss:?}): stopping"),
///         }
///     })
///     .await?;
/// # Ok(()) }
/// ```
pub type Locker = crate::generic::Locker<Tokio>;

/// A held lock. Renewed in the background; released by [`release`](crate::generic::Held::release),
/// or on drop: then the task releases it in the background, without a report, as long as
/// the runtime runs (see the [crate docs](crate)).
pub type Held = crate::generic::Held<Tokio>;

/// A watch on a hold's loss, from [`Held::loss_watch`](crate::generic::Held::loss_watch).
pub type LossWatch = crate::generic::LossWatch<Tokio>;

/// Watches a lock from async code: the holder now, then one event per change.
///
/// ```no_run
/// use sets3lock::{Watcher, Options, Scheme, WatchConfig, WatchEvent};
/// # async fn run() -> Result<(), sets3lock::Error> {
/// let mut watcher = Watcher::new("s3://my-bucket/locks/leader", Options::from_env(Scheme::S3)?,
///     WatchConfig::default())?;
/// while let Some(event) = watcher.next().await {
///     if let WatchEvent::Changed(sighting) = event {
///         println!("{:?}", sighting.holder());
///     }
/// }
/// # Ok(()) }
/// ```
pub type Watcher = crate::generic::Watcher<Tokio>;

/// A semaphore from async code: at most N holders at once (see [`crate::generic::Semaphore`]).
///
/// ```no_run
/// use sets3lock::{Semaphore, Options, Scheme, Wait};
/// # async fn run() -> Result<(), sets3lock::Error> {
/// let deploys = Semaphore::new("s3://my-bucket/deploys", 3, Options::from_env(Scheme::S3)?)?;
/// let held = deploys.acquire(Wait::Forever).await?;
/// println!("deploying in slot {:?}", held.slot());
/// held.release().await?;
/// # Ok(()) }
/// ```
pub type Semaphore = crate::generic::Semaphore<Tokio>;

/// Many locks of one bucket from async code, all driven by one task (see [`crate::generic::Locks`]).
///
/// ```no_run
/// use sets3lock::{Locks, Options, Scheme, Wait};
/// # async fn run() -> Result<(), sets3lock::Error> {
/// let locks = Locks::new("s3://my-bucket", Options::from_env(Scheme::S3)?)?;
/// let a = locks.acquire("jobs/a", Wait::No).await?;
/// let b = locks.acquire("jobs/b", Wait::No).await?;
/// a.release().await?;
/// b.release().await?;
/// # Ok(()) }
/// ```
pub type Locks = crate::generic::Locks<Tokio>;

/// Leader election from async code (see [`crate::generic::Election`]).
///
/// ```no_run
/// use sets3lock::{Election, Health, Options, Scheme, WatchConfig};
/// # async fn run() -> Result<(), sets3lock::Error> {
/// let election = Election::new("s3://my-bucket/leader", "10.0.0.7:8080", Options::from_env(Scheme::S3)?)?;
/// let leadership = election.campaign().await?; // leading from here
/// tokio::select! {
///     _ = async { /* lead: and fail readiness when leadership.health() is not Renewing */ } => {}
///     loss = leadership.lost() => eprintln!("no longer leading: {loss:?}"),
/// }
/// leadership.release().await?; // resign
/// # Ok(()) }
/// ```
pub type Election = crate::generic::Election<Tokio>;
