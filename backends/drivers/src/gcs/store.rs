//! Google Cloud Storage as a [`Store`]: one bucket, through the JSON API.
//!
//! GCS takes one write per second on an object name and answers more with 429. A 429 is read
//! as an unknown outcome (the core reads back, then writes again), and this store holds the
//! next write of that key until a second after the 429, so the retry does not meet the limit
//! again. Reads are not limited.

use crate::driver::clock::Stamp;
use crate::driver::http::{built, Io, Settings, Transport};
use crate::driver::store::BoxFuture;
use crate::driver::store::{Store, StoreId};
use crate::gcs::token::{shown, Tokens};
use crate::signin::credentials::Credentials;
use crate::signin::ready::{no_credentials, Readiness};
use crate::{Error, Options};
use core::time::Duration;
use sets3lock_proto::{Ambiguity, Intent, IntentKind, Response, Scheme};
use sets3lock_wire::gcs::Bucket;
use sets3lock_wire::WireError;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// After a 429, the next write of the same object waits this long.
const AFTER_429: Duration = Duration::from_secs(1);

/// A request is not sent with less time than this left (well under the shortest wait the
/// core gives a hold's request, `MIN_HOLD_REQUEST_WAIT`, 100 ms: a token that is ready at once
/// must not use that up).
const MIN_LEFT: Duration = Duration::from_millis(20);

/// One bucket: the endpoint, the tokens, and when each throttled key may be written again.
#[derive(Debug)]
pub(crate) struct GcsStore {
    id: StoreId,
    bucket: Bucket,
    tokens: Tokens,
    /// Whether the first token is at hand.
    ready: Arc<Readiness>,
    transport: Transport,
    throttled: Mutex<HashMap<String, Stamp>>,
}

impl GcsStore {
    /// The bucket `name`, reached as `options.gcs` says.
    pub(crate) fn open(name: &str, options: &Options, io: Io) -> Result<GcsStore, Error> {
        let gcs = &options.gcs;
        let base = match &gcs.endpoint {
            Some(e) => e.clone(),
            None => crate::parse_endpoint("https://storage.googleapis.com")?,
        };
        let tokens = if gcs.anonymous {
            Tokens::Anonymous
        } else {
            // The chain's token services trust what the store trusts.
            gcs.chain_ca.set(options.ca_bundle.clone());
            Tokens::Source(match gcs.credentials.source(shown) {
                Some(source) => source,
                // Application Default Credentials, found when the first store opens (and kept
                // for the settings): the file or the metadata host the settings name, else
                // the process environment's.
                None => {
                    let named = crate::signin::google::Named {
                        file: gcs.credentials_file.clone(),
                        metadata_host: gcs.metadata_host.clone(),
                    };
                    gcs.found.get_or_find(format!("{named:?}"), || {
                        crate::signin::google::resolve_named(
                            &crate::options::env_var,
                            &named,
                            true,
                            &gcs.chain_ca,
                        )
                    })?
                }
            })
        };
        if let Tokens::Source(_) = &tokens {
            // A token never goes in clear off this machine.
            if !crate::signin::fetch::safe_for_secrets(&base) {
                return Err(Error::Settings(crate::SettingsError::BearerOverHttp {
                    endpoint: base.to_string(),
                }));
            }
        }
        let settings = Settings {
            endpoint: Some(base.clone()),
            ca_bundle: options.ca_bundle.clone(),
            request_timeout: options.request_timeout,
            direct: false,
        };
        let origin = base.origin().ascii_serialization();
        let bucket = Bucket::new(base.as_str(), name).map_err(|e| Error::InvalidEndpoint {
            endpoint: base.to_string(),
            reason: crate::error::EndpointError::Bucket(e.to_string()),
        })?;
        let transport = Transport::new(io, &settings)?;
        // Last, once the rest is known to be right: the first token, or one line saying what
        // was tried and what to do (see `Readiness`).
        let ready = match &tokens {
            Tokens::Source(source) if !matches!(gcs.credentials, Credentials::Fixed(_)) => {
                let source = source.clone();
                Readiness::of(
                    move || source.ready().map_err(|e| e.to_string()),
                    io,
                    "Google",
                )?
            }
            _ => Readiness::at_once(),
        };
        Ok(GcsStore {
            id: StoreId::new(Scheme::Gcs, &origin, name),
            bucket,
            tokens,
            ready,
            transport,
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
        build: impl Fn(Option<&str>) -> Result<sets3lock_wire::HttpRequest, WireError>,
    ) -> Response {
        // Never blocks: an async mode's first request awaits the first token here.
        let limit = match self.ready.within(limit, &self.transport).await {
            Ok(left) => left,
            Err(why) => return Tokens::unavailable(why),
        };
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
        let token = match self.tokens.current() {
            Ok(t) => t,
            Err(no_token) => return no_token,
        };
        let left = limit.saturating_sub(Stamp::now().since(started));
        if left < MIN_LEFT {
            return Response::Ambiguous(Ambiguity::NotSent {
                detail: "getting a token took the request's whole time limit".into(),
            });
        }
        let request = match built(build(token.as_deref())) {
            Ok(r) => r,
            Err(not_sent) => return not_sent,
        };
        let reply = match self.transport.exchange(request, left).await {
            Ok(r) => r,
            Err(no_reply) => return no_reply,
        };
        if writes && reply.status.as_u16() == 429 {
            let at = Stamp::now().plus(AFTER_429);
            self.throttled().insert(key.to_owned(), at);
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
            let build = |token: Option<&str>| {
                sets3lock_wire::gcs::request(&self.bucket, token, key, intent)
            };
            self.exchange(key, intent.kind(), limit, build).await
        })
    }

    fn discard<'a>(&'a self, key: &'a str, limit: Duration) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let build = |token: Option<&str>| sets3lock_wire::gcs::delete(&self.bucket, token, key);
            let _ = self
                .exchange(key, IntentKind::DeleteIfMatch, limit, build)
                .await;
        })
    }

    fn id(&self) -> &StoreId {
        &self.id
    }

    fn ready(&self) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async move {
            self.ready
                .wait()
                .await
                .map_err(|reason| no_credentials("Google", reason))
        })
    }

    fn sign_in(&self) -> Option<crate::SignIn> {
        Some(match &self.tokens {
            Tokens::Anonymous => crate::SignIn::new("anonymous (an emulator)"),
            Tokens::Source(source) => source.sign_in(),
        })
    }
}
