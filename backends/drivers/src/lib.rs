//! # sets3lock: the sets3lock core on S3, Azure Blob Storage and Google Cloud Storage
//!
//! Drivers for the [`sets3lock_proto`] protocol core. The URL's scheme picks the store:
//! `s3://bucket/key` (Amazon S3 and S3-compatible stores), `az://container/key` (Azure Blob
//! Storage, feature `azure`) and `gs://bucket/key` (Google Cloud Storage, feature `gcs`). An
//! S3-only build compiles no Azure or GCS code.
//!
//! Two drivers over the same core and the same loop, differing only in how they wait:
//! [`tokio::Locker`] (a tokio task drives each lock) and [`blocking::Locker`] (a thread does).
//! Both are a [`Locker`] and a [`Held`] handle generic over that [`Mode`]; their `with_lock`
//! acquires, runs the critical section, releases and returns once nothing of ours is left in
//! flight. Underneath, every request goes through a [`Store`]: it turns the core's intent into
//! the store's own request, sends it within a time limit, and reads the reply with that store's
//! reply table. A timeout or a reset connection is an unknown outcome for the core, never a
//! success, and never retried by the HTTP layer. A store of your own plugs in with
//! [`Locker::with_store`].
//!
//! Where things are (`src/`):
//! - `api/`: what a user holds ([`Locker`], [`Locks`], [`Held`], [`Semaphore`], [`Election`],
//!   [`Watcher`], the operator's [`Client`]);
//! - `driver/`: keeping cores running on any store (the [`Store`] seam, the driver loop, the
//!   HTTP transport, signing at the server's time, the [`StoreCheck`]);
//! - `s3/`: SigV4 presigning with rusty-s3 (the condition headers signed, PUT bodies bound by
//!   a signed `Content-MD5`), credentials and AWS profiles;
//! - `azure/`: Shared Key and SAS, connection strings;
//! - `gcs/`: the JSON API, tokens, the pause after a 429.
//!
//! Configuration comes from the environment ([`Options::from_env`]): the standard AWS
//! variables (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION`,
//! `AWS_ENDPOINT_URL_S3` / `AWS_ENDPOINT_URL`), and with their features Azure's
//! (`AZURE_STORAGE_CONNECTION_STRING`, or `AZURE_STORAGE_ACCOUNT` with `AZURE_STORAGE_KEY` or
//! `AZURE_STORAGE_SAS_TOKEN`) and Google's (`GOOGLE_APPLICATION_CREDENTIALS`,
//! `STORAGE_EMULATOR_HOST`, the metadata server); any field can be set in code.
//! [`Options::from_env_and_profile`] adds an AWS profile from `~/.aws`; with the
//! `aws-config` feature, `Options::from_aws_config` uses the whole AWS credential chain.
//!
//! Before its first lock on an endpoint and bucket, a [`Locker`] checks that the store honours
//! the conditional requests a lock stands on, and refuses one that does not ([`StoreCheck`]).

#![forbid(unsafe_code)]

mod api;
#[cfg(feature = "azure")]
mod azure;
pub mod blocking;
mod driver;
mod error;
#[cfg(feature = "gcs")]
mod gcs;
pub mod generic;
#[cfg(feature = "metrics")]
pub mod metrics;
mod options;
mod s3;
mod tokio;

pub use api::client::Client;
pub use api::held::Health;
pub use api::semaphore::MAX_SLOTS;
#[cfg(feature = "azure")]
pub use azure::options::AzureOptions;
pub use driver::observe::{Observation, Observer};
pub use driver::state::{drivers_running, Loss};
pub use driver::store::{BoxFuture, Store, StoreId};
pub use driver::store_check::StoreCheck;
pub use error::{EndpointError, Error, ErrorKind};
#[cfg(feature = "gcs")]
pub use gcs::options::GcsOptions;
pub use options::{parse_endpoint, Options};
pub use s3::credentials::{AwsCredentialSource, AwsCredentials};
pub use s3::options::S3Options;
/// The sans-IO protocol core these drivers run (the `sets3lock-proto` crate), for naming
/// any of its types without a second dependency.
pub use sets3lock_proto as proto;
/// The core's types that this crate's API names, so that one dependency is enough.
pub use sets3lock_proto::{
    Backoff, ConditionalDelete, Config, ConfigError, ETag, Event, Handle, HandleError, HoldEnded,
    Holder, Intent, IntentKind, LockUrl, LostReason, OwnerId, ReleaseOutcome, Response, Scheme,
    Sighting, UrlError, Wait, WatchConfig, WatchEvent,
};
pub use tokio::{Election, Held, Locker, Locks, LossWatch, Semaphore, Watcher};

/// The Rust examples of every page of the documentation are compiled as doc tests, and run
/// unless marked `no_run` (those need a store): `cargo test -p sets3lock --doc`.
#[cfg(doctest)]
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
