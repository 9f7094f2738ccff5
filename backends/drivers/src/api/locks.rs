//! Many locks of one bucket in one process: one HTTP connection pool, one credential source,
//! one store check, and one driver (a task, or a thread) for all of them.

use crate::api::held::{Claim, Held};
use crate::api::locker::check_store;
use crate::api::open::{bucket_url, open_store};
use crate::driver::engine::{driver, Engine};
use crate::driver::hub::Hub;
use crate::driver::mode::sealed::Waiting as _;
use crate::driver::mode::Mode;
use crate::driver::state::{Drivers, Shared};
use crate::driver::store::Store;
use crate::{Error, Options};
use sets3lock_proto::{LockUrl, Scheme, Wait};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Opens locks on any keys of one bucket, from one client: one connection pool, one
/// credential source, one store check (for the endpoint and bucket), and **one driver for all
/// the locks it holds** (a task on the caller's runtime, or one thread for the blocking mode),
/// each key its own core. A held lock costs its core and its state, not a task or a thread:
/// see the per-lock cost table in docs/BENCHMARKS.md.
///
/// Generic over how it waits: [`tokio::Locks`](crate::Locks) and
/// [`blocking::Locks`](crate::blocking::Locks). The handles are ordinary [`Held`]s.
#[derive(Debug)]
pub struct Locks<M: Mode> {
    scheme: Scheme,
    bucket: String,
    options: Options,
    /// For the store check, which runs in the caller's mode.
    check: Arc<dyn Store>,
    /// For the drivers, which all run in the hub (async, whatever the caller's mode).
    store: Arc<dyn Store>,
    hub: Hub,
    requests: Arc<AtomicU64>,
    /// The drivers started and not seen finished: what `shutdown` waits for.
    drivers: Drivers,
    /// By key: the highest fencing token its drivers have seen there (0: none). Each new
    /// acquisition of the key grants above it (see `Locker`'s).
    tokens: Mutex<HashMap<String, Arc<AtomicU64>>>,
    mode: core::marker::PhantomData<M>,
}

impl<M: Mode> Locks<M> {
    /// The options these locks were opened with.
    pub(crate) fn options(&self) -> &Options {
        &self.options
    }

    /// Locks on the bucket of `url` (`s3://bucket`, or any key of it; `az://container` and
    /// `gs://bucket` with their features), with these options.
    pub fn new(url: &str, options: Options) -> Result<Self, Error> {
        let url = LockUrl::parse(&bucket_url(url))?;
        options.lock.validate()?;
        let (scheme, bucket) = (url.scheme(), url.bucket());
        Ok(Locks {
            check: open_store(scheme, bucket, &options, M::io())?,
            store: open_store(scheme, bucket, &options, <M::Hub>::io())?,
            scheme,
            bucket: bucket.to_owned(),
            options,
            hub: Hub::default(),
            requests: Arc::new(AtomicU64::new(0)),
            drivers: Drivers::default(),
            tokens: Mutex::default(),
            mode: core::marker::PhantomData,
        })
    }

    /// The bucket's name.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// How many store requests the locks of this client have sent so far.
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
        let url = self.url(key)?;
        check_store(self.check.as_ref(), url.key(), &self.options, wait).await
    }

    fn url(&self, key: &str) -> Result<LockUrl, Error> {
        Ok(LockUrl::in_store(self.scheme, &self.bucket, key)?)
    }

    /// Starts acquiring the lock at `key` in the hub, ringing `bell` on every change;
    /// dropping the claim cancels the acquisition (or releases the lock).
    pub(crate) fn start(
        &self,
        key: &str,
        wait: Wait,
        bell: Option<Arc<Shared>>,
    ) -> Result<(Claim<M>, LockUrl), Error> {
        let url = self.url(key)?;
        let mut engine = Engine::acquiring(
            self.store.clone(),
            url.clone(),
            &self.options,
            wait,
            self.requests.clone(),
            bell,
        )?;
        if let Ok(mut tokens) = self.tokens.lock() {
            engine.remember_tokens(tokens.entry(key.to_owned()).or_default().clone());
        }
        let shared = engine.shared().clone();
        match M::HUB {
            true => self.hub.run::<M>(Box::pin(driver::<M::Hub>(engine)))?,
            false => M::spawn(driver::<M::Hub>(engine))?,
        }
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
