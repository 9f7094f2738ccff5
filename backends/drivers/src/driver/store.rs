//! The seam between the drivers and the object stores.
//!
//! A store turns one of the core's intents on one key into a request of its own (addressing,
//! signing, condition headers), sends it, and reads the reply with its own reply table. The
//! drivers above (the engine, the hub, lockers, handles, semaphores, elections, watchers, the
//! store check and the operator client) see only [`Intent`]s and [`Response`]s, so they are
//! written once for every store.

use crate::driver::clock::time_limit;
use crate::driver::clock::Stamp;
use crate::Observer;
use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::time::Duration;
use sets3lock_proto::{Intent, Response, Scheme};

/// What a [`Store`]'s methods return: a boxed future that may be sent between threads. (The
/// same type as `futures::future::BoxFuture`, named here so that no other crate's version is
/// part of this API.)
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One bucket (or container) of one object store, as the drivers use it.
///
/// Implemented by this crate for S3 and S3-compatible stores, Azure Blob Storage (feature
/// `azure`) and Google Cloud Storage (feature `gcs`); implement it to put a lock on a store
/// of your own and open it with [`Locker::with_store`](crate::Locker::with_store).
///
/// The contract, which every safety argument of the core leans on:
/// - `send` never fails: no reply is [`Response::Ambiguous`], and a request that certainly
///   never reached the store is [`Ambiguity::NotSent`](crate::proto::Ambiguity::NotSent);
/// - it never retries a write by itself (the core reads back after an unknown outcome);
/// - a reply that does not fit the request is ambiguous, never a success (see
///   [`Response::fits`]);
/// - it ends within `limit`.
///
/// ```
/// use core::time::Duration;
/// use sets3lock::proto::{Ambiguity, Intent, Response};
/// use sets3lock::{BoxFuture, Store, StoreId};
///
/// /// A store that is never there: every request fails to connect.
/// #[derive(Debug)]
/// struct Nowhere(StoreId);
///
/// impl Store for Nowhere {
///     fn send<'a>(&'a self, _key: &'a str, _intent: &'a Intent, _limit: Duration)
///         -> BoxFuture<'a, Response> {
///         Box::pin(async {
///             Response::Ambiguous(Ambiguity::NotSent { detail: "nowhere".into() })
///         })
///     }
///     fn discard<'a>(&'a self, _key: &'a str, _limit: Duration) -> BoxFuture<'a, ()> {
///         Box::pin(async {})
///     }
///     fn id(&self) -> &StoreId {
///         &self.0
///     }
/// }
/// let store = Nowhere(StoreId::new(sets3lock::proto::Scheme::S3, "http://127.0.0.1:9", "bucket"));
/// assert_eq!(store.id().to_string(), "s3 http://127.0.0.1:9 bucket");
/// ```
pub trait Store: Send + Sync + fmt::Debug + 'static {
    /// Sends `intent` on `key`, ending within `limit`: the reply, as the store's reply table
    /// reads it.
    fn send<'a>(
        &'a self,
        key: &'a str,
        intent: &'a Intent,
        limit: Duration,
    ) -> BoxFuture<'a, Response>;

    /// Removes `key` whatever it holds: only for throw-away keys of our own (the store check's
    /// probe), never for a lock. Best effort.
    fn discard<'a>(&'a self, key: &'a str, limit: Duration) -> BoxFuture<'a, ()>;

    /// Which store, endpoint and bucket: for the store check's verdicts and for messages.
    fn id(&self) -> &StoreId;

    /// Like [`send`](Store::send), and also the version the store kept of a write, if it
    /// keeps versions (S3's `x-amz-version-id`): how `sets3lock doctor` learns that every
    /// write leaves a version behind. By default: none.
    fn send_versioned<'a>(
        &'a self,
        key: &'a str,
        intent: &'a Intent,
        limit: Duration,
    ) -> BoxFuture<'a, (Response, Option<String>)> {
        Box::pin(async move { (self.send(key, intent, limit).await, None) })
    }

    /// Who signs this store's requests (the credential source, when its credentials expire),
    /// for `sets3lock doctor` and `--verbose`; never a secret. By default: nothing to say.
    fn sign_in(&self) -> Option<crate::SignIn> {
        None
    }

    /// Waits until this store can sign its requests: at once, unless its credentials come
    /// from a source whose first fetch an async mode awaits instead of blocking for it when
    /// the store opens. Why not, if that fetch failed (the error opening the store gives in
    /// the blocking mode). By default: ready.
    fn ready(&self) -> BoxFuture<'_, Result<(), crate::Error>> {
        Box::pin(async { Ok(()) })
    }

    /// Who the requests are made as, for remembering what was found out with these
    /// credentials (the store check's verdict): a name that differs when the permissions may,
    /// never a secret. By default: the signer's name ([`sign_in`](Store::sign_in)).
    fn identity(&self) -> Option<String> {
        self.sign_in().map(|s| s.source)
    }
}

/// Which store, at which endpoint, which bucket (or container).
///
/// ```
/// use sets3lock::StoreId;
/// let id = StoreId::new(sets3lock::proto::Scheme::Azure, "http://127.0.0.1:10000", "locks");
/// assert_eq!(id.bucket(), "locks");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StoreId {
    scheme: Scheme,
    endpoint: String,
    bucket: String,
}

impl StoreId {
    /// The store `scheme` at `endpoint` (scheme, host and port, as people write it), bucket
    /// or container `bucket`.
    pub fn new(scheme: Scheme, endpoint: &str, bucket: &str) -> StoreId {
        StoreId {
            scheme,
            endpoint: endpoint.to_owned(),
            bucket: bucket.to_owned(),
        }
    }

    /// The kind of store.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// The endpoint.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The bucket or container.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }
}

impl fmt::Display for StoreId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.scheme, self.endpoint, self.bucket)
    }
}

/// How the drivers send through a store: each request within the request timeout, ending by a
/// deadline if there is one (but given at least `LAST_REQUEST`), and seen by the observer.
pub(crate) struct Sender<'a> {
    pub(crate) store: &'a dyn Store,
    pub(crate) timeout: Duration,
    pub(crate) deadline: Option<Stamp>,
    pub(crate) observer: Option<&'a Observer>,
}

impl<'a> Sender<'a> {
    /// Sends through `store`, each request within `timeout`.
    pub(crate) fn new(
        store: &'a dyn Store,
        timeout: Duration,
        observer: Option<&'a Observer>,
    ) -> Self {
        Sender {
            store,
            timeout,
            deadline: None,
            observer,
        }
    }

    /// The same, with every request ending by `deadline`.
    pub(crate) fn until(self, deadline: Option<Stamp>) -> Self {
        Sender { deadline, ..self }
    }

    /// Whether the deadline has passed.
    pub(crate) fn past_deadline(&self) -> bool {
        self.deadline.is_some_and(|d| Stamp::now() >= d)
    }

    /// How long the next request may take.
    pub(crate) fn limit(&self) -> Duration {
        time_limit(self.timeout, self.deadline)
    }

    /// Who watches.
    pub(crate) fn observer(&self) -> Option<&'a Observer> {
        self.observer
    }

    /// Sends `intent` on `key`.
    pub(crate) async fn send(&self, key: &str, intent: &Intent) -> Response {
        self.store.send(key, intent, self.limit()).await
    }
}
