//! The errors a lock reports: each names the cause and what fixes it.

use crate::{IntentKind, Scheme, Setback};

/// Why an operation on the lock failed for good.
///
/// Transient trouble (409 conflicts, 5xx, timeouts) is retried by the core and does not appear
/// here unless the retries run out ([`Error::GaveUp`]).
///
/// ```
/// use sets3lock_proto::Error;
/// let e = Error::NoSuchBucket { message: None };
/// assert!(e.to_string().contains("create the bucket"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The bucket does not exist.
    #[error("the bucket does not exist (S3 said NoSuchBucket{}): create the bucket, or fix the bucket name, the endpoint or the region", detail(.message))]
    NoSuchBucket {
        /// The store's message, if it sent one.
        message: Option<String>,
    },
    /// The endpoint refused a conditional request as unsupported (HTTP 501, S3's
    /// `NotImplemented`).
    #[error("the endpoint does not support {op} (HTTP {status}{}): {}", code_and(.code, .message), unsupported_fix(*.op))]
    ConditionalUnsupported {
        /// The request that was refused.
        op: IntentKind,
        /// The HTTP status.
        status: u16,
        /// The store's error code.
        code: Option<String>,
        /// The store's message.
        message: Option<String>,
    },
    /// A successful write or read came back without an ETag: the endpoint is not S3-compatible
    /// enough to hold a lock (conditional requests need the ETag).
    #[error("the endpoint answered {op} with HTTP {status} but no ETag header: it is not S3-compatible enough to hold a lock")]
    MissingETag {
        /// The request whose reply had no ETag.
        op: IntentKind,
        /// The HTTP status.
        status: u16,
    },
    /// The server refused the request's time: this machine's wall clock is too far from the
    /// server's (S3's `RequestTimeTooSkewed`, or `AccessDenied` "Request has expired" / "not
    /// valid yet" for a presigned request). Drivers that can learn the server's time from its
    /// `Date` header sign with it and retry once before reporting this.
    #[error("{op} was refused with HTTP {status}{}: the request's time is wrong for the server: this machine's clock is too far from the server's and the server's Date header did not correct it: synchronise the clock (NTP, `timedatectl`)", code_and(.code, .message))]
    Clock {
        /// The request that was refused.
        op: IntentKind,
        /// The HTTP status.
        status: u16,
        /// The store's error code.
        code: Option<String>,
        /// The store's message.
        message: Option<String>,
    },
    /// Any other refusal, with the store's error code and a hint at the fix.
    #[error("{op} was refused with HTTP {status}{}: {hint}", code_and(.code, .message))]
    Refused {
        /// The request that was refused.
        op: IntentKind,
        /// The HTTP status.
        status: u16,
        /// The store's error code (`AccessDenied`, `SignatureDoesNotMatch`, ...).
        code: Option<String>,
        /// The store's message.
        message: Option<String>,
        /// What to do about it.
        hint: &'static str,
    },
    /// The container (Azure) or bucket (GCS) does not exist: Azure's `404 ContainerNotFound`,
    /// GCS's `404` "The specified bucket does not exist.". (S3's `NoSuchBucket` is
    /// [`Error::NoSuchBucket`].)
    ///
    /// ```
    /// use sets3lock_proto::{Error, Scheme};
    /// let e = Error::MissingContainer { store: Scheme::Azure, code: Some("ContainerNotFound".into()), message: None };
    /// assert!(e.to_string().contains("az storage container create"));
    /// ```
    #[error("the {} {} does not exist ({} said{}): {}", .store.store_name(), container_word(*.store), short_name(*.store), code_and(.code, .message), missing_container_fix(*.store))]
    MissingContainer {
        /// The store that said so.
        store: Scheme,
        /// The store's error code (`ContainerNotFound`, `notFound`).
        code: Option<String>,
        /// The store's message.
        message: Option<String>,
    },
    /// A successful write or read came back without the version a conditional request names:
    /// no `ETag` header from Azure, no generation (the JSON body's `generation` or the
    /// `x-goog-generation` header) from GCS. The endpoint does not speak the store's API well
    /// enough to hold a lock. (For S3, [`Error::MissingETag`].)
    ///
    /// ```
    /// use sets3lock_proto::{Error, IntentKind, Scheme};
    /// let e = Error::MissingVersion { store: Scheme::Gcs, op: IntentKind::Get, status: 200 };
    /// assert!(e.to_string().contains("x-goog-generation"));
    /// ```
    #[error("the endpoint answered {op} with HTTP {status} but {}: it is not {}-compatible enough to hold a lock", missing_version_what(*.store), short_name(*.store))]
    MissingVersion {
        /// The store the endpoint was spoken to as.
        store: Scheme,
        /// The request whose reply had no version.
        op: IntentKind,
        /// The HTTP status.
        status: u16,
    },
    /// Transient failures went on until the retry budget ran out.
    #[error("gave up after {attempts} attempt{}; the last: {last}", if *attempts == 1 { "" } else { "s" })]
    GaveUp {
        /// How many requests were tried.
        attempts: u32,
        /// The last setback.
        last: Box<Setback>,
    },
}

/// What the store calls the place objects live in.
fn container_word(store: Scheme) -> &'static str {
    match store {
        Scheme::Azure => "container",
        _ => "bucket",
    }
}

/// The store's short name, as in "Azure said ...".
fn short_name(store: Scheme) -> &'static str {
    match store {
        Scheme::Azure => "Azure",
        Scheme::Gcs => "GCS",
        _ => "S3",
    }
}

fn missing_container_fix(store: Scheme) -> &'static str {
    match store {
        Scheme::Azure => "create it (`az storage container create --name CONTAINER`), or fix the container name or the storage account",
        Scheme::Gcs => "create it (`gcloud storage buckets create gs://BUCKET`), or fix the bucket name or the endpoint",
        _ => "create the bucket, or fix the bucket name, the endpoint or the region",
    }
}

fn missing_version_what(store: Scheme) -> &'static str {
    match store {
        Scheme::Gcs => "no generation (neither a \"generation\" in the JSON body nor an x-goog-generation header)",
        _ => "no ETag header",
    }
}

/// What to do when a store refuses a conditional request as unsupported.
fn unsupported_fix(op: IntentKind) -> &'static str {
    match op {
        IntentKind::DeleteIfMatch => "use fenced mode (--fenced, Config::fenced), which never deletes the lock object and needs only conditional PUTs",
        _ => "a lock needs conditional writes; use a store that supports them (run `sets3lock doctor`)",
    }
}

fn detail(message: &Option<String>) -> String {
    match message {
        Some(m) => format!(": {m}"),
        None => String::new(),
    }
}

fn code_and(code: &Option<String>, message: &Option<String>) -> String {
    let mut s = String::new();
    if let Some(c) = code {
        s.push(' ');
        s.push_str(c);
    }
    s.push_str(&detail(message));
    s
}
