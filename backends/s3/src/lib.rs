//! # sets3lock-s3: the sets3lock core on real S3
//!
//! Drivers for the [`sets3lock`] protocol core: each request is presigned with rusty-s3
//! (the condition headers signed, exactly the signed headers sent) and sent with reqwest over
//! rustls. Replies go through the core's own classifier; a timeout or a reset connection is an
//! unknown outcome for the core, never a success, and never retried by the HTTP layer.
//!
//! Two drivers over the same core, the same request mapping and the same loop, differing
//! only in how they wait: [`tokio::Locker`] (a tokio task drives each lock) and
//! [`blocking::Locker`] (a thread does). Both are a [`Locker`] and a [`Held`] handle generic
//! over that [`Mode`]; their `with_lock` acquires, runs the critical section, releases and
//! returns once nothing of ours is left in flight.
//!
//! Configuration comes from the standard AWS variables ([`S3Options::from_env`]):
//! `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION` /
//! `AWS_DEFAULT_REGION`, `AWS_ENDPOINT_URL_S3` / `AWS_ENDPOINT_URL`; any field can be set in
//! code. [`S3Options::from_env_and_profile`] adds an AWS profile from `~/.aws` (static keys,
//! region, endpoint); with the `aws-config` feature, `S3Options::from_aws_config` uses the
//! whole AWS credential chain.
//!
//! Before its first lock on an endpoint and bucket, a [`Locker`] checks that the store honours
//! the condition headers a lock stands on, and refuses one that does not ([`StoreCheck`]).

#![forbid(unsafe_code)]

mod api;
#[cfg(feature = "azure")]
mod azure;
pub mod blocking;
mod driver;
mod error;
#[cfg(feature = "gcs")]
mod gcs;
mod options;
mod s3;
pub mod tokio;

pub use api::client::Client;
pub use api::election::Election;
pub use api::held::{Health, Held};
pub use api::locker::Locker;
pub use api::locks::Locks;
pub use api::semaphore::{Semaphore, MAX_SLOTS};
pub use api::watcher::Watcher;
#[cfg(feature = "azure")]
pub use azure::options::AzureOptions;
pub use driver::http::HttpRequest;
pub use driver::mode::Mode;
pub use driver::observe::{Observation, Observer};
pub use driver::state::Loss;
pub use driver::store::{Store, StoreId};
pub use driver::store_check::StoreCheck;
pub use error::{EndpointError, Error};
#[cfg(feature = "gcs")]
pub use gcs::options::GcsOptions;
pub use options::{parse_endpoint, S3Options};
pub use rusty_s3::Credentials;
pub use s3::credentials::CredentialSource;
pub use sets3lock::Wait;
pub use sets3lock::{Sighting, WatchConfig, WatchEvent};
