//! # sets3lock-s3: the sets3lock core on real S3
//!
//! Drivers for the [`sets3lock`] protocol core: each request is presigned with rusty-s3
//! (the condition headers signed, exactly the signed headers sent) and sent with reqwest over
//! rustls. Replies go through the core's own classifier; a timeout or a reset connection is an
//! unknown outcome for the core, never a success, and never retried by the HTTP layer.
//!
//! Two drivers over the same core and the same request mapping, differing only in how they
//! wait: [`tokio::Locker`] (a tokio task) and [`blocking::Locker`] (a thread).
//!
//! Configuration comes from the standard AWS variables ([`S3Options::from_env`]):
//! `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION` /
//! `AWS_DEFAULT_REGION`, `AWS_ENDPOINT_URL_S3` / `AWS_ENDPOINT_URL`; any field can be set in
//! code. [`S3Options::from_env_and_profile`] adds an AWS profile from `~/.aws` (static keys,
//! region, endpoint); with the `aws-config` feature, `S3Options::from_aws_config` uses the
//! whole AWS credential chain.

#![forbid(unsafe_code)]

#[cfg(feature = "aws-config")]
mod aws;
pub mod blocking;
mod client;
mod clock;
mod credentials;
mod engine;
mod error;
mod hold;
mod http;
mod observe;
mod profile;
mod request;
mod state;
mod target;
pub mod tokio;

pub use client::Client;
pub use credentials::CredentialSource;
pub use error::Error;
pub use hold::{Loss, WaitFor};
pub use observe::{Observation, Observer};
pub use request::HttpRequest;
pub use rusty_s3::Credentials;
pub use target::{parse_endpoint, S3Options};
