//! How to reach the store and the lock settings: endpoint, region, addressing, credentials,
//! the request timeout, the protocol's settings, the observer and the store check.

use crate::error::EndpointError;
use crate::Error;
use core::time::Duration;
use rusty_s3::Credentials;
use url::Url;

/// How to reach S3, and the lock settings. [`S3Options::from_env`] reads the standard AWS
/// variables; every field can be overridden in code.
///
/// ```
/// use sets3lock::S3Options;
/// let vars = |name: &str| match name {
///     "AWS_ACCESS_KEY_ID" => Some("AKIDEXAMPLE".to_string()),
///     "AWS_SECRET_ACCESS_KEY" => Some("secret".to_string()),
///     "AWS_ENDPOINT_URL" => Some("http://127.0.0.1:8333".to_string()),
///     _ => None,
/// };
/// let options = S3Options::from_vars(vars).unwrap();
/// assert_eq!(options.region, "us-east-1");
/// assert_eq!(options.endpoint.unwrap().as_str(), "http://127.0.0.1:8333/");
/// ```
#[derive(Clone, Debug)]
pub struct S3Options {
    /// The S3 endpoint; `None` means AWS (`https://s3.<region>.amazonaws.com`).
    pub endpoint: Option<Url>,
    /// The region to sign for.
    pub region: String,
    /// Path-style addressing (`endpoint/bucket/key`). `None`: on for custom endpoints and for
    /// bucket names with dots, virtual-host style otherwise.
    pub path_style: Option<bool>,
    /// The credentials; `None` (and no `credential_source`) fails with
    /// [`Error::MissingCredentials`] when the lock is opened.
    pub credentials: Option<Credentials>,
    /// A provider asked before every request (refreshing temporary credentials); takes
    /// precedence over `credentials`.
    pub credential_source: Option<std::sync::Arc<dyn crate::CredentialSource>>,
    /// How long one request may take before its outcome counts as unknown. Generous by
    /// default (20 s): some S3-compatible servers answer losers of a race seconds apart.
    pub request_timeout: Duration,
    /// How long a presigned request stays valid after it is signed (15 s): the window in
    /// which a captured request could be replayed (with the same body: PUT bodies are bound
    /// to the signature by a signed `Content-MD5`). Requests are signed at the server's time,
    /// learned from its `Date` header, so this need not cover a skewed clock.
    pub presign_expiry: Duration,
    /// A PEM file of the only CA certificates to trust for an `https` endpoint (read from
    /// `AWS_CA_BUNDLE`); `None`: the system's store. Plain-`http` endpoints read none.
    pub ca_bundle: Option<std::path::PathBuf>,
    /// The protocol settings: lease, drift bound, pacing. `host` and `pid` are filled in.
    pub lock: sets3lock_proto::Config,
    /// Sees every request, reply and event (for logging).
    pub observer: Option<crate::Observer>,
    /// The `lock` label of the instruments (feature `metrics`, see `sets3lock::metrics`);
    /// `None`: the lock's URL. One name for many keys keeps the number of series small.
    pub metrics_name: Option<String>,
    /// How the store is checked before the first lock (once per process by default).
    pub store_check: crate::StoreCheck,
    /// How to reach Azure Blob Storage, for `az://` URLs (feature `azure`).
    #[cfg(feature = "azure")]
    pub azure: crate::AzureOptions,
    /// How to reach Google Cloud Storage, for `gs://` URLs (feature `gcs`).
    #[cfg(feature = "gcs")]
    pub gcs: crate::GcsOptions,
}

impl Default for S3Options {
    fn default() -> S3Options {
        S3Options {
            endpoint: None,
            region: "us-east-1".into(),
            path_style: None,
            credentials: None,
            credential_source: None,
            request_timeout: Duration::from_secs(20),
            presign_expiry: Duration::from_secs(15),
            ca_bundle: None,
            lock: sets3lock_proto::Config::default(),
            observer: None,
            metrics_name: None,
            store_check: crate::StoreCheck::default(),
            #[cfg(feature = "azure")]
            azure: crate::AzureOptions::default(),
            #[cfg(feature = "gcs")]
            gcs: crate::GcsOptions::default(),
        }
    }
}

impl S3Options {
    /// Reads `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION`
    /// (or `AWS_DEFAULT_REGION`), `AWS_ENDPOINT_URL_S3` (or `AWS_ENDPOINT_URL`) and
    /// `AWS_CA_BUNDLE` from the process environment; with the `azure` feature also Azure's
    /// variables (`AzureOptions::from_vars`), with `gcs` Google's
    /// (`GcsOptions::from_vars`).
    pub fn from_env() -> Result<S3Options, Error> {
        S3Options::from_vars(|name| std::env::var(name).ok().filter(|v| !v.is_empty()))
    }

    /// Like [`from_env`](S3Options::from_env), with variables from `var`.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<S3Options, Error> {
        let mut options = S3Options::default();
        if let Some(region) = var("AWS_REGION").or_else(|| var("AWS_DEFAULT_REGION")) {
            options.region = region;
        }
        if let Some(endpoint) = var("AWS_ENDPOINT_URL_S3").or_else(|| var("AWS_ENDPOINT_URL")) {
            options.endpoint = Some(parse_endpoint(&endpoint)?);
        }
        options.ca_bundle = var("AWS_CA_BUNDLE").map(std::path::PathBuf::from);
        options.credentials = match (var("AWS_ACCESS_KEY_ID"), var("AWS_SECRET_ACCESS_KEY")) {
            (Some(key), Some(secret)) => Some(match var("AWS_SESSION_TOKEN") {
                Some(token) => Credentials::new_with_token(key, secret, token),
                None => Credentials::new(key, secret),
            }),
            _ => None,
        };
        #[cfg(feature = "azure")]
        {
            options.azure = crate::AzureOptions::from_vars(&var)?;
        }
        #[cfg(feature = "gcs")]
        {
            options.gcs = crate::GcsOptions::from_vars(&var)?;
        }
        Ok(options)
    }
}

/// Parses an endpoint URL, with an error that says what is wrong.
///
/// ```
/// assert!(sets3lock::parse_endpoint("127.0.0.1:8333").is_err());
/// assert!(sets3lock::parse_endpoint("http://127.0.0.1:8333").is_ok());
/// ```
pub fn parse_endpoint(endpoint: &str) -> Result<Url, Error> {
    let invalid = |reason: EndpointError| Error::InvalidEndpoint {
        endpoint: endpoint.to_owned(),
        reason,
    };
    let url = Url::parse(endpoint).map_err(|e| invalid(e.into()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid(EndpointError::Scheme));
    }
    if url.host_str().is_none() {
        return Err(invalid(EndpointError::NoHost));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(invalid(EndpointError::QueryOrFragment));
    }
    Ok(url)
}
