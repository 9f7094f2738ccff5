//! Single requests on any key of a bucket, outside the lock protocol: what operator tools
//! (`status`, `unlock`, `doctor`) and tests need.

use crate::api::open::{bucket_url, open_store};
use crate::driver::store::{Store, StoreId};
use crate::driver::threads::block_on;
use crate::{Error, Options};
use sets3lock_proto::{ETag, Holder, Intent, LockUrl, Response, Scheme};
use std::sync::Arc;
use std::time::Duration;

/// A blocking client for one bucket (or container): each call is one request, read by the
/// store's reply table.
///
/// ```no_run
/// use sets3lock::proto::Intent;
/// use sets3lock::{Client, Options, Scheme};
/// let client = Client::new("s3://my-bucket", &Options::from_env(Scheme::S3)?)?;
/// if let Some((etag, holder)) = client.status("locks/nightly")? {
///     println!("held by {holder} (ETag {etag})");
/// }
/// # Ok::<(), sets3lock::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Client {
    store: Arc<dyn Store>,
    timeout: Duration,
}

impl Client {
    /// A client for the bucket (or container) of `url`: `s3://bucket`, `az://container` or
    /// `gs://bucket` (a key after it is ignored; a bare name is an S3 bucket).
    pub fn new(url: &str, options: &Options) -> Result<Client, Error> {
        let url = LockUrl::parse(&bucket_url(url))?;
        Client::in_store(url.scheme(), url.bucket(), options)
    }

    /// A client for the bucket (or container) `bucket` of the store `scheme`.
    pub fn in_store(scheme: Scheme, bucket: &str, options: &Options) -> Result<Client, Error> {
        Ok(Client {
            store: open_store(scheme, bucket, options, crate::blocking::io())?,
            timeout: options.request_timeout,
        })
    }

    /// The same client, whose requests wait at most `timeout` for their answers: for a
    /// deadline over several requests (the store and its connections are shared).
    ///
    /// ```no_run
    /// # fn run(client: &sets3lock::Client) {
    /// use std::time::{Duration, Instant};
    /// let deadline = Instant::now() + Duration::from_secs(5);
    /// let left = deadline.saturating_duration_since(Instant::now());
    /// let status = client.with_timeout(left).status("locks/deploy");
    /// # }
    /// ```
    pub fn with_timeout(&self, timeout: Duration) -> Client {
        Client {
            store: self.store.clone(),
            timeout,
        }
    }

    /// Which store, endpoint and bucket.
    pub fn id(&self) -> &StoreId {
        self.store.id()
    }

    /// Who signs the requests: the credential source and when its credentials expire (never
    /// a secret); `None` for a store that does not say.
    pub fn sign_in(&self) -> Option<crate::SignIn> {
        self.store.sign_in()
    }

    /// Sends one request on `key`.
    pub fn send(&self, key: &str, intent: &Intent) -> Response {
        block_on(self.store.send(key, intent, self.timeout))
    }

    /// Sends one request on `key`, and also returns the version its reply named, if the store
    /// keeps versions (S3's `x-amz-version-id`; absent, or `null`, on a bucket without
    /// versioning): how `sets3lock doctor` learns that every write leaves a version behind.
    pub fn send_versioned(&self, key: &str, intent: &Intent) -> (Response, Option<String>) {
        block_on(self.store.send_versioned(key, intent, self.timeout))
    }

    /// Removes `key` whatever it holds (no condition): only for throw-away keys of your own,
    /// never for a lock (it would delete whoever holds it). For tests and probes.
    #[doc(hidden)]
    pub fn discard(&self, key: &str) {
        block_on(self.store.discard(key, self.timeout));
    }

    /// Who holds the lock at `key`: `None` when it is free.
    pub fn status(&self, key: &str) -> Result<Option<(ETag, Holder)>, Error> {
        match self.send(
            key,
            &Intent::Get {
                if_none_match: None,
            },
        ) {
            Response::Object { etag, body, .. } => Ok(Some((etag, Holder::decode(&body)))),
            Response::Absent => Ok(None),
            Response::Refused(e) => Err(Error::Store(e)),
            Response::Ambiguous(why) => Err(Error::Store(sets3lock_proto::Error::GaveUp {
                attempts: 1,
                last: Box::new(sets3lock_proto::Setback::Ambiguous(why)),
            })),
            other => Err(Error::Store(sets3lock_proto::Error::GaveUp {
                attempts: 1,
                last: Box::new(sets3lock_proto::Setback::Ambiguous(
                    sets3lock_proto::Ambiguity::Unexpected {
                        reply: other.name(),
                        request: sets3lock_proto::IntentKind::Get,
                    },
                )),
            })),
        }
    }
}
