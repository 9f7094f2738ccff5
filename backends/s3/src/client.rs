//! Single requests on any key of a bucket, outside the lock protocol: what operator tools
//! (`status`, `unlock`, `doctor`) and tests need.

use crate::blocking::{block_on, Blocking};
use crate::http::{blocking_client, Link};
use crate::request::presign_key;
use crate::server_time::ServerTime;
use crate::target::bucket_of;
use crate::{Error, S3Options};
use sets3lock::{ETag, Holder, Intent, Response};
use std::time::Duration;

/// A blocking client for one bucket: each call is one presigned request, classified by the
/// core's classifier.
///
/// ```no_run
/// use sets3lock::Intent;
/// use sets3lock_s3::{Client, S3Options};
/// let client = Client::new("my-bucket", &S3Options::from_env()?)?;
/// if let Some((etag, holder)) = client.status("locks/nightly")? {
///     println!("held by {holder} (ETag {etag})");
/// }
/// # Ok::<(), sets3lock_s3::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Client {
    bucket: rusty_s3::Bucket,
    credentials: std::sync::Arc<dyn crate::CredentialSource>,
    expiry: Duration,
    timeout: Duration,
    http: reqwest::blocking::Client,
    time: std::sync::Arc<ServerTime>,
}

impl Client {
    /// A client for `bucket`.
    pub fn new(bucket: &str, options: &S3Options) -> Result<Client, Error> {
        let (bucket, credentials) = bucket_of(bucket, options)?;
        Ok(Client {
            bucket,
            credentials,
            expiry: options.presign_expiry.max(Duration::from_secs(1)),
            timeout: options.request_timeout,
            http: blocking_client(options)?,
            time: std::sync::Arc::default(),
        })
    }

    /// Sends one request on `key`.
    pub fn send(&self, key: &str, intent: &Intent) -> Response {
        block_on(
            self.link()
                .send(intent.kind(), |t| self.presign(key, intent, t)),
        )
    }

    fn link(&self) -> Link<'_, Blocking> {
        Link::new(&self.http, &self.time, self.timeout, None)
    }

    /// The request, presigned at `time`; without credentials, the reply that stands for it
    /// (a setback: nothing was sent).
    fn presign(
        &self,
        key: &str,
        intent: &Intent,
        time: &jiff::Timestamp,
    ) -> Result<crate::HttpRequest, Response> {
        let credentials = crate::credentials::to_sign_with(self.credentials.as_ref())?;
        Ok(presign_key(
            &self.bucket,
            &credentials,
            self.expiry,
            key,
            intent,
            time,
        ))
    }

    /// Sends one request on `key`, and also returns the `x-amz-version-id` its reply carried
    /// (absent, or `null`, on a bucket without versioning): how `sets3lock doctor` learns that
    /// every write leaves a version behind.
    pub fn send_versioned(&self, key: &str, intent: &Intent) -> (Response, Option<String>) {
        let sign = |t: &jiff::Timestamp| self.presign(key, intent, t);
        match block_on(self.link().exchange(intent.kind(), sign)) {
            Ok((reply, response)) => {
                let version = reply
                    .headers
                    .get("x-amz-version-id")
                    .and_then(|v| v.to_str().ok())
                    .filter(|v| !v.is_empty() && *v != "null")
                    .map(str::to_owned);
                (response, version)
            }
            Err(no_reply) => (no_reply, None),
        }
    }

    /// Who holds the lock at `key`: `None` when it is free.
    pub fn status(&self, key: &str) -> Result<Option<(ETag, Holder)>, Error> {
        match self.send(
            key,
            &Intent::Get {
                if_none_match: None,
            },
        ) {
            Response::Object { etag, body } => Ok(Some((etag, Holder::decode(&body)))),
            Response::Absent => Ok(None),
            Response::Refused(e) => Err(Error::S3(e)),
            Response::Ambiguous(why) => Err(Error::S3(sets3lock::Error::GaveUp {
                attempts: 1,
                last: Box::new(sets3lock::Setback::Ambiguous(why)),
            })),
            other => Err(Error::S3(sets3lock::Error::GaveUp {
                attempts: 1,
                last: Box::new(sets3lock::Setback::Ambiguous(
                    sets3lock::Ambiguity::Unexpected {
                        reply: other.name(),
                        request: sets3lock::IntentKind::Get,
                    },
                )),
            })),
        }
    }
}
