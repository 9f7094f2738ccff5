//! Azure Blob Storage as a [`Store`]: one container of one account, its requests built by
//! the wire layer ([`sets3lock_wire::azure`]) at the server's time.

use crate::driver::http::{built, Io, Reply, Settings, Transport};
use crate::driver::server_time::{exchange_signed, ServerTime};
use crate::driver::store::BoxFuture;
use crate::driver::store::{Store, StoreId};
use crate::signin::ready::{no_credentials, Readiness};
use crate::{BearerToken, Error, Observer, Options};
use base64::Engine as _;
use core::time::Duration;
use sets3lock_proto::{Ambiguity, Intent, IntentKind, Response, Scheme};
use sets3lock_wire::azure::Container;
use sets3lock_wire::WireError;
use std::sync::Arc;
use std::time::SystemTime;
use url::Url;

/// Who signs: fixed material (Shared Key, a SAS), or a source asked for a bearer token before
/// each request.
#[derive(Clone)]
enum Auth {
    /// Shared Key or a SAS, as the wire layer takes them.
    Fixed(sets3lock_wire::azure::Auth),
    /// `Authorization: Bearer <token>`, the token asked of the source for each request.
    Bearer(Arc<dyn crate::CredentialSource<crate::BearerToken>>),
}

impl core::fmt::Debug for Auth {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Auth::Fixed(auth) => auth.fmt(f),
            Auth::Bearer(_) => f.write_str("Bearer(..)"),
        }
    }
}

impl Auth {
    /// What the wire layer signs with now; or, when there is no token to sign with, the
    /// response that stands for a request not sent.
    fn current(&self) -> Result<sets3lock_wire::azure::Auth, Response> {
        match self {
            Auth::Fixed(auth) => Ok(auth.clone()),
            Auth::Bearer(source) => source
                .current()
                .map(|t| sets3lock_wire::azure::Auth::Bearer(t.secret().to_owned()))
                .map_err(|why| no_token(why.to_string())),
        }
    }
}

/// The answer that stands for a request with no token to sign it: not sent.
fn no_token(why: String) -> Response {
    crate::signin::unsigned("Azure token", why)
}

/// One container: the blob endpoint, who signs, the server's clock (`x-ms-date` must be
/// within 15 minutes of it).
#[derive(Debug)]
pub(crate) struct AzureStore {
    id: StoreId,
    endpoint: Url,
    container: Container,
    auth: Auth,
    /// Whether the first token is at hand.
    ready: Arc<Readiness>,
    time: ServerTime,
    transport: Transport,
    observer: Option<Observer>,
}

impl AzureStore {
    /// The container `name`, reached as `options.azure` says.
    pub(crate) fn open(name: &str, options: &Options, io: Io) -> Result<AzureStore, Error> {
        let azure = &options.azure;
        let endpoint = match (&azure.endpoint, &azure.account) {
            (Some(e), _) => e.clone(),
            (None, Some(account)) => {
                crate::parse_endpoint(&format!("https://{account}.blob.core.windows.net"))?
            }
            (None, None) => {
                return Err(Error::Settings(
                    crate::SettingsError::MissingAzureCredentials,
                ))
            }
        };
        // A key wins, then a SAS, then bearer tokens (given, your own source, or the chain).
        let auth = match (&azure.key, &azure.sas, &azure.account) {
            (Some(key), _, Some(account)) => Auth::Fixed(sets3lock_wire::azure::Auth::SharedKey {
                account: account.clone(),
                key: base64::engine::general_purpose::STANDARD
                    .decode(key.trim())
                    .map_err(|_| Error::Settings(crate::SettingsError::AzureKey))?,
            }),
            (_, Some(sas), _) => Auth::Fixed(sets3lock_wire::azure::Auth::Sas(
                sas.trim_start_matches('?').to_owned(),
            )),
            (_, _, account) => {
                // The chain's token services trust what the store trusts.
                azure.chain_ca.set(options.ca_bundle.clone());
                let source = match (azure.credentials.source(shown), account) {
                    (Some(source), _) => source,
                    // The chain, from the process environment, for the account: found when
                    // the first store opens, and kept for the settings.
                    (None, Some(_)) => azure.found.get_or_find(String::new(), || {
                        crate::signin::azure::resolve(&crate::options::env_var, &azure.chain_ca)
                    })?,
                    (None, None) => {
                        return Err(Error::Settings(
                            crate::SettingsError::MissingAzureCredentials,
                        ))
                    }
                };
                if endpoint.scheme() != "https" {
                    return Err(Error::Settings(crate::SettingsError::BearerOverHttp {
                        endpoint: endpoint.to_string(),
                    }));
                }
                Auth::Bearer(source)
            }
        };
        let settings = Settings {
            endpoint: Some(endpoint.clone()),
            ca_bundle: options.ca_bundle.clone(),
            request_timeout: options.request_timeout,
            direct: false,
        };
        let container =
            Container::new(endpoint.as_str(), name).map_err(|e| Error::InvalidEndpoint {
                endpoint: endpoint.to_string(),
                reason: crate::error::EndpointError::Bucket(e.to_string()),
            })?;
        let origin = endpoint.origin().ascii_serialization();
        let shown = format!("{origin}{}", endpoint.path().trim_end_matches('/'));
        let transport = Transport::new(io, &settings)?;
        // Last, once the rest is known to be right: the first token, or one line saying what
        // was tried and what to do (see `Readiness`).
        let ready = match &auth {
            Auth::Fixed(_) => Readiness::at_once(),
            Auth::Bearer(source) => {
                let source = source.clone();
                Readiness::of(
                    move || source.ready().map_err(|e| e.to_string()),
                    io,
                    "Azure",
                )?
            }
        };
        Ok(AzureStore {
            id: StoreId::new(Scheme::Azure, &shown, name),
            endpoint,
            container,
            auth,
            ready,
            time: ServerTime::default(),
            transport,
            observer: options.observer.clone(),
        })
    }

    /// Signs (with `sign`, at the server's time), sends, and reads the reply with Azure's
    /// table.
    async fn exchange(
        &self,
        kind: IntentKind,
        limit: Duration,
        build: impl Fn(
            &sets3lock_wire::azure::Auth,
            SystemTime,
        ) -> Result<sets3lock_wire::HttpRequest, WireError>,
    ) -> Response {
        // Never blocks: an async mode's first request awaits the first token here.
        let limit = match self.ready.within(limit, &self.transport).await {
            Ok(left) => left,
            Err(why) => return no_token(why),
        };
        let sign = |time: SystemTime| built(build(&self.auth.current()?, time));
        let read = |r: &Reply| {
            sets3lock_proto::reply::azure::classify(kind, r.status, &r.headers, &r.body)
        };
        let observer = self.observer.as_ref();
        match exchange_signed(&self.transport, &self.time, observer, limit, read, sign).await {
            Ok((_, response)) => response,
            Err(no_reply) => self.explained(no_reply),
        }
    }

    /// A host that does not resolve is most often a misspelt account name: say so.
    fn explained(&self, no_reply: Response) -> Response {
        match no_reply {
            Response::Ambiguous(Ambiguity::NotSent { detail }) if detail.contains("dns error") => {
                let host = self.endpoint.host_str().unwrap_or("the endpoint");
                Response::Ambiguous(Ambiguity::NotSent {
                    detail: format!(
                        "{host} does not resolve: check the account name (AZURE_STORAGE_ACCOUNT, or AccountName in the connection string) or the endpoint ({detail})"
                    ),
                })
            }
            other => other,
        }
    }
}

impl Store for AzureStore {
    fn send<'a>(
        &'a self,
        key: &'a str,
        intent: &'a Intent,
        limit: Duration,
    ) -> BoxFuture<'a, Response> {
        Box::pin(async move {
            let build = |auth: &_, time| {
                sets3lock_wire::azure::request(&self.container, auth, key, intent, time)
            };
            self.exchange(intent.kind(), limit, build).await
        })
    }

    fn discard<'a>(&'a self, key: &'a str, limit: Duration) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let build =
                |auth: &_, time| sets3lock_wire::azure::delete(&self.container, auth, key, time);
            let _ = self.exchange(IntentKind::DeleteIfMatch, limit, build).await;
        })
    }

    fn id(&self) -> &StoreId {
        &self.id
    }

    fn sign_in(&self) -> Option<crate::SignIn> {
        Some(match &self.auth {
            Auth::Fixed(sets3lock_wire::azure::Auth::SharedKey { account, .. }) => {
                crate::SignIn::new(format!("Shared Key (account {account})"))
            }
            Auth::Fixed(sets3lock_wire::azure::Auth::Sas(_)) => crate::SignIn::new("a SAS token"),
            Auth::Fixed(_) => crate::SignIn::new("a bearer token"),
            Auth::Bearer(source) => source.sign_in(),
        })
    }

    fn ready(&self) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(async move {
            self.ready
                .wait()
                .await
                .map_err(|reason| no_credentials("Azure", reason))
        })
    }

    fn identity(&self) -> Option<String> {
        match &self.auth {
            // Two SAS tokens may grant different permissions: each is its own identity, named
            // by a fingerprint (never the token).
            Auth::Fixed(sets3lock_wire::azure::Auth::Sas(query)) => {
                use sha2::Digest as _;
                let digest = sha2::Sha256::digest(query.as_bytes());
                let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
                Some(format!("a SAS token ({hex})"))
            }
            _ => self.sign_in().map(|s| s.source),
        }
    }
}

/// How a token given shows as a sign-in: by its fingerprint, never the token. Two tokens may
/// grant different permissions, so the store check keeps a verdict for each.
fn shown(token: &BearerToken) -> String {
    format!("an Entra ID token given ({})", token.fingerprint())
}
