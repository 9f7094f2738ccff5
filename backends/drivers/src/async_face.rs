//! The async face: the waiting methods of every handle type on an async [`Runtime`], tokio's
//! (the crate's root types) or yours (`generic::Locker<YourRuntime>`).

use crate::rt::Runtime;
use crate::{Error, Loss};
use core::time::Duration;
use sets3lock_proto::{ReleaseOutcome, Wait};

impl<R: Runtime> crate::generic::Locker<R> {
    /// Waits until the store can sign its requests: when its credentials come from a source
    /// that fetches them, until the first ones are at hand. Acquiring waits for this anyway;
    /// call it to learn of missing credentials before then. Fails with
    /// [`Error::NoCredentials`], whose one line names every source tried and the fix.
    ///
    /// ```no_run
    /// # #[cfg(feature = "tokio")] mod tokio_face {
    /// # async fn run() -> Result<(), sets3lock::Error> {
    /// let locker = sets3lock::Locker::from_env("s3://my-bucket/locks/nightly")?; // never blocks
    /// locker.ready().await?; // the first credentials, fetched meanwhile on a thread of their own
    /// # Ok(()) } }
    /// ```
    pub async fn ready(&self) -> Result<(), Error> {
        self.ready_as().await
    }

    /// Acquires the lock. The returned handle renews the lease in the background until it is
    /// released or dropped. Dropping this future while it waits cancels the acquisition (and
    /// the task removes any write of ours that lands).
    pub async fn acquire(&self, wait: Wait) -> Result<crate::generic::Held<R>, Error> {
        self.acquire_as(wait).await
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
    /// # #[cfg(feature = "tokio")] mod tokio_face {
    /// # async fn run() -> Result<(), sets3lock::Error> {
    /// use sets3lock::Locker;
    /// let handle: sets3lock::proto::Handle = std::env::var("SETS3LOCK_HANDLE").unwrap_or_default()
    ///     .parse().expect("a handle from `sets3lock acquire`");
    /// let locker = Locker::from_env(&handle.url.to_string())?;
    /// let held = locker.adopt(&handle).await?;
    /// // ... work under the lock; it is renewed meanwhile ...
    /// held.release().await?;
    /// # Ok(()) } }
    /// ```
    pub async fn adopt(
        &self,
        handle: &sets3lock_proto::Handle,
    ) -> Result<crate::generic::Held<R>, Error> {
        self.adopt_as(handle).await
    }

    /// Renews the hold `handle` names once, and leaves it held with nobody renewing it: for
    /// runtimes that freeze between invocations (a serverless function renews on each
    /// invocation). Returns how long the hold is valid now, by this process's clock (`None`
    /// with a zero lease); errors as [`adopt`](Self::adopt).
    pub async fn renew_handle(
        &self,
        handle: &sets3lock_proto::Handle,
    ) -> Result<Option<Duration>, Error> {
        self.renew_handle_as(handle).await
    }

    /// Releases the hold `handle` names, and reports what it found, as
    /// [`Held::release`](crate::generic::Held::release) does; [`ReleaseOutcome::Overdue`] if it was
    /// still ours but older than its lease. Errors as [`adopt`](Self::adopt).
    pub async fn release_handle(
        &self,
        handle: &sets3lock_proto::Handle,
    ) -> Result<ReleaseOutcome, Error> {
        self.release_handle_as(handle).await
    }

    /// Acquires the lock, runs `work` with the handle, releases, and returns `work`'s result
    /// with what the release found, once the driver has finished (a cleanup of writes that
    /// landed late included). A hold lost while `work` ran is an error
    /// ([`Error::AlreadyLost`], [`Error::AlreadyExpired`]): `work` should watch
    /// [`Held::lost`](crate::generic::Held::lost).
    pub async fn with_lock<T>(
        &self,
        wait: Wait,
        work: impl AsyncFnOnce(&crate::generic::Held<R>) -> T,
    ) -> Result<(T, ReleaseOutcome), Error> {
        self.scoped(wait, work).await
    }

    /// Waits until every driver this locker started has finished: holds released, and the
    /// cleanups after dropped handles and acquisitions done. Needed only before the runtime
    /// ends, and only after dropping a handle or an acquisition (or while one is held: then
    /// it waits for that hold to end).
    pub async fn shutdown(&self) {
        self.settle().await;
    }
}

impl<R: Runtime> crate::generic::Held<R> {
    /// Resolves when the lock is lost or expires: stop relying on it then. Never resolves
    /// while the hold is healthy.
    pub async fn lost(&self) -> Loss {
        loop {
            if let Some(loss) = self.wait_loss(None).await {
                return loss;
            }
        }
    }

    /// Releases the lock and reports what the conditional delete found.
    pub async fn release(self) -> Result<ReleaseOutcome, Error> {
        self.end().await
    }

    /// Lets go of the hold without releasing it, and returns its handle: the driver stops
    /// renewing it, and the lock object stays with its lease running, for another process to
    /// continue ([`Locker::adopt`](crate::generic::Locker::adopt)) or release
    /// ([`Locker::release_handle`](crate::generic::Locker::release_handle)). Fails if the hold
    /// had already ended.
    pub async fn detach(self) -> Result<sets3lock_proto::Handle, Error> {
        self.let_go().await
    }
}

impl<R: Runtime> crate::generic::LossWatch<R> {
    /// Resolves when the hold is lost, expires or ends (a release shows as
    /// [`Loss::DriverStopped`]).
    pub async fn lost(&self) -> Loss {
        loop {
            if let Some(loss) = self.wait(None).await {
                return loss;
            }
        }
    }
}

impl<R: Runtime> crate::generic::Watcher<R> {
    /// The next change (the first call: the holder now), or trouble reaching the store;
    /// `None` once the watch has stopped on a refusal that retrying cannot fix (it was the
    /// last event). Cancel-safe: a call dropped while a poll was on its way (a `select!` with
    /// another branch) loses nothing; the next call sends that poll again.
    pub async fn next(&mut self) -> Option<sets3lock_proto::WatchEvent> {
        self.next_event().await
    }
}

impl<R: Runtime> crate::generic::Semaphore<R> {
    /// Takes a slot: the handle renews it in the background until released or dropped, like a
    /// lock's. Dropping this future while it waits cancels every slot's acquisition.
    pub async fn acquire(&self, wait: Wait) -> Result<crate::generic::Held<R>, Error> {
        self.acquire_as(wait).await
    }

    /// Waits until every driver this semaphore started has finished (see
    /// [`Locker::shutdown`](crate::generic::Locker)).
    pub async fn shutdown(&self) {
        self.settle().await;
    }
}

impl<R: Runtime> crate::generic::Locks<R> {
    /// Acquires the lock at `key` of the bucket; the handle renews it until released or
    /// dropped (then the hub releases it in the background, as long as the runtime runs).
    pub async fn acquire(&self, key: &str, wait: Wait) -> Result<crate::generic::Held<R>, Error> {
        self.acquire_as(key, wait).await
    }

    /// Waits until every lock started so far has finished (released, cleaned up).
    pub async fn shutdown(&self) {
        self.settle().await;
    }
}

impl<R: Runtime> crate::generic::Election<R> {
    /// Campaigns until elected (waits as long as it takes): the leadership, renewed in the
    /// background until it is released (resigned) or lost.
    pub async fn campaign(&self) -> Result<crate::generic::Held<R>, Error> {
        self.locker().acquire(Wait::Forever).await
    }

    /// The leader now (one read): [`Sighting::Held`](crate::proto::Sighting), with its record
    /// and proclaimed value, or free, or stale.
    pub async fn leader(&self) -> Result<sets3lock_proto::Sighting, Error> {
        self.leader_as().await
    }
}
