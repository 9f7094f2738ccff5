//! S3 as a [`Store`]: each intent presigned with SigV4 at the server's time, sent, and read
//! by the core's S3 reply table; a refusal of the request's time that taught a new clock
//! offset is signed again and sent once more (a refused request was not applied).

use crate::driver::http::{HttpRequest, Reply, Settings, Transport};
use crate::driver::server_time::{exchange_signed, ServerTime};
use crate::driver::store::BoxFuture;
use crate::driver::store::{Store, StoreId};
use crate::error::EndpointError;
use crate::s3::credentials::{source_of, to_sign_with, AwsCredentialSource};
use crate::s3::sign::{presign_key, presign_plain_delete};
use crate::{Error, Observer, Options};
use core::time::Duration;
use rusty_s3::{Bucket, UrlStyle};
use sets3lock_proto::{Intent, IntentKind, Response, Scheme};
use std::sync::Arc;

/// The GCS host whose S3-style API accepts condition headers and ignores them.
const GCS_HOST: &str = "storage.googleapis.com";

/// One S3 bucket: its addressing, the credentials to sign with, the server's clock.
#[derive(Debug)]
pub(crate) struct S3Store {
    id: StoreId,
    bucket: Bucket,
    credentials: Arc<dyn AwsCredentialSource>,
    expiry: Duration,
    /// The server's time, learned from its replies: what requests are signed at.
    time: Arc<ServerTime>,
    transport: Transport,
    observer: Option<Observer>,
}

impl S3Store {
    /// The bucket `name` as `options` say to reach it, through a blocking or an async client.
    pub(crate) fn open(name: &str, options: &Options, blocking: bool) -> Result<S3Store, Error> {
        let s3 = &options.s3;
        let (endpoint, custom) = match &s3.endpoint {
            Some(e) => (e.clone(), true),
            None => {
                let aws = format!("https://s3.{}.amazonaws.com", s3.region);
                (crate::parse_endpoint(&aws)?, false)
            }
        };
        if endpoint
            .host_str()
            .is_some_and(|h| h == GCS_HOST || h.ends_with(&format!(".{GCS_HOST}")))
        {
            return Err(Error::GcsIgnoresConditions);
        }
        // After the endpoint: a GCS endpoint is refused whatever the credentials.
        let credentials = source_of(s3).ok_or(Error::MissingCredentials)?;
        // A source that fetches (a profile's role, web identity, instance metadata) gets its
        // first credentials now, or says in one line why there are none.
        credentials.ready().map_err(|reason| Error::NoCredentials {
            store: "AWS",
            reason,
        })?;
        let path_style = s3.path_style.unwrap_or(custom || name.contains('.'));
        let style = if path_style {
            UrlStyle::Path
        } else {
            UrlStyle::VirtualHost
        };
        let bucket = Bucket::new(endpoint.clone(), style, name.to_owned(), s3.region.clone())
            .map_err(|e| Error::InvalidEndpoint {
                endpoint: endpoint.to_string(),
                reason: EndpointError::Bucket(e.to_string()),
            })?;
        let settings = Settings {
            endpoint: s3.endpoint.clone(),
            ca_bundle: options.ca_bundle.clone(),
            request_timeout: options.request_timeout,
            direct: false,
        };
        let origin = bucket.base_url().origin().ascii_serialization();
        Ok(S3Store {
            id: StoreId::new(Scheme::S3, &origin, name),
            bucket,
            credentials,
            expiry: s3.presign_expiry.max(Duration::from_secs(1)),
            time: Arc::default(),
            transport: Transport::new(blocking, &settings)?,
            observer: options.observer.clone(),
        })
    }

    /// Presigns (with `sign`), sends and reads the reply with S3's table; the raw reply too.
    async fn exchange(
        &self,
        kind: IntentKind,
        limit: Duration,
        sign: impl Fn(&rusty_s3::Credentials, &jiff::Timestamp) -> HttpRequest,
    ) -> Result<(Reply, Response), Response> {
        let read =
            |r: &Reply| sets3lock_proto::reply::s3::classify(kind, r.status, &r.headers, &r.body);
        let sign = |time: &jiff::Timestamp| {
            let credentials = to_sign_with(self.credentials.as_ref())?;
            Ok(sign(&credentials, time))
        };
        let observer = self.observer.as_ref();
        exchange_signed(&self.transport, &self.time, observer, limit, read, sign).await
    }

    fn sign_intent<'a>(
        &'a self,
        key: &'a str,
        intent: &'a Intent,
    ) -> impl Fn(&rusty_s3::Credentials, &jiff::Timestamp) -> HttpRequest + 'a {
        move |credentials, time| {
            presign_key(&self.bucket, credentials, self.expiry, key, intent, time)
        }
    }
}

impl Store for S3Store {
    fn send<'a>(
        &'a self,
        key: &'a str,
        intent: &'a Intent,
        limit: Duration,
    ) -> BoxFuture<'a, Response> {
        Box::pin(async move {
            match self
                .exchange(intent.kind(), limit, self.sign_intent(key, intent))
                .await
            {
                Ok((_, response)) => response,
                Err(no_reply) => no_reply,
            }
        })
    }

    fn discard<'a>(&'a self, key: &'a str, limit: Duration) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let sign = |credentials: &rusty_s3::Credentials, time: &jiff::Timestamp| {
                presign_plain_delete(&self.bucket, credentials, self.expiry, key, time)
            };
            let _ = self.exchange(IntentKind::DeleteIfMatch, limit, sign).await;
        })
    }

    fn id(&self) -> &StoreId {
        &self.id
    }

    fn sign_in(&self) -> Option<crate::SignIn> {
        Some(self.credentials.sign_in())
    }

    fn send_versioned<'a>(
        &'a self,
        key: &'a str,
        intent: &'a Intent,
        limit: Duration,
    ) -> BoxFuture<'a, (Response, Option<String>)> {
        Box::pin(async move {
            match self
                .exchange(intent.kind(), limit, self.sign_intent(key, intent))
                .await
            {
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
        })
    }
}
