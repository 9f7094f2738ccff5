//! Many locks of one bucket in one process: one HTTP connection pool, one credential source,
//! one store check, and one driver (a task, or a thread) for all of them.

use crate::engine::{driver, Engine};
use crate::held::{Claim, Held};
use crate::hub::Hub;
use crate::locker::check_store;
use crate::mode::Mode;
use crate::state::{Drivers, Shared};
use crate::target::Target;
use crate::tokio::Tokio;
use crate::{Error, S3Options};
use sets3lock::{LockUrl, Wait};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Opens locks on any keys of one bucket, from one client: one connection pool, one
/// credential source, one store check (for the endpoint and bucket), and **one driver for all
/// the locks it holds** (a task on the caller's runtime, or one thread for the blocking mode),
/// each key its own core. A held lock costs its core and its state, not a task or a thread:
/// see the README's per-lock cost table.
///
/// Generic over how it waits: [`tokio::Locks`](crate::tokio::Locks) and
/// [`blocking::Locks`](crate::blocking::Locks). The handles are ordinary [`Held`]s.
#[derive(Debug)]
pub struct Locks<M: Mode> {
    /// The bucket (the key of its URL is a placeholder, never used).
    bucket: Target,
    options: S3Options,
    /// For the store check, which runs in the caller's mode.
    check_http: M::Http,
    /// For the drivers, which all run in the hub.
    http: reqwest::Client,
    hub: Hub,
    requests: Arc<AtomicU64>,
    /// The drivers started and not seen finished: what `shutdown` waits for.
    drivers: Drivers,
}

impl<M: Mode> Locks<M> {
    /// Locks on the bucket of `url` (`s3://bucket`, or any key of it), with these options.
    pub fn new(url: &str, options: S3Options) -> Result<Self, Error> {
        let url = LockUrl::parse(&bucket_url(url))?;
        options.lock.validate()?;
        Ok(Locks {
            bucket: Target::new(url, &options)?,
            check_http: M::http(&options)?,
            http: crate::http::async_client(&options)?,
            options,
            hub: Hub::default(),
            requests: Arc::new(AtomicU64::new(0)),
            drivers: Drivers::default(),
        })
    }

    /// The bucket's name.
    pub fn bucket(&self) -> &str {
        self.bucket.url.bucket()
    }

    /// How many S3 requests the locks of this client have sent so far.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Acquires the lock at `key`: a core for it, driven by the hub; waits until it holds the
    /// lock or the acquisition ends.
    pub(crate) async fn acquire_as(&self, key: &str, wait: Wait) -> Result<Held<M>, Error> {
        let wait = self.check_store(key, wait).await?;
        let (claim, url) = self.start(key, wait, None)?;
        self.acquired(claim, url).await
    }

    /// The store check, for the endpoint and bucket (a no-op once passed), run beside `key`
    /// within the wait's time: the wait that is left.
    pub(crate) async fn check_store(&self, key: &str, wait: Wait) -> Result<Wait, Error> {
        let target = self.target(key)?;
        check_store::<M>(&self.check_http, &target, &self.options, wait).await
    }

    fn target(&self, key: &str) -> Result<Target, Error> {
        let url = LockUrl::parse(&format!("s3://{}/{key}", self.bucket()))?;
        Ok(self.bucket.for_key(url))
    }

    /// Starts acquiring the lock at `key` in the hub, ringing `bell` on every change;
    /// dropping the claim cancels the acquisition (or releases the lock).
    pub(crate) fn start(
        &self,
        key: &str,
        wait: Wait,
        bell: Option<Arc<Shared>>,
    ) -> Result<(Claim<M>, LockUrl), Error> {
        let target = Arc::new(self.target(key)?);
        let url = target.url.clone();
        let engine = Engine::acquiring(target, &self.options, wait, self.requests.clone(), bell)?;
        let shared = engine.shared().clone();
        self.hub
            .run::<M>(Box::pin(driver::<Tokio>(engine, self.http.clone())))?;
        self.drivers.track(shared.clone());
        Ok((Claim::<M>::new(shared), url))
    }

    /// The outcome of the acquisition `claim` (of the lock at `url`): a handle, or why not.
    pub(crate) async fn acquired(&self, claim: Claim<M>, url: LockUrl) -> Result<Held<M>, Error> {
        Held::when_acquired(claim, url, &self.options.lock).await
    }

    /// Waits until every driver started so far has finished.
    pub(crate) async fn settle(&self) {
        self.drivers.settle::<M>().await;
    }
}

/// `s3://bucket` from `s3://bucket`, `s3://bucket/` or `s3://bucket/any/key`, with a
/// placeholder key (a lock URL needs one).
fn bucket_url(url: &str) -> String {
    let rest = url.strip_prefix("s3://").unwrap_or(url);
    let bucket = rest.split('/').next().unwrap_or(rest);
    format!("s3://{bucket}/-")
}
