//! Google Cloud Storage as a [`Store`]: one bucket, through the JSON API.
//!
//! GCS takes one write per second on an object name and answers more with 429. A 429 is read
//! as an unknown outcome (the core reads back, then writes again), and this store holds the
//! next write of that key until a second after the 429, so the retry does not meet the limit
//! again. Reads are not limited.

use crate::driver::clock::Stamp;
use crate::driver::http::{Settings, Transport};
use crate::driver::server_time::ServerTime;
use crate::driver::store::BoxFuture;
use crate::driver::store::{Store, StoreId};
use crate::gcs::request::{plain_delete, request};
use crate::gcs::token::{service_account, Source, Tokens};
use crate::{Error, Options};
use core::time::Duration;
use sets3lock_proto::{Ambiguity, Intent, IntentKind, Response, Scheme};
use std::collections::HashMap;
use std::sync::Mutex;
use url::Url;

/// After a 429, the next write of the same object waits this long.
const AFTER_429: Duration = Duration::from_secs(1);

/// A request is not sent with less time than this left.
const MIN_LEFT: Duration = Duration::from_millis(100);

/// One bucket: the endpoint, the tokens, and when each throttled key may be written again.
#[derive(Debug)]
pub(crate) struct GcsStore {
    id: StoreId,
    base: Url,
    bucket: String,
    tokens: Tokens,
    /// The server's clock, learned from its replies' `Date`: what signed tokens are dated by.
    time: ServerTime,
    transport: Transport,
    throttled: Mutex<HashMap<String, Stamp>>,
}

impl GcsStore {
    /// The bucket `name`, reached as `options.gcs` says.
    pub(crate) fn open(name: &str, options: &Options, blocking: bool) -> Result<GcsStore, Error> {
        let gcs = &options.gcs;
        let base = match &gcs.endpoint {
            Some(e) => e.clone(),
            None => crate::parse_endpoint("https://storage.googleapis.com")?,
        };
        let source = if gcs.anonymous {
            Source::Anonymous
        } else if let Some(token) = &gcs.token {
            Source::Fixed(token.clone())
        } else if let Some(path) = &gcs.credentials_file {
            service_account(path)?
        } else {
            let host = gcs.metadata_host.clone();
            Source::Metadata(host.unwrap_or_else(|| "metadata.google.internal".into()))
        };
        let settings = Settings {
            endpoint: Some(base.clone()),
            ca_bundle: options.ca_bundle.clone(),
            request_timeout: options.request_timeout,
        };
        let origin = base.origin().ascii_serialization();
        Ok(GcsStore {
            id: StoreId::new(Scheme::Gcs, &origin, name),
            base,
            bucket: name.to_owned(),
            tokens: Tokens::new(source),
            time: ServerTime::default(),
            transport: Transport::new(blocking, &settings)?,
            throttled: Mutex::new(HashMap::new()),
        })
    }

    fn throttled(&self) -> std::sync::MutexGuard<'_, HashMap<String, Stamp>> {
        // Poisoned only by a panic while inserting: the map is still a map.
        self.throttled.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits (within `limit`) until `key` may be written again after a 429; returns the time
    /// left of `limit`.
    async fn paced(&self, key: &str, limit: Duration) -> Duration {
        let not_before = self.throttled().get(key).copied();
        let Some(at) = not_before else {
            return limit;
        };
        let wait = at.since(Stamp::now()).min(limit);
        if !wait.is_zero() {
            self.transport.pause(wait).await;
        }
        if Stamp::now() >= at {
            self.throttled().remove(key);
        }
        limit.saturating_sub(wait)
    }

    async fn exchange(
        &self,
        key: &str,
        kind: IntentKind,
        limit: Duration,
        build: impl Fn(Option<&str>) -> crate::driver::http::HttpRequest,
    ) -> Response {
        let writes = kind != IntentKind::Get;
        let started = Stamp::now();
        let limit = if writes {
            self.paced(key, limit).await
        } else {
            limit
        };
        if limit.is_zero() {
            return Response::Ambiguous(Ambiguity::NotSent {
                detail:
                    "GCS's one-write-per-second limit on this object: no time left to wait it out"
                        .into(),
            });
        }
        let now = u64::try_from(self.time.now().as_second()).unwrap_or(0);
        let token = match self.tokens.current(&self.transport, limit, now).await {
            Ok(t) => t,
            Err(no_token) => return no_token,
        };
        let left = limit.saturating_sub(Stamp::now().since(started));
        if left < MIN_LEFT {
            return Response::Ambiguous(Ambiguity::NotSent {
                detail: "getting a token took the request's whole time limit".into(),
            });
        }
        let sent = std::time::SystemTime::now();
        let reply = match self.transport.exchange(build(token.as_deref()), left).await {
            Ok(r) => r,
            Err(no_reply) => return no_reply,
        };
        // Tokens are dated by the server's clock (a signed one is refused if its time is off).
        let _ = self
            .time
            .learn(&reply.headers, sent, std::time::SystemTime::now(), false);
        if writes && reply.status.as_u16() == 429 {
            let at = Stamp::now().plus(AFTER_429);
            self.throttled().insert(key.to_owned(), at);
        }
        if reply.status.as_u16() == 401 {
            // An expired or refused token: the next request gets a new one.
            self.tokens.forget();
        }
        sets3lock_proto::reply::gcs::classify(kind, reply.status, &reply.headers, &reply.body)
    }
}

impl Store for GcsStore {
    fn send<'a>(
        &'a self,
        key: &'a str,
        intent: &'a Intent,
        limit: Duration,
    ) -> BoxFuture<'a, Response> {
        Box::pin(async move {
            let build = |token: Option<&str>| request(&self.base, &self.bucket, key, intent, token);
            self.exchange(key, intent.kind(), limit, build).await
        })
    }

    fn discard<'a>(&'a self, key: &'a str, limit: Duration) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let build = |token: Option<&str>| plain_delete(&self.base, &self.bucket, key, token);
            let _ = self
                .exchange(key, IntentKind::DeleteIfMatch, limit, build)
                .await;
        })
    }

    fn id(&self) -> &StoreId {
        &self.id
    }
}
