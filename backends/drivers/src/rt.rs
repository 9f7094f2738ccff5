//! The runtime seam: what the async drivers need from an async runtime, for running the lock
//! on one this crate does not ship (smol, async-std, glommio, an embedded executor).
//!
//! A [`Runtime`] sleeps, spawns a task, and gives an [`HttpClient`] that sends one request
//! within a time limit. Implement it on a type of yours, and every async type of this crate
//! works on your runtime: `generic::Locker<YourRuntime>`, `generic::Held<YourRuntime>`,
//! `Locks`, `Semaphore`, `Election`, `Watcher`, with the same async methods as the tokio face
//! at the crate's root (which is `generic::Locker<Tokio>`: `generic::Tokio` is this trait's
//! implementation for tokio and reqwest, with the `tokio` feature). The blocking face
//! ([`blocking`](crate::blocking)) is not a runtime: it drives each lock on a thread.
//!
//! What stays the crate's, whatever the runtime:
//! - **The lease clock.** Leases are measured on a clock that counts through suspend
//!   (`CLOCK_BOOTTIME` on Linux), read by the drivers themselves. They never sleep more than a
//!   second at a time and read that clock on waking, so a runtime whose timer stops while the
//!   machine sleeps (most do) is still correct: `sleep` need only be roughly right.
//! - **The requests.** Each store's requests are built by the wire layer
//!   ([`wire`](crate::wire)), signed at the server's time, and each reply is read by the
//!   store's reply table. The client only moves bytes.
//!
//! smol as a runtime, in outline (the crate's tests run the lock on it: `tests/lock/smol.rs`
//! in the repository has it whole, with a plain-HTTP/1.1 client for smol in about 130 lines):
//!
//! ```
//! use core::future::Future;
//! use core::time::Duration;
//! use sets3lock::rt::{HttpClient, HttpSettings, Runtime};
//! use sets3lock::Error;
//! use std::sync::Arc;
//!
//! struct Smol;
//!
//! impl Runtime for Smol {
//!     fn sleep(duration: Duration) -> impl Future<Output = ()> + Send {
//!         async move {
//!             smol::Timer::after(duration).await;
//!         }
//!     }
//!     fn spawn(task: impl Future<Output = ()> + Send + 'static) -> Result<(), Error> {
//!         smol::spawn(task).detach();
//!         Ok(())
//!     }
//!     fn http(_settings: &HttpSettings) -> Result<Arc<dyn HttpClient>, Error> {
//!         // Your HTTP client for this runtime, as an `HttpClient`.
//!         Err(Error::HttpClient("left out of this outline".into()))
//!     }
//! }
//!
//! // Every async type of the crate then runs on smol:
//! fn locker(options: sets3lock::Options) -> Result<sets3lock::generic::Locker<Smol>, Error> {
//!     sets3lock::generic::Locker::new("s3://my-bucket/locks/nightly", options)
//! }
//! // smol::block_on(locker(options)?.with_lock(Wait::Forever, async |held| { ... }))
//! ```

use crate::Error;
use bytes::Bytes;
use core::fmt;
use core::future::Future;
use core::time::Duration;
use std::sync::Arc;

pub use crate::driver::store::BoxFuture;

/// An async runtime the drivers can run on: a timer, a way to run a task in the background,
/// and an HTTP client.
///
/// The methods are associated functions, not methods of a value: a runtime is a type (tokio's
/// is `generic::Tokio`, with the `tokio` feature), and reaches its executor the way
/// `smol::spawn` or `tokio::spawn` do.
pub trait Runtime: Send + Sync + Sized + 'static {
    /// A future that completes after about `duration` (never much sooner).
    fn sleep(duration: Duration) -> impl Future<Output = ()> + Send;

    /// Runs `task` to its end in the background. A lock's driver is such a task: it ends by
    /// itself once nothing of the lock's is left in flight. Fails only if there is no
    /// executor to run it (say so in the error: [`Error::NoRuntime`] fits).
    fn spawn(task: impl Future<Output = ()> + Send + 'static) -> Result<(), Error>;

    /// The HTTP client a store sends through, for these settings (its endpoint, a CA bundle,
    /// the request time limit). Called once per store opened.
    fn http(settings: &HttpSettings) -> Result<Arc<dyn HttpClient>, Error>;
}

/// What a store's HTTP client is made for.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct HttpSettings {
    /// The store's endpoint when it is not the store's public one (a plain-`http` endpoint
    /// needs no certificates).
    pub endpoint: Option<url::Url>,
    /// A PEM file of the only CA certificates to trust, when set (`AWS_CA_BUNDLE`,
    /// `SETS3LOCK_CA_BUNDLE`).
    pub ca_bundle: Option<std::path::PathBuf>,
    /// The longest any one request may take (each request also gets a limit of its own); a
    /// connection should get at most 10 s of it.
    pub request_timeout: Duration,
    /// Never through a proxy (`HTTPS_PROXY` and the like): for endpoints on this machine or
    /// its link, whose tokens must not go anywhere else.
    pub direct: bool,
}

/// Sends one HTTP request and returns the reply, within a time limit. It must:
///
/// - never retry and never follow a redirect (a retried write the core does not know of is a
///   write it cannot account for);
/// - say honestly what happened when no complete reply came: [`HttpFailure::NotSent`] only when
///   not a byte of the request was written (the connection was refused, or never made);
///   otherwise [`HttpFailure::Timeout`] or [`HttpFailure::Broken`];
/// - end by `timeout`;
/// - send the request as it is (the method, the URI, every header: they are signed), with
///   `Content-Length` as the request carries it (a GET carries none);
/// - keep at most the first 64 KiB of a body (a lock record is a few hundred bytes; anything
///   larger is someone else's object).
pub trait HttpClient: Send + Sync + fmt::Debug + 'static {
    /// Sends `request`, ending within `timeout`.
    fn send(
        &self,
        request: http::Request<Bytes>,
        timeout: Duration,
    ) -> BoxFuture<'_, Result<http::Response<Bytes>, HttpFailure>>;
}

/// Why an HTTP exchange has no reply.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HttpFailure {
    /// Nothing of the request was written: it certainly never reached the store.
    NotSent(String),
    /// The time limit passed before the reply was complete: the request may have been applied.
    Timeout,
    /// The connection failed after the request was (perhaps partly) written: it may have been
    /// applied.
    Broken(String),
}

impl fmt::Display for HttpFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpFailure::NotSent(why) => write!(f, "not sent: {why}"),
            HttpFailure::Timeout => f.write_str("no reply in time"),
            HttpFailure::Broken(why) => write!(f, "the connection failed: {why}"),
        }
    }
}
