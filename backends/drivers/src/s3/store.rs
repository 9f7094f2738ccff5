//! S3 as a [`Store`]: each intent presigned by the wire layer ([`sets3lock_wire::s3`]) at the
//! server's time, sent, and read by the core's S3 reply table; a refusal of the request's time that taught a new clock
//! offset is signed again and sent once more (a refused request was not applied).

use crate::driver::http::{built, Io, Reply, Settings, Transport};
use crate::driver::server_time::{exchange_signed, ServerTime};
use crate::driver::store::BoxFuture;
use crate::driver::store::{Store, StoreId};
use crate::error::EndpointError;
use crate::s3::credentials::{to_sign_with, AwsCredentials};
use crate::signin::credentials::Credentials;
use crate::signin::ready::{no_credentials, Readiness};
use crate::signin::source::CredentialSource;
use crate::{Error, Observer, Options, S3Settings};
use core::time::Duration;
use sets3lock_proto::{Intent, IntentKind, Response, Scheme};
use sets3lock_wire::s3::{Bucket, Keys};
use std::sync::Arc;
use std::time::SystemTime;
use url::Url;

/// The GCS host whose S3-style API accepts condition headers and ignores them.
const GCS_HOST: &str = "storage.googleapis.com";

/// One S3 bucket: its addressing, the credentials to sign with, the server's clock.
#[derive(Debug)]
pub(crate) struct S3Store {
    id: StoreId,
    bucket: Bucket,
    credentials: Arc<dyn CredentialSource<AwsCredentials>>,
    /// Whether the first credentials are at hand.
    ready: Arc<Readiness>,
    expiry: Duration,
    /// The server's time, learned from its replies: what requests are signed at.
    time: Arc<ServerTime>,
    transport: Transport,
    observer: Option<Observer>,
}

impl S3Store {
    /// The bucket `name` as `options` say to reach it, through the client of `io`'s mode.
    pub(crate) fn open(name: &str, options: &Options, io: Io) -> Result<S3Store, Error> {
        let s3 = &options.s3;
        let (endpoint, custom) = match &s3.endpoint {
            Some(e) => (e.clone(), true),
            None => {
                // The region's, in its partition (`s3.cn-north-1.amazonaws.com.cn`).
                let aws = crate::signin::aws::partition::endpoint("s3", &s3.region).map_err(
                    |reason| Error::InvalidEndpoint {
                        endpoint: format!("https://s3.{}.amazonaws.com", s3.region),
                        reason: EndpointError::Region(reason),
                    },
                )?;
                (crate::parse_endpoint(&aws)?, false)
            }
        };
        if endpoint
            .host_str()
            .is_some_and(|h| h == GCS_HOST || h.ends_with(&format!(".{GCS_HOST}")))
        {
            return Err(Error::Settings(crate::SettingsError::GcsIgnoresConditions));
        }
        // After the endpoint: a GCS endpoint is refused whatever the credentials.
        // The chain, if the settings leave it to the store: found when the first store opens,
        // from the process environment and the profile named, and kept for the settings.
        // The region and the S3 endpoint are the settings' own (the STS region with them).
        // Its token services trust what the store trusts.
        let credentials = match s3.signer() {
            Some(source) => {
                s3.chain_ca.set(options.ca_bundle.clone());
                source
            }
            None => {
                let inputs = format!("{:?} {} {:?}", s3.profile, s3.region, s3.endpoint);
                s3.found.get_or_find(inputs, || {
                    let endpoint = s3.endpoint.as_ref().map(Url::to_string);
                    let var = |name: &str| match name {
                        "AWS_REGION" => Some(s3.region.clone()),
                        "AWS_ENDPOINT_URL_S3" if endpoint.is_some() => endpoint.clone(),
                        other => crate::options::env_var(other),
                    };
                    let found = S3Settings::from_vars_and_profile(s3.profile.as_deref(), var)?;
                    found.chain_ca.set(options.ca_bundle.clone());
                    // The chain settles on keys or on a source (one that says why it has none).
                    found
                        .signer()
                        .ok_or_else(|| no_credentials("AWS", "the AWS chain found nothing".into()))
                })?
            }
        };
        let path_style = s3.path_style.unwrap_or(custom || name.contains('.'));
        let bucket = Bucket::new(endpoint.as_str(), name, &s3.region, path_style).map_err(|e| {
            Error::InvalidEndpoint {
                endpoint: endpoint.to_string(),
                reason: EndpointError::Bucket(e.to_string()),
            }
        })?;
        let settings = Settings {
            endpoint: s3.endpoint.clone(),
            ca_bundle: options.ca_bundle.clone(),
            request_timeout: options.request_timeout,
            direct: false,
        };
        let transport = Transport::new(io, &settings)?;
        // Last, once the rest is known to be right: a source that fetches (a profile's role,
        // web identity, instance metadata) gets its first credentials, or says in one line why
        // there are none (see `Readiness`). Keys given are at hand.
        let ready = match &s3.credentials {
            Credentials::Fixed(_) => Readiness::at_once(),
            _ => {
                let source = credentials.clone();
                Readiness::of(move || source.ready().map_err(|e| e.to_string()), io, "AWS")?
            }
        };
        Ok(S3Store {
            id: StoreId::new(Scheme::S3, &bucket.origin(), name),
            bucket,
            credentials,
            ready,
            expiry: s3.presign_expiry.max(Duration::from_secs(1)),
            time: Arc::default(),
            transport,
            observer: options.observer.clone(),
        })
    }

    /// Presigns (with `sign`), sends and reads the reply with S3's table; the raw reply too.
    async fn exchange(
        &self,
        kind: IntentKind,
        limit: Duration,
        sign: impl Fn(
            &Keys,
            SystemTime,
        ) -> Result<sets3lock_wire::HttpRequest, sets3lock_wire::WireError>,
    ) -> Result<(Reply, Response), Response> {
        // Never blocks: an async mode's first request awaits the first credentials here.
        let limit = self
            .ready
            .within(limit, &self.transport)
            .await
            .map_err(|why| crate::signin::unsigned("credentials", why))?;
        let read =
            |r: &Reply| sets3lock_proto::reply::s3::classify(kind, r.status, &r.headers, &r.body);
        let sign = |time: SystemTime| {
            let keys = to_sign_with(self.credentials.as_ref())?;
            built(sign(&keys, time))
        };
        let observer = self.observer.as_ref();
        exchange_signed(&self.transport, &self.time, observer, limit, read, sign).await
    }

    fn sign_intent<'a>(
        &'a self,
        key: &'a str,
        intent: &'a Intent,
    ) -> impl Fn(&Keys, SystemTime) -> Result<sets3lock_wire::HttpRequest, sets3lock_wire::WireError> + 'a
    {
        move |keys, time| {
            sets3lock_wire::s3::request(&self.bucket, keys, key, intent, time, self.expiry)
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
            let sign = |keys: &Keys, time: SystemTime| {
                sets3lock_wire::s3::delete(&self.bucket, keys, key, time, self.expiry)
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

    fn ready(&self) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async move {
            self.ready
                .wait()
                .await
                .map_err(|reason| no_credentials("AWS", reason))
        })
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
                    let version = sets3lock_wire::s3::version_id(&reply.headers).map(str::to_owned);
                    (response, version)
                }
                Err(no_reply) => (no_reply, None),
            }
        })
    }
}
