//! # sets3lock: a distributed lock whose only server is an object-storage bucket
//!
//! Programs on many machines take turns at a critical section with nothing but a bucket: Amazon
//! S3 and S3-compatible stores (`s3://bucket/key`), Azure Blob Storage (`az://container/key`)
//! or Google Cloud Storage (`gs://bucket/key`). The URL's scheme picks the store.
//!
//! ```no_run
//! # #[cfg(feature = "tokio")] mod tokio_face {
//! use sets3lock::{Locker, Wait};
//!
//! # async fn run() -> Result<(), sets3lock::Error> {
//! let locker = Locker::from_env("s3://my-bucket/locks/nightly")?;
//! let ((), outcome) = locker
//!     .with_lock(Wait::Forever, async |held| {
//!         // The critical section; the lease is renewed in the background meanwhile, and
//!         // `held.lost()` fires if the lock is lost.
//!     })
//!     .await?;
//! println!("released: {outcome:?}");
//! # Ok(()) } }
//! ```
//!
//! ## The faces
//!
//! As with reqwest, the async face is at the root and the blocking one beside it:
//! [`Locker`], [`Held`], [`Locks`], [`Semaphore`], [`Election`] and [`Watcher`] run on tokio
//! (a task drives each lock), and [`blocking`] has the same types for threads. Both run the
//! same core and the same loop and differ only in how they wait; [`generic`] holds what they
//! share, for code generic over both. `with_lock` acquires, runs the critical section,
//! releases and returns once nothing of ours is left in flight.
//!
//! Another async runtime (smol, async-std, an executor of your own) plugs in through [`rt`]:
//! implement [`rt::Runtime`] (sleep, spawn, an HTTP client) and `generic::Locker<YourRuntime>`
//! has the async methods of the tokio face. To drive the sans-IO core yourself instead, the
//! [`wire`] layer builds each store's requests and reads its replies.
//!
//! The async driver's task runs on the runtime that called `acquire` and ends by itself once
//! nothing of ours is left in flight. It ends early only if that runtime shuts down first:
//! then a hold it was still renewing or releasing is left to expire after its lease, like a
//! crashed holder's. After dropping a handle or an acquisition (instead of `with_lock`),
//! await [`Locker::shutdown`] before the runtime ends.
//!
//! ## Options and errors
//!
//! [`Options`] holds what every store shares (the lock's [`Config`], the request time limit,
//! the CA bundle, the observer, the metrics name, the [`StoreCheck`]) and each store's part
//! beside it ([`S3Settings`], and `AzureSettings`, `GcsSettings` with their features).
//! [`Options::from_env`] reads the variables of one store, the one the URL names, and finds
//! its credentials the way that cloud's own tools do: the AWS chain (keys, profiles with roles,
//! SSO or processes, web identity, the container endpoint, instance metadata), Entra ID for
//! Azure, Application Default Credentials for Google. Temporary credentials are refreshed on
//! a thread of their own, ahead of expiry; [`Locker::sign_in`](generic::Locker::sign_in) says
//! who signs. Your own source plugs in as a [`CredentialSource`] of keys or of a
//! [`BearerToken`].
//! Every failure is an [`Error`] whose message names the problem and the fix; [`Error::kind`] sorts
//! it into what a caller can do about it ([`ErrorKind`]).
//!
//! ## The rest
//!
//! - [`proto`] is the sans-IO protocol core (the `sets3lock-proto` crate); the types of it that
//!   this API names are re-exported at the root, so one dependency is enough.
//! - Every request goes through a [`Store`]: it turns the core's intent into the store's own
//!   request, sends it within a time limit, and reads the reply with that store's reply table.
//!   A timeout or a reset connection is an unknown outcome for the core, never a success, and
//!   never retried by the HTTP layer. A store of your own plugs in with
//!   [`Locker::with_store`].
//! - Before its first lock on an endpoint and bucket, a [`Locker`] checks that the store
//!   honours the conditional requests a lock stands on, and refuses one that does not
//!   ([`StoreCheck`]).
//! - [`Client`] is the operator's view: who holds a lock, one request at a time.
//!
//! ## Features
//!
//! `azure` and `gcs` (default) add those stores; without them (`default-features = false`) no
//! Azure or GCS code is compiled. `tokio` (default) is the async face at the root; without it
//! no async runtime or async HTTP client is built (the blocking face runs on threads and ureq). `tracing` reports through `tracing`
//! (`Observer::tracing`); `metrics` instruments every lock through the `metrics` facade.
//!
//! ## Where things are (`src/`)
//!
//! `api/` (what a user holds), `driver/` (keeping cores running on any store: the [`Store`]
//! seam, the driver loop, the HTTP transports, signing at the server's time, the store check),
//! `s3/` (the wire layer's requests at the server's time, its settings and keys),
//! `signin/` (one credential design for every store: the trait, each cloud's chain, the cache
//! that refreshes them), `azure/` (connection strings), `gcs/` (tokens, the pause after a
//! 429); the faces: `tokio.rs`,
//! `async_face.rs`, `blocking.rs`, and `rt.rs` (the runtime seam).

#![forbid(unsafe_code)]

mod api;
mod async_face;
#[cfg(feature = "azure")]
mod azure;
pub mod blocking;
mod driver;
mod error;
#[cfg(feature = "gcs")]
mod gcs;
pub mod generic;
mod lock_format;
#[cfg(feature = "metrics")]
pub mod metrics;
mod options;
pub mod rt;
mod s3;
mod signin;
#[cfg(feature = "tokio")]
mod tokio;
#[cfg(all(test, feature = "tokio"))]
mod wire_agreement;

pub use api::client::Client;
pub use api::held::Health;
pub use api::semaphore::MAX_SLOTS;
pub use api::unlock::Unlocked;
#[cfg(feature = "azure")]
pub use azure::settings::AzureSettings;
pub use driver::observe::{Observation, Observer};
pub use driver::state::{drivers_running, Loss};
pub use driver::store::{BoxFuture, Store, StoreId};
pub use driver::store_check::StoreCheck;
pub use error::{EndpointError, Error, ErrorKind, SettingsError, StoreCheckError};
#[cfg(feature = "gcs")]
pub use gcs::settings::GcsSettings;
pub use lock_format::{InvalidLockFormat, LockFormat, TFLOCK_SUFFIX};
pub use options::{parse_endpoint, Options};
pub use s3::credentials::AwsCredentials;
pub use s3::settings::S3Settings;
/// The sans-IO protocol core these drivers run (the `sets3lock-proto` crate), for naming
/// any of its types without a second dependency.
pub use sets3lock_proto as proto;
/// The core's types that this crate's API names, so that one dependency is enough.
pub use sets3lock_proto::{
    Backoff, ConditionalDelete, Config, ConfigError, ETag, Event, Handle, HandleError, HoldEnded,
    Holder, Intent, IntentKind, LockUrl, LostReason, OwnerId, ReleaseOutcome, Response, Scheme,
    Sighting, UrlError, Wait, WatchConfig, WatchEvent,
};
/// The requests on the wire (the `sets3lock-wire` crate): each store's HTTP request for one of
/// the core's intents, and the reading of its reply, as pure functions. The drivers here send
/// exactly what it builds; use it to drive the core on a runtime of your own.
pub use sets3lock_wire as wire;
pub use signin::credentials::Credentials;
pub use signin::source::{BearerToken, CredentialError, CredentialSource};
pub use signin::SignIn;
#[cfg(feature = "tokio")]
pub use tokio::{Election, Held, Locker, Locks, LossWatch, Semaphore, Watcher};

/// The Rust examples of every page of the documentation are compiled as doc tests, and run
/// unless marked `no_run` (those need a store): `cargo test -p sets3lock --doc`.
#[cfg(all(doctest, feature = "tokio"))]
mod documentation {
    #[doc = include_str!("../../../README.md")]
    struct Readme;
    #[doc = include_str!("../../../docs/GUIDE.md")]
    struct Guide;
    #[doc = include_str!("../../../docs/LIBRARY.md")]
    struct Library;
    #[doc = include_str!("../../../docs/PROTOCOL.md")]
    struct Protocol;
    #[doc = include_str!("../../../docs/VERIFICATION.md")]
    struct Verification;
    #[doc = include_str!("../../../docs/BENCHMARKS.md")]
    struct Benchmarks;
    #[doc = include_str!("../../../docs/FAQ.md")]
    struct Faq;
    #[doc = include_str!("../../../bindings/python/README.md")]
    struct Python;
    #[doc = include_str!("../README.md")]
    struct LockCrate;
    #[doc = include_str!("../../../src/README.md")]
    struct ProtoCrate;
    #[doc = include_str!("../../mock/README.md")]
    struct MockCrate;
    #[doc = include_str!("../../../cli/README.md")]
    struct CliCrate;
}
