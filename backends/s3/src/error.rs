//! What can go wrong when locking on real S3, each with what to do about it.

use sets3lock::{ETag, Holder, LostReason};

/// Why opening, acquiring or releasing a lock failed.
///
/// ```
/// let e = sets3lock_s3::Error::MissingCredentials;
/// assert!(e.to_string().contains("AWS_ACCESS_KEY_ID"));
/// ```
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The `s3://bucket/key` URL is malformed.
    #[error(transparent)]
    Url(#[from] sets3lock::UrlError),
    /// No credentials were found.
    #[error("no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary credentials)")]
    MissingCredentials,
    /// The endpoint URL is unusable.
    #[error("invalid endpoint {endpoint:?}: {reason}; write it as http(s)://host[:port], for example http://127.0.0.1:8333")]
    InvalidEndpoint {
        /// The endpoint given.
        endpoint: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A named profile cannot be used.
    #[error("AWS profile {profile:?}: {reason}")]
    Profile {
        /// The profile name.
        profile: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The lock settings are unusable.
    #[error(transparent)]
    Config(#[from] sets3lock::ConfigError),
    /// The HTTP client could not be built.
    #[error("could not set up the HTTP client: {0}")]
    Http(String),
    /// S3 refused a request for good, or the endpoint kept failing.
    #[error(transparent)]
    S3(#[from] sets3lock::Error),
    /// Try-once acquisition: someone holds the lock.
    #[error("the lock is held by {holder}")]
    Busy {
        /// Who.
        holder: Box<Holder>,
        /// The lock object's ETag (what `sets3lock unlock --etag` needs).
        etag: ETag,
    },
    /// The wait for the lock ran out.
    #[error("timed out waiting for the lock{}", held_by(.holder))]
    TimedOut {
        /// The last holder seen.
        holder: Option<Box<Holder>>,
    },
    /// The acquisition was cancelled.
    #[error("the acquisition was cancelled")]
    Cancelled,
    /// The hold ended before the release: lost (taken over or deleted) or expired.
    #[error("the lock was already {}", lost_how(.0))]
    AlreadyLost(Option<LostReason>),
    /// The background driver stopped (its runtime shut down, or it panicked).
    #[error("the lock's background driver stopped; the lock expires after its lease")]
    DriverGone,
}

fn held_by(holder: &Option<Box<Holder>>) -> String {
    match holder {
        Some(h) => format!(" held by {h}"),
        None => String::new(),
    }
}

fn lost_how(reason: &Option<LostReason>) -> &'static str {
    match reason {
        None => "expired (its lease ran out before a renewal got through)",
        Some(LostReason::Deleted) => "lost: the lock object was deleted",
        Some(LostReason::Overwritten { .. }) => "lost: the lock object was overwritten",
    }
}
