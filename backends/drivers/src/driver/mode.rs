//! The one thing the two drivers do differently: how they wait.
//!
//! Everything else (the core, the stores, the loop that sends and feeds back, the handle's
//! view of the lock) is written once, generic over a [`Mode`]. A mode says whether its
//! requests block, how the shared state is waited on, and how the driver runs. The blocking mode's "futures" do their waiting inside `poll` and are run to
//! completion by a plain `block_on` (see `blocking.rs`), so the async code is the one body of
//! both drivers.

use crate::driver::clock::Stamp;
use crate::driver::state::{Shared, Snapshot};
use crate::Error;
use core::future::Future;

/// How a [`Locker`](crate::Locker) and its [`Held`](crate::Held) handles wait:
/// [`Tokio`](crate::generic::Tokio) (a tokio task drives the lock; the handles' methods are
/// async) or [`Blocking`](crate::blocking::Blocking) (a thread drives it; they block).
///
/// Sealed: these two are the modes.
pub trait Mode: sealed::Waiting {}

pub(crate) mod sealed {
    use super::*;

    /// What a mode does its own way. Public in a private module so that nobody else can
    /// implement it; the types it names are likewise unnameable outside the crate.
    pub trait Waiting: Send + Sync + Sized + 'static {
        /// Whether this mode's requests block the thread that sends them (so its stores
        /// use a blocking HTTP client).
        const BLOCKING: bool;

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

        /// Runs a hub (see `hub.rs`) to its end in the background, with a tokio runtime for
        /// its timers and its HTTP: on the caller's runtime (async), or on a thread of its own
        /// with a runtime of its own (blocking).
        fn spawn_hub(hub: impl Future<Output = ()> + Send + 'static) -> Result<(), Error>;

        /// What dropping a handle (or an acquisition) does, after asking for the release.
        fn dropped(shared: &Shared);
    }
}
