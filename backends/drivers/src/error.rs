//! What can go wrong when locking on a store, each with what to do about it, and the coarse
//! kind callers map once (exit codes, exceptions).

use sets3lock_proto::{ETag, Event, Holder, LostReason};

/// Why opening, acquiring or releasing a lock failed.
///
/// ```
/// let e = sets3lock::Error::from(sets3lock::SettingsError::MissingAzureCredentials);
/// assert!(e.to_string().contains("AZURE_STORAGE_CONNECTION_STRING"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The `s3://bucket/key` URL is malformed.
    #[error(transparent)]
    Url(#[from] sets3lock_proto::UrlError),
    /// The settings cannot open a lock: no credentials or an unusable source of them, an AWS
    /// profile, a CA bundle, an Azure key or connection string, a Google credentials file,
    /// an endpoint that cannot hold a lock, a store this build lacks.
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// No source of the store's credential chain gave credentials when the lock was opened:
    /// every source tried, with what each said, and the likeliest fix.
    #[error("no {store} credentials: {reason}")]
    NoCredentials {
        /// The cloud ("AWS", "Azure", "Google").
        store: &'static str,
        /// What was tried, in order, and the fix.
        reason: String,
    },
    /// The endpoint URL is unusable.
    #[error("invalid endpoint {endpoint:?}: {reason}; write it as http(s)://host[:port], for example http://127.0.0.1:8333")]
    InvalidEndpoint {
        /// The endpoint given.
        endpoint: String,
        /// What is wrong with it.
        #[source]
        reason: EndpointError,
    },
    /// The lock settings are unusable.
    #[error(transparent)]
    Config(#[from] sets3lock_proto::ConfigError),
    /// The HTTP client could not be built (its TLS setup failed).
    #[error("could not set up the HTTP client: {0}")]
    HttpClient(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The operating system's random source failed; owner ids are drawn from it, and a lock
    /// must not run without them.
    #[error("the operating system's random source failed ({reason}): owner ids cannot be drawn; check that the process may read it (getrandom, /dev/urandom)")]
    NoRandomness {
        /// What the operating system said.
        reason: String,
    },
    /// A background thread could not be started. An acquisition that fails this way has
    /// written nothing: its driver's thread is found (or started) before its first request.
    #[error("could not start the {name} thread ({source}): the process may be at its thread or memory limit")]
    Thread {
        /// Which thread.
        name: &'static str,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// The async driver was used outside its runtime (tokio's, for the root types).
    #[error("the async driver needs its runtime running (for the root types, tokio with its time driver): call it from within one, or use the blocking driver")]
    NoRuntime,
    /// The store (S3, Azure or GCS) refused a request for good, or kept failing until the
    /// retries ran out.
    #[error(transparent)]
    Store(#[from] sets3lock_proto::Error),
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
    /// Try-once on a semaphore: every slot is held.
    #[error("all {slots} slots are held")]
    AllSlotsBusy {
        /// How many slots the semaphore has.
        slots: u32,
    },
    /// A semaphore was given no slots, or more than [`MAX_SLOTS`](crate::MAX_SLOTS).
    #[error("a semaphore of {slots} slots: give 1 to {} slots", crate::MAX_SLOTS)]
    Slots {
        /// The number given.
        slots: u32,
    },
    /// A watcher reported what this driver does not expect first.
    #[error(
        "the watcher reported {0} first: use the sets3lock release that matches sets3lock-proto"
    )]
    UnknownWatchEvent(String),
    /// The acquisition was cancelled.
    #[error("the acquisition was cancelled")]
    Cancelled,
    /// The hold was lost (taken over or deleted) before the release.
    #[error("the lock was already lost: {}", lost_how(.0))]
    AlreadyLost(Box<LostReason>),
    /// The hold expired (its lease ran out before a renewal got through) before the release.
    #[error("the lock was already expired (its lease ran out before a renewal got through)")]
    AlreadyExpired,
    /// The core reported an outcome this driver does not know: the operation failed.
    #[error("the lock's core reported an outcome this driver does not know ({0:?}): use the sets3lock release that matches sets3lock-proto")]
    UnknownEvent(Box<Event>),
    /// The store check found that this store, or these credentials, cannot hold this lock:
    /// a condition header ignored, `DELETE If-Match` untrustworthy for presence mode, or no
    /// permission to delete.
    #[error(transparent)]
    StoreCheck(#[from] StoreCheckError),
    /// The hold a handle names has ended (taken over, gone, released, or past its lease):
    /// there is nothing to continue, and nothing was written.
    #[error("the hold this handle names has ended: {0}")]
    HoldEnded(Box<sets3lock_proto::HoldEnded>),
    /// [`Locker::adopt`](crate::Locker::adopt) (or a release from a handle) of a hold
    /// with lease 0 whose record is not parked: a process may still be running under it, and
    /// it never renews, so it would never learn of us. Nothing was written.
    #[error("a process may still run under this hold ({holder}), and with lease 0 it would never learn of another: left to it; once you know it has stopped, `sets3lock unlock URL --etag {etag}` removes it")]
    HoldInUse {
        /// The hold's record.
        holder: Box<Holder>,
        /// The lock object's ETag.
        etag: ETag,
    },
    /// A handle was given to a locker of another lock.
    #[error("the handle names the lock {handle}, not {locker}: use a locker for the handle's URL")]
    HandleElsewhere {
        /// The handle's lock.
        handle: String,
        /// The locker's lock.
        locker: String,
    },
    /// An ETag the store cannot have given (see [`Client::unlock`](crate::Client::unlock)).
    #[error("{etag:?} is not an ETag of this store: {why} (sets3lock status shows it)")]
    BadETag {
        /// The ETag given.
        etag: String,
        /// What the store's ETags look like.
        why: &'static str,
    },
    /// `unlock --if-stale` on a lock whose record declares no lease (see
    /// [`Client::unlock_if_stale`](crate::Client::unlock_if_stale)): it never goes stale.
    #[error("the lock is held by {holder}; its record declares no lease, so it never goes stale: once you know its holder is gone, remove it with `sets3lock unlock --etag {}`{}", etag.as_str(), holder.terraform().map(|t| format!(" or `--id {}`", t.id)).unwrap_or_default())]
    NoLease {
        /// Who holds it.
        holder: Box<Holder>,
        /// The version read (what `unlock --etag` takes).
        etag: ETag,
    },
    /// The background driver stopped (its runtime shut down, or it panicked). In the
    /// blocking mode an acquisition is driven on the caller's thread, so a panic there (in a
    /// store of your own) unwinds to the caller instead.
    #[error("the lock's background driver stopped; the lock expires after its lease")]
    DriverGone,
}

/// Why a store's settings cannot open a lock, each with what to do about it. Nested in
/// [`Error::Settings`]; [`Error::kind`] sorts each as it did when it stood on its own.
///
/// ```
/// use sets3lock::{Error, ErrorKind, SettingsError};
/// let e = Error::from(SettingsError::AzureKey);
/// assert!(e.to_string().contains("AZURE_STORAGE_KEY"));
/// assert_eq!(e.kind(), ErrorKind::Misconfigured);
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// A named profile cannot be used.
    #[error("AWS profile {profile:?}: {reason}")]
    Profile {
        /// The profile name.
        profile: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The CA bundle ([`Options::ca_bundle`](crate::Options::ca_bundle): `SETS3LOCK_CA_BUNDLE`,
    /// or `AWS_CA_BUNDLE` for S3) cannot be used.
    #[error("the CA bundle {path:?} (SETS3LOCK_CA_BUNDLE, or AWS_CA_BUNDLE for s3://) cannot be used: {reason}; point the variable at a PEM file of the CA certificates to trust, or unset it to use the system's")]
    CaBundle {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The credential source had nothing to sign with.
    #[error("no credentials to sign with: {reason}")]
    Credentials {
        /// What the credential source said.
        reason: String,
    },
    /// The endpoint is Google Cloud Storage's S3-compatible (XML) API, which accepts
    /// `If-None-Match` and `If-Match` and ignores them.
    #[error("storage.googleapis.com's S3-compatible API ignores If-None-Match and If-Match (a second create returns 200 and overwrites): a lock there protects nothing; use a gs://BUCKET/KEY URL, which speaks GCS's own generation preconditions")]
    GcsIgnoresConditions,
    /// An `az://` lock, and no Azure account or credentials.
    #[error("no Azure storage account or credentials: set AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN, or AZURE_STORAGE_ACCOUNT alone to sign in with Entra ID (AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET, workload identity, managed identity, or `az login`)")]
    MissingAzureCredentials,
    /// Bearer tokens (Entra ID, Google's OAuth) and a plain `http` endpoint: Azure Storage (and
    /// Azurite) take bearer tokens over `https` only, and no token is sent in clear off this
    /// machine.
    #[error("bearer tokens go over https only, and the endpoint {endpoint} is plain http: use an https endpoint (Azurite: --oauth basic with --cert and --key), or on Azure sign with AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN")]
    BearerOverHttp {
        /// The endpoint.
        endpoint: String,
    },
    /// The Azure account key is not base64.
    #[error("the Azure account key (AZURE_STORAGE_KEY, or AccountKey in the connection string) is not base64: copy it whole from the portal or `az storage account keys list`")]
    AzureKey,
    /// `AZURE_STORAGE_CONNECTION_STRING` cannot be read.
    #[error("AZURE_STORAGE_CONNECTION_STRING cannot be used: {reason}; write it as AccountName=NAME;AccountKey=KEY (or UseDevelopmentStorage=true for Azurite)")]
    AzureConnectionString {
        /// What is wrong with it.
        reason: String,
    },
    /// A Google credentials file (`GOOGLE_APPLICATION_CREDENTIALS`, or gcloud's
    /// `application_default_credentials.json`) cannot be used.
    #[error("the Google credentials file {path:?} cannot be used: {reason}; point GOOGLE_APPLICATION_CREDENTIALS at a usable file, or run `gcloud auth application-default login`")]
    GcsCredentials {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The URL names a store this build of the library does not include.
    #[error("{scheme}:// URLs need the sets3lock feature {} (on by default): build with --features {}", feature_of(*.scheme), feature_of(*.scheme))]
    StoreNotBuilt {
        /// The store named.
        scheme: sets3lock_proto::Scheme,
    },
}

/// What the store check found that stops a lock, each naming the store and the fix. Nested in
/// [`Error::StoreCheck`].
///
/// ```
/// use sets3lock::{Error, ErrorKind, StoreCheckError};
/// use sets3lock::proto::Scheme;
/// let e = Error::from(StoreCheckError::MayNotDelete {
///     scheme: Scheme::Azure,
///     endpoint: "https://acct.blob.core.windows.net".into(),
///     bucket: "container locks".into(),
///     answer: "HTTP 403 AuthorizationPermissionMismatch".into(),
/// });
/// assert!(e.to_string().contains("sp=rwd"));
/// assert_eq!(e.kind(), ErrorKind::AccessDenied);
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreCheckError {
    /// The store ignores a condition header (a lock there protects nothing), or refuses
    /// `If-Match` on its own ETags, or gives different bodies one ETag.
    #[error("the store at {endpoint}, {bucket} there, {what}: a lock cannot work there; use a store that honours conditional writes (`sets3lock doctor` shows what it does), or skip this check with --no-store-check (StoreCheck::Off) only if you know better")]
    IgnoresConditions {
        /// The endpoint.
        endpoint: String,
        /// The bucket (S3, GCS) or container (Azure), named as the user named it: `bucket
        /// NAME` or `container NAME`.
        bucket: String,
        /// What it does wrong, and how that showed.
        what: &'static str,
    },
    /// `DELETE If-Match` cannot be trusted there, and the lock is in presence mode (which
    /// releases with it).
    #[error("the store at {endpoint}, {bucket} there, {conditional_delete}: a presence-mode lock cannot be released safely there; use fenced mode (--fenced, Config::fenced), which never deletes the lock object")]
    DeleteUnsafe {
        /// The endpoint.
        endpoint: String,
        /// The bucket (S3, GCS) or container (Azure), named as the user named it: `bucket
        /// NAME` or `container NAME`.
        bucket: String,
        /// What its `DELETE If-Match` does.
        conditional_delete: sets3lock_proto::ConditionalDelete,
    },
    /// The credentials may read and write beside the lock but not delete there, and the
    /// lock is in presence mode (which releases by deleting). Found before anything was
    /// written, but for the kept probe `KEY.sets3lock-store-check` where the store refuses
    /// reads of missing keys too (S3 without `s3:ListBucket`).
    #[error("the credentials may not delete in {bucket} at {endpoint} (the store check's DELETE got {answer}): a presence-mode lock is released by deleting it; {}, or use fenced mode (--fenced, Config::fenced), which never deletes", grant_delete(*.scheme))]
    MayNotDelete {
        /// The store.
        scheme: sets3lock_proto::Scheme,
        /// The endpoint.
        endpoint: String,
        /// The bucket (S3, GCS) or container (Azure), named as the user named it: `bucket
        /// NAME` or `container NAME`.
        bucket: String,
        /// The store's answer: status and code.
        answer: String,
    },
}

impl StoreCheckError {
    /// What kind of failure this is: [`AccessDenied`](ErrorKind::AccessDenied) for
    /// credentials that may not delete, [`Refused`](ErrorKind::Refused) for the store's own
    /// ways.
    pub fn kind(&self) -> ErrorKind {
        match self {
            StoreCheckError::MayNotDelete { .. } => ErrorKind::AccessDenied,
            StoreCheckError::IgnoresConditions { .. } | StoreCheckError::DeleteUnsafe { .. } => {
                ErrorKind::Refused
            }
        }
    }
}

/// How each store's credentials are given delete permission.
fn grant_delete(scheme: sets3lock_proto::Scheme) -> &'static str {
    match scheme {
        sets3lock_proto::Scheme::Azure => "use a SAS whose sp= has d (sp=rwd), or a role that may delete blobs (Storage Blob Data Contributor)",
        sets3lock_proto::Scheme::Gcs => "grant storage.objects.delete (roles/storage.objectUser has it)",
        _ => "allow s3:DeleteObject and s3:GetObject on the lock's key (a conditional DELETE needs both)",
    }
}

/// What kind of failure an [`Error`] is: what the caller can do about it. The command's exit
/// codes and the Python package's exceptions are mapped from it.
///
/// ```
/// use sets3lock::{Error, ErrorKind};
/// assert_eq!(Error::NoRuntime.kind(), ErrorKind::Misconfigured);
/// assert_eq!(Error::AlreadyExpired.kind(), ErrorKind::Lost);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Someone else holds the lock (or every slot, or runs under the hold): try later.
    Busy,
    /// The wait for the lock ran out, or was cancelled.
    TimedOut,
    /// An argument is malformed: the URL, an endpoint, the lock's settings, a slot count, an
    /// AWS profile named explicitly, a handle given to the wrong lock. Fix the call.
    InvalidInput,
    /// The environment is incomplete or malformed: no credentials, an unusable CA bundle or
    /// key file, a store this build lacks. Fix the configuration.
    Misconfigured,
    /// The bucket (S3, GCS) or container (Azure) does not exist.
    MissingBucket,
    /// The store refused the credentials (HTTP 401 or 403).
    AccessDenied,
    /// The store refused the request for another reason, or cannot hold a lock (it ignores
    /// condition headers, its conditional delete is unsafe, the clock is too far off).
    Refused,
    /// The store could not be reached, or kept failing until the retries ran out.
    Unreachable,
    /// The hold ended before the call: lost, expired, released elsewhere, or its driver gone.
    Lost,
    /// The process itself failed (no random source, no thread, no runtime), or the driver
    /// and the core disagree (a bug).
    Internal,
}

impl SettingsError {
    /// What kind of failure this is (see [`ErrorKind`]): a profile named explicitly is the
    /// caller's argument, an endpoint that cannot hold a lock the store's refusal, the rest
    /// the configuration.
    pub fn kind(&self) -> ErrorKind {
        match self {
            SettingsError::Profile { .. } => ErrorKind::InvalidInput,
            SettingsError::GcsIgnoresConditions => ErrorKind::Refused,
            SettingsError::CaBundle { .. }
            | SettingsError::Credentials { .. }
            | SettingsError::MissingAzureCredentials
            | SettingsError::BearerOverHttp { .. }
            | SettingsError::AzureKey
            | SettingsError::AzureConnectionString { .. }
            | SettingsError::GcsCredentials { .. }
            | SettingsError::StoreNotBuilt { .. } => ErrorKind::Misconfigured,
        }
    }
}

impl Error {
    /// What kind of failure this is (see [`ErrorKind`]).
    pub fn kind(&self) -> ErrorKind {
        use sets3lock_proto::Error as Store;
        match self {
            Error::Busy { .. } | Error::AllSlotsBusy { .. } | Error::HoldInUse { .. } => {
                ErrorKind::Busy
            }
            Error::TimedOut { .. } | Error::Cancelled => ErrorKind::TimedOut,
            Error::Url(_)
            | Error::InvalidEndpoint { .. }
            | Error::Config(_)
            | Error::Slots { .. }
            | Error::BadETag { .. }
            | Error::NoLease { .. }
            | Error::HandleElsewhere { .. } => ErrorKind::InvalidInput,
            Error::Settings(s) => s.kind(),
            Error::NoCredentials { .. } | Error::NoRuntime => ErrorKind::Misconfigured,
            Error::Store(Store::NoSuchBucket { .. } | Store::MissingContainer { .. }) => {
                ErrorKind::MissingBucket
            }
            Error::Store(Store::Refused {
                status: 401 | 403, ..
            }) => ErrorKind::AccessDenied,
            Error::Store(Store::GaveUp { .. }) => ErrorKind::Unreachable,
            Error::StoreCheck(c) => c.kind(),
            Error::Store(_) => ErrorKind::Refused,
            Error::AlreadyLost(_)
            | Error::AlreadyExpired
            | Error::HoldEnded(_)
            | Error::DriverGone => ErrorKind::Lost,
            Error::HttpClient(_)
            | Error::NoRandomness { .. }
            | Error::Thread { .. }
            | Error::UnknownWatchEvent(_)
            | Error::UnknownEvent(_) => ErrorKind::Internal,
        }
    }

    pub(crate) fn no_randomness(e: getrandom::Error) -> Error {
        Error::NoRandomness {
            reason: e.to_string(),
        }
    }

    #[cfg(feature = "tokio")]
    pub(crate) fn http_client(e: impl std::error::Error + Send + Sync + 'static) -> Error {
        Error::HttpClient(Box::new(e))
    }
}

fn feature_of(scheme: sets3lock_proto::Scheme) -> &'static str {
    match scheme {
        sets3lock_proto::Scheme::Azure => "azure",
        sets3lock_proto::Scheme::Gcs => "gcs",
        _ => "for it",
    }
}

fn held_by(holder: &Option<Box<Holder>>) -> String {
    match holder {
        Some(h) => format!(" held by {h}"),
        None => String::new(),
    }
}

fn lost_how(reason: &LostReason) -> &'static str {
    match reason {
        LostReason::Deleted => "the lock object was deleted",
        LostReason::Overwritten { .. } => "the lock object was overwritten",
        _ => "the lock object changed hands",
    }
}

/// What is wrong with an endpoint URL.
///
/// ```
/// let e = sets3lock::parse_endpoint("ftp://127.0.0.1").unwrap_err();
/// assert!(e.to_string().contains("http or https"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EndpointError {
    /// It is not a URL.
    #[error("it is not a URL ({0})")]
    NotAUrl(String),
    /// Its scheme is not http or https.
    #[error("the scheme must be http or https")]
    Scheme,
    /// It names no host.
    #[error("it has no host")]
    NoHost,
    /// It has a query or a fragment.
    #[error("it must not have a query or a fragment")]
    QueryOrFragment,
    /// No bucket can be addressed on it.
    #[error("no bucket can be addressed on it ({0})")]
    Bucket(String),
    /// The region it is made from (AWS's own endpoint) cannot be part of a host name.
    #[error("{0}")]
    Region(String),
}

impl EndpointError {
    pub(crate) fn parse(e: url::ParseError) -> EndpointError {
        EndpointError::NotAUrl(e.to_string())
    }
}
