//! How the drivers wait: on an async [`Runtime`] (tokio's, or yours), or on threads (the
//! blocking mode).
//!
//! Everything else (the core, the stores, the loop that sends and feeds back, the handle's
//! view of the lock) is written once, generic over a [`Mode`]. Every [`Runtime`] is a mode;
//! the blocking mode's "futures" do their waiting inside `poll` and are run to completion by
//! a plain `block_on` (see `threads.rs`), so the async code is the one body of both.

use crate::driver::clock::{nap_until, Stamp};
use crate::driver::http::Io;
use crate::driver::state::{Shared, Snapshot};
use crate::rt::Runtime;
use crate::Error;
use core::future::Future;

/// How a [`Locker`](crate::Locker) and its [`Held`](crate::Held) handles wait: any async
/// [`Runtime`] (tokio's is `generic::Tokio`; the handles' methods are async)
/// or [`Blocking`](crate::blocking::Blocking) (a thread drives each lock; they block).
pub trait Mode: sealed::Waiting {}

impl<R: Runtime> Mode for R {}

pub(crate) mod sealed {
    use super::*;

    /// What a mode does its own way. Public in a private module so that nobody else can
    /// implement it; the types it names are likewise unnameable outside the crate.
    pub trait Waiting: Send + Sync + Sized + 'static {
        /// The mode a [`Locks`](crate::Locks) runs its drivers in: this one, or for the
        /// blocking mode, tokio on a thread of its own (with the `tokio` feature).
        type Hub: Mode;

        /// Whether a `Locks` drives its locks in one hub (a future polling them all), or each
        /// on its own thread (the blocking mode without tokio: its futures block in `poll`).
        const HUB: bool = true;

        /// Whether a lock's acquisition is driven on the thread that waits for it, the rest
        /// on a driver thread of `threads.rs` (see `engine::launch`): only where nothing can
        /// abandon that wait midway. A blocking call runs to its end; an async one may be
        /// dropped at any await, which would drop a request in flight with it.
        const DRIVE_HERE: bool = false;

        /// Waits until `done` holds for the shared state, the driver has finished, or
        /// `deadline` (by the suspend-aware clock) has passed; returns the state as it is then.
        fn wait(
            shared: &Shared,
            done: impl Fn(&Snapshot) -> bool + Send,
            deadline: Option<Stamp>,
        ) -> impl Future<Output = Snapshot> + Send;

        /// Sleeps until `deadline` by the suspend-aware clock.
        fn sleep_until(deadline: Stamp) -> impl Future<Output = ()> + Send;

        /// Runs a driver to its end in the background.
        fn spawn(driver: impl Future<Output = ()> + Send + 'static) -> Result<(), Error>;

        /// Runs a hub (see `hub.rs`) of `Self::Hub` drivers to its end in the background.
        fn spawn_hub(hub: impl Future<Output = ()> + Send + 'static) -> Result<(), Error>;

        /// What dropping a handle (or an acquisition) does, after asking for the release.
        fn dropped(shared: &Shared);

        /// How this mode's stores send: its HTTP client and its pause.
        fn io() -> Io;
    }
}

impl<R: Runtime> sealed::Waiting for R {
    type Hub = R;

    async fn wait(
        shared: &Shared,
        done: impl Fn(&Snapshot) -> bool + Send,
        deadline: Option<Stamp>,
    ) -> Snapshot {
        loop {
            // Registered before reading, so that a change in between still wakes us.
            let changed = shared.signal.listen();
            let seen = shared.get();
            if done(&seen) || seen.finished {
                return seen;
            }
            match deadline {
                None => changed.await,
                Some(d) => {
                    if Stamp::now() >= d {
                        return seen;
                    }
                    // At most a second at a time (see `clock`).
                    let nap = core::pin::pin!(R::sleep(nap_until(d)));
                    let _ = futures_util::future::select(changed, nap).await;
                }
            }
        }
    }

    async fn sleep_until(deadline: Stamp) {
        loop {
            // At most a second at a time (see `clock`).
            let nap = nap_until(deadline);
            if nap.is_zero() {
                return;
            }
            R::sleep(nap).await;
        }
    }

    fn spawn(driver: impl Future<Output = ()> + Send + 'static) -> Result<(), Error> {
        R::spawn(driver)
    }

    fn spawn_hub(hub: impl Future<Output = ()> + Send + 'static) -> Result<(), Error> {
        R::spawn(hub)
    }

    fn dropped(_: &Shared) {
        // The release goes on in the task: a drop cannot wait in async code.
    }

    fn io() -> Io {
        Io {
            http: R::http,
            pause: |d| Box::pin(R::sleep(d)),
            blocks: false,
        }
    }
}
