//! Where the lock lives and how to reach it: endpoint, region, addressing, credentials.

use crate::error::EndpointError;
use crate::Error;
use core::time::Duration;
use rusty_s3::{Bucket, Credentials, UrlStyle};
use sets3lock::LockUrl;
use url::Url;

/// How to reach S3, and the lock settings. [`S3Options::from_env`] reads the standard AWS
/// variables; every field can be overridden in code.
///
/// ```
/// use sets3lock_s3::S3Options;
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
    pub lock: sets3lock::Config,
    /// Sees every request, reply and event (for logging).
    pub observer: Option<crate::Observer>,
    /// How the store is checked before the first lock (once per process by default).
    pub store_check: crate::StoreCheck,
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
            lock: sets3lock::Config::default(),
            observer: None,
            store_check: crate::StoreCheck::default(),
        }
    }
}

impl S3Options {
    /// Reads `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION`
    /// (or `AWS_DEFAULT_REGION`), `AWS_ENDPOINT_URL_S3` (or `AWS_ENDPOINT_URL`) and
    /// `AWS_CA_BUNDLE` from the process environment.
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
        Ok(options)
    }
}

/// Parses an endpoint URL, with an error that says what is wrong.
///
/// ```
/// assert!(sets3lock_s3::parse_endpoint("127.0.0.1:8333").is_err());
/// assert!(sets3lock_s3::parse_endpoint("http://127.0.0.1:8333").is_ok());
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

/// One lock object, resolved: the bucket as rusty-s3 addresses it, the key, the credentials.
#[derive(Debug)]
pub(crate) struct Target {
    pub(crate) url: LockUrl,
    pub(crate) bucket: Bucket,
    pub(crate) credentials: std::sync::Arc<dyn crate::CredentialSource>,
    pub(crate) expiry: Duration,
    /// The server's time, learned from its replies: what requests are signed at (shared by
    /// every key of a [`Locks`](crate::Locks)).
    pub(crate) time: std::sync::Arc<crate::server_time::ServerTime>,
}

impl Target {
    /// Parses the URL, checks the lock settings and resolves the bucket: what opening a
    /// locker means for both drivers.
    pub(crate) fn open(url: &str, options: &S3Options) -> Result<std::sync::Arc<Target>, Error> {
        let url = LockUrl::parse(url)?;
        options.lock.validate()?;
        Ok(std::sync::Arc::new(Target::new(url, options)?))
    }

    pub(crate) fn new(url: LockUrl, options: &S3Options) -> Result<Target, Error> {
        let (bucket, credentials) = bucket_of(url.bucket(), options)?;
        Ok(Target {
            url,
            bucket,
            credentials,
            expiry: options.presign_expiry.max(Duration::from_secs(1)),
            time: std::sync::Arc::default(),
        })
    }

    /// Another key of the same bucket: the same addressing, credentials and server clock.
    pub(crate) fn for_key(&self, url: LockUrl) -> Target {
        Target {
            url,
            bucket: self.bucket.clone(),
            credentials: self.credentials.clone(),
            expiry: self.expiry,
            time: self.time.clone(),
        }
    }
}

/// A bucket as rusty-s3 addresses it, and the credentials to sign with.
pub(crate) fn bucket_of(
    name: &str,
    options: &S3Options,
) -> Result<(Bucket, std::sync::Arc<dyn crate::CredentialSource>), Error> {
    let credentials = crate::credentials::source_of(options).ok_or(Error::MissingCredentials)?;
    let (endpoint, custom) = match &options.endpoint {
        Some(e) => (e.clone(), true),
        None => {
            let aws = format!("https://s3.{}.amazonaws.com", options.region);
            (parse_endpoint(&aws)?, false)
        }
    };
    let path_style = options.path_style.unwrap_or(custom || name.contains('.'));
    let style = if path_style {
        UrlStyle::Path
    } else {
        UrlStyle::VirtualHost
    };
    let bucket = Bucket::new(
        endpoint.clone(),
        style,
        name.to_owned(),
        options.region.clone(),
    )
    .map_err(|e| Error::InvalidEndpoint {
        endpoint: endpoint.to_string(),
        reason: e.into(),
    })?;
    Ok((bucket, credentials))
}

/// This machine's name, for the lock record.
pub(crate) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .unwrap_or_else(|| "unknown-host".into())
}
