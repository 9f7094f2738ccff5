//! Opening locks on one object: the part of both drivers' lockers that does not wait.

use crate::api::held::{Claim, Held};
use crate::api::open::open_store;
use crate::driver::clock::Stamp;
use crate::driver::engine::{launch, Engine, Start};
use crate::driver::mode::Mode;
use crate::driver::state::Drivers;
use crate::driver::store::{Sender, Store};
use crate::{Error, Options};
use sets3lock_proto::{Handle, LockUrl, ReleaseOutcome, Resume, Wait};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Opens locks on one object of a store; each [acquisition](crate::Locker::acquire) gets its
/// own background driver and [`Held`] handle.
///
/// Generic over how it waits: use [`Locker`](crate::Locker) (the root's, on tokio) from async
/// code and [`blocking::Locker`](crate::blocking::Locker) from threads. `acquire`, `with_lock`
/// (and the async `shutdown`) are the mode's own; the rest is shared.
///
/// Before its first acquisition it makes sure the store honours conditional writes, as
/// [`Options::store_check`] says (once per process and endpoint and bucket by default), and
/// refuses a store that does not ([`StoreCheck`](crate::StoreCheck)).
#[derive(Debug)]
pub struct Locker<M: Mode> {
    store: Arc<dyn Store>,
    url: LockUrl,
    options: Options,
    requests: Arc<AtomicU64>,
    /// The drivers started and not seen finished: what `shutdown` waits for.
    drivers: Drivers,
    /// The highest fencing token any of its drivers has seen on the key (0: none): each new
    /// acquisition grants above it.
    tokens: Arc<AtomicU64>,
    mode: core::marker::PhantomData<M>,
}

impl<M: Mode> Locker<M> {
    /// A locker for `url` with these options: `s3://bucket/key`, `az://container/key`
    /// (feature `azure`) or `gs://bucket/key` (feature `gcs`); the scheme picks the store.
    ///
    /// When the credentials come from a source that fetches them (a profile's role, SSO, web
    /// identity, a container endpoint, instance metadata, a managed identity, a command), the
    /// blocking face waits here for the first ones and fails with [`Error::NoCredentials`] if
    /// there are none. An async face never blocks its runtime: it fetches them on a thread of
    /// its own, and the first acquisition (or [`ready`](crate::generic::Locker::ready)) waits
    /// for them, and fails with that error instead.
    pub fn new(url: &str, options: Options) -> Result<Self, Error> {
        let url = LockUrl::parse(url)?;
        options.lock.validate()?;
        let store = open_store(url.scheme(), url.bucket(), &options, M::io())?;
        Ok(Locker::on(store, url, options))
    }

    /// A locker for the lock at `key` in a store of your own (see [`Store`]); `url` names it
    /// in messages and in the lock's handles (`LockUrl::in_store`).
    ///
    /// A store used from the blocking mode may block in its futures' `poll`; one used from
    /// the async mode must not.
    pub fn with_store(
        store: Arc<dyn Store>,
        url: LockUrl,
        options: Options,
    ) -> Result<Self, Error> {
        options.lock.validate()?;
        Ok(Locker::on(store, url, options))
    }

    fn on(store: Arc<dyn Store>, url: LockUrl, options: Options) -> Self {
        Locker {
            store,
            url,
            options,
            requests: Arc::new(AtomicU64::new(0)),
            tokens: Arc::new(AtomicU64::new(0)),
            drivers: Drivers::default(),
            mode: core::marker::PhantomData,
        }
    }

    /// A locker for `url` configured from the environment: the variables of the store its
    /// scheme names ([`Options::from_env`]).
    pub fn from_env(url: &str) -> Result<Self, Error> {
        let scheme = LockUrl::parse(url)?.scheme();
        Locker::new(url, Options::from_env(scheme)?)
    }

    /// The lock's address.
    pub fn url(&self) -> &LockUrl {
        &self.url
    }

    /// Who signs the requests: the credential source and when its credentials expire (never
    /// a secret); `None` for a store that does not say.
    pub fn sign_in(&self) -> Option<crate::SignIn> {
        self.store.sign_in()
    }

    /// Waits until the store can sign its requests (see [`new`](Self::new)).
    pub(crate) async fn ready_as(&self) -> Result<(), Error> {
        self.store.ready().await
    }

    /// How many store requests this locker's holds have sent so far.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Acquires the lock: starts a driver, and waits until it holds the lock or the
    /// acquisition ends. Dropped while it waits, it cancels the acquisition (and the driver
    /// removes any write of ours that lands).
    pub(crate) async fn acquire_as(&self, wait: Wait) -> Result<Held<M>, Error> {
        let wait = self.check_store(wait).await?;
        let claim = self.start(wait).await?;
        self.acquired(claim).await
    }

    /// Acquires, runs `work`, releases, and returns once the driver has finished: nothing of
    /// ours is left in flight, whatever happened (a cleanup of late writes included).
    pub(crate) async fn scoped<T>(
        &self,
        wait: Wait,
        work: impl AsyncFnOnce(&Held<M>) -> T,
    ) -> Result<(T, ReleaseOutcome), Error> {
        let wait = self.check_store(wait).await?;
        let claim = self.start(wait).await?;
        let shared = claim.shared().clone();
        let result = match self.acquired(claim).await {
            Ok(held) => {
                let out = work(&held).await;
                held.end().await.map(|outcome| (out, outcome))
            }
            Err(e) => Err(e),
        };
        M::wait(&shared, |_| false, None).await;
        result
    }

    /// The store check, as the options say (a no-op once it has passed), within the wait's
    /// time: returns the wait that is left.
    pub(crate) async fn check_store(&self, wait: Wait) -> Result<Wait, Error> {
        check_store(self.store.as_ref(), self.url.key(), &self.options, wait).await
    }

    /// Waits until every driver this locker started has finished.
    pub(crate) async fn settle(&self) {
        self.drivers.settle::<M>().await;
    }

    /// Continues the hold `handle` names, renewed in the background from now on.
    pub(crate) async fn adopt_as(&self, handle: &Handle) -> Result<Held<M>, Error> {
        self.check_handle(handle)?;
        // The store check judges the handle's mode: a fenced hold never deletes.
        let mut options = self.options.clone();
        options.lock.fenced = handle.token.is_some();
        check_store(self.store.as_ref(), self.url.key(), &options, Wait::Forever).await?;
        let claim = self
            .begin(Start::Adopt(handle.clone(), Resume::Hold))
            .await?;
        let lock = sets3lock_proto::Config {
            lease: handle.lease,
            ..self.options.lock.clone()
        };
        Held::when_acquired(claim, self.url.clone(), &lock).await
    }

    /// Renews the hold `handle` names once, and lets go of it again: how long it is valid
    /// for now (`None` with a zero lease).
    pub(crate) async fn renew_handle_as(
        &self,
        handle: &Handle,
    ) -> Result<Option<core::time::Duration>, Error> {
        let held = self.adopt_as(handle).await?;
        let valid = held.remaining_validity();
        held.let_go().await?;
        Ok(valid)
    }

    /// Releases the hold `handle` names.
    pub(crate) async fn release_handle_as(&self, handle: &Handle) -> Result<ReleaseOutcome, Error> {
        self.check_handle(handle)?;
        let claim = self
            .begin(Start::Adopt(handle.clone(), Resume::Release))
            .await?;
        let shared = claim.shared().clone();
        let ended = |s: &crate::driver::state::Snapshot| {
            matches!(s.standing, crate::driver::state::Standing::Ended { .. })
        };
        let outcome = M::wait(&shared, ended, None).await.released();
        drop(claim);
        outcome
    }

    fn check_handle(&self, handle: &Handle) -> Result<(), Error> {
        if handle.url != self.url {
            return Err(Error::HandleElsewhere {
                handle: handle.url.to_string(),
                locker: self.url.to_string(),
            });
        }
        Ok(())
    }

    /// Starts a driver acquiring the lock; dropping the claim cancels it.
    async fn start(&self, wait: Wait) -> Result<Claim<M>, Error> {
        self.begin(Start::Acquire(wait)).await
    }

    /// Starts a driver doing what `start` says; dropping the claim cancels it (or releases).
    /// In the blocking mode the acquisition (or adoption) is driven on this thread, and is
    /// decided when this returns (see `engine::launch`).
    async fn begin(&self, start: Start) -> Result<Claim<M>, Error> {
        // (Releasing a handle starts here without a store check: see `check_store`.)
        self.store.ready().await?;
        let mut engine = Engine::starting(
            self.store.clone(),
            self.url.clone(),
            &self.options,
            start,
            self.requests.clone(),
            None,
        )?;
        engine.remember_tokens(self.tokens.clone());
        let shared = engine.shared().clone();
        self.drivers.track(shared.clone());
        // Made first, so that however `launch` ends (an error, or a panic while the
        // acquisition is driven on this thread) the claim is dropped after the driver's
        // state is marked finished: its drop then returns at once.
        let claim = Claim::new(shared);
        launch::<M>(engine).await?;
        Ok(claim)
    }

    /// The acquisition's outcome: a handle, or why not.
    async fn acquired(&self, claim: Claim<M>) -> Result<Held<M>, Error> {
        let url = self.url.clone();
        Held::when_acquired(claim, url, &self.options.lock).await
    }
}

/// The store check for `store`'s endpoint and bucket, as `options` say (a no-op once it has
/// passed), run beside `key`, within the wait's time: returns the wait that is left.
pub(crate) async fn check_store(
    store: &dyn Store,
    key: &str,
    options: &Options,
    wait: Wait,
) -> Result<Wait, Error> {
    // An async mode opened the store without waiting for its first credentials: the first
    // acquisition waits for them, as the opening does in the blocking mode, and fails with the
    // same one-line error if there are none.
    store.ready().await?;
    let deadline = match wait {
        Wait::Timeout(d) => Some(Stamp::now().plus(d)),
        Wait::No | Wait::Forever => None,
    };
    let sender =
        Sender::new(store, options.request_timeout, options.observer.as_ref()).until(deadline);
    let (how, fenced) = (&options.store_check, options.lock.fenced);
    crate::driver::store_check::ensure(how, key, &sender, fenced).await?;
    Ok(match deadline {
        Some(d) => Wait::Timeout(d.since(Stamp::now())),
        None => wait,
    })
}
