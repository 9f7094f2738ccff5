//! Azure Blob Storage as a [`Store`]: one container of one account.

use crate::azure::sign::{blob_url, plain, request, Auth};
use crate::driver::http::{Reply, Settings, Transport};
use crate::driver::server_time::{exchange_signed, ServerTime};
use crate::driver::store::BoxFuture;
use crate::driver::store::{Store, StoreId};
use crate::{Error, Observer, Options};
use base64::Engine as _;
use core::time::Duration;
use http::{HeaderMap, Method};
use sets3lock_proto::{Ambiguity, Intent, IntentKind, Response, Scheme};
use url::Url;

/// One container: the blob endpoint, who signs, the server's clock (`x-ms-date` must be
/// within 15 minutes of it).
#[derive(Debug)]
pub(crate) struct AzureStore {
    id: StoreId,
    endpoint: Url,
    container: String,
    auth: Auth,
    time: ServerTime,
    transport: Transport,
    observer: Option<Observer>,
}

impl AzureStore {
    /// The container `name`, reached as `options.azure` says.
    pub(crate) fn open(name: &str, options: &Options, blocking: bool) -> Result<AzureStore, Error> {
        let azure = &options.azure;
        let endpoint = match (&azure.endpoint, &azure.account) {
            (Some(e), _) => e.clone(),
            (None, Some(account)) => {
                crate::parse_endpoint(&format!("https://{account}.blob.core.windows.net"))?
            }
            (None, None) => return Err(Error::MissingAzureCredentials),
        };
        // A key wins, then a SAS, then bearer tokens (your own source, or the chain
        // `AzureSettings::from_vars` found).
        let auth = match (&azure.key, &azure.sas, &azure.account, &azure.token_source) {
            (Some(key), _, Some(account), _) => Auth::SharedKey {
                account: account.clone(),
                key: base64::engine::general_purpose::STANDARD
                    .decode(key.trim())
                    .map_err(|_| Error::AzureKey)?,
            },
            (_, Some(sas), _, _) => Auth::Sas(sas.trim_start_matches('?').to_owned()),
            (_, _, _, Some(source)) => {
                if endpoint.scheme() != "https" {
                    return Err(Error::BearerOverHttp {
                        endpoint: endpoint.to_string(),
                    });
                }
                // The first token now, or one line saying what was tried and what to do.
                source.ready().map_err(|reason| Error::NoCredentials {
                    store: "Azure",
                    reason,
                })?;
                Auth::Bearer(source.clone())
            }
            _ => return Err(Error::MissingAzureCredentials),
        };
        let settings = Settings {
            endpoint: Some(endpoint.clone()),
            ca_bundle: options.ca_bundle.clone(),
            request_timeout: options.request_timeout,
            direct: false,
        };
        let origin = endpoint.origin().ascii_serialization();
        let shown = format!("{origin}{}", endpoint.path().trim_end_matches('/'));
        Ok(AzureStore {
            id: StoreId::new(Scheme::Azure, &shown, name),
            endpoint,
            container: name.to_owned(),
            auth,
            time: ServerTime::default(),
            transport: Transport::new(blocking, &settings)?,
            observer: options.observer.clone(),
        })
    }

    /// Signs (with `sign`, at the server's time), sends, and reads the reply with Azure's
    /// table.
    async fn exchange(
        &self,
        kind: IntentKind,
        limit: Duration,
        sign: impl Fn(&jiff::Timestamp) -> Result<crate::driver::http::HttpRequest, Response>,
    ) -> Response {
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
            let url = blob_url(&self.endpoint, &self.container, key);
            let sign = |time: &jiff::Timestamp| request(&url, &self.auth, intent, time);
            self.exchange(intent.kind(), limit, sign).await
        })
    }

    fn discard<'a>(&'a self, key: &'a str, limit: Duration) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let url = blob_url(&self.endpoint, &self.container, key);
            let sign = |time: &jiff::Timestamp| {
                plain(
                    Method::DELETE,
                    &url,
                    &self.auth,
                    HeaderMap::new(),
                    bytes::Bytes::new(),
                    time,
                )
            };
            let _ = self.exchange(IntentKind::DeleteIfMatch, limit, sign).await;
        })
    }

    fn id(&self) -> &StoreId {
        &self.id
    }

    fn sign_in(&self) -> Option<crate::SignIn> {
        Some(match &self.auth {
            Auth::SharedKey { account, .. } => {
                crate::SignIn::new(format!("Shared Key (account {account})"))
            }
            Auth::Sas(_) => crate::SignIn::new("a SAS token"),
            Auth::Bearer(source) => source.sign_in(),
        })
    }

    fn identity(&self) -> Option<String> {
        match &self.auth {
            // Two SAS tokens may grant different permissions: each is its own identity, named
            // by a fingerprint (never the token).
            Auth::Sas(query) => {
                use sha2::Digest as _;
                let digest = sha2::Sha256::digest(query.as_bytes());
                let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
                Some(format!("a SAS token ({hex})"))
            }
            _ => self.sign_in().map(|s| s.source),
        }
    }
}
