//! What every store shares (the lock's settings, the request time limit, the CA bundle, the
//! observer, the metrics name, the store check), with each store's own part beside it.

use crate::error::EndpointError;
use crate::{Error, S3Settings};
use core::time::Duration;
use sets3lock_proto::{Config, Scheme};
use std::path::PathBuf;
use url::Url;

/// How to reach the store, and the lock's settings: what every store shares at the top, each
/// store's own part beside it ([`s3`](Options::s3), and with their features `azure` and
/// `gcs`).
///
/// [`Options::from_env`] reads the variables of one store, the one a lock's URL names, so a
/// malformed variable of another store never breaks a lock. Every field can be set in code:
///
/// ```
/// use sets3lock::{Options, Scheme, StoreCheck};
/// let vars = |name: &str| match name {
///     "AWS_ENDPOINT_URL" => Some("http://127.0.0.1:8333".to_string()),
///     "AZURE_STORAGE_CONNECTION_STRING" => Some("not a connection string".to_string()),
///     _ => None,
/// };
/// // Azure's variable is not read for an s3:// lock.
/// let mut options = Options::from_vars(Scheme::S3, vars).unwrap();
/// options.lock.lease = std::time::Duration::from_secs(30);
/// options.store_check = StoreCheck::Off;
/// assert_eq!(options.s3.endpoint.unwrap().as_str(), "http://127.0.0.1:8333/");
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Options {
    /// The protocol settings: lease, drift bound, pacing, fenced mode. `host` and `pid` are
    /// filled in.
    pub lock: Config,
    /// How long one request may take before its outcome counts as unknown. Generous by
    /// default (20 s): some S3-compatible servers answer losers of a race seconds apart.
    pub request_timeout: Duration,
    /// A PEM file of the only CA certificates to trust for an `https` endpoint, on every store
    /// (`SETS3LOCK_CA_BUNDLE`, or `AWS_CA_BUNDLE` for `s3://` locks); `None`: the system's
    /// store. Plain-`http` endpoints read none.
    pub ca_bundle: Option<PathBuf>,
    /// Sees every request, reply and event (for logging).
    pub observer: Option<crate::Observer>,
    /// The `lock` label of the instruments (feature `metrics`, see `sets3lock::metrics`);
    /// `None`: the lock's URL. One name for many keys keeps the number of series small.
    pub metrics_name: Option<String>,
    /// How the store is checked before the first lock (once per process by default).
    pub store_check: crate::StoreCheck,
    /// Which format the lock's record is written in: by default Terraform's and OpenTofu's
    /// too for keys that end in `.tflock` ([`LockFormat`](crate::LockFormat)). A
    /// [`lock.terraform`](Config::terraform) set in code is written as given.
    pub lock_format: crate::LockFormat,
    /// Terraform's `Operation` field for a lock in its format: what runs under the lock.
    /// Anyone who may read the lock object reads it: name the program, never its arguments.
    /// `None`: `sets3lock` and this program's file name.
    pub operation: Option<String>,
    /// How to reach S3, for `s3://` URLs.
    pub s3: S3Settings,
    /// How to reach Azure Blob Storage, for `az://` URLs (feature `azure`).
    #[cfg(feature = "azure")]
    pub azure: crate::AzureSettings,
    /// How to reach Google Cloud Storage, for `gs://` URLs (feature `gcs`).
    #[cfg(feature = "gcs")]
    pub gcs: crate::GcsSettings,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            lock: Config::default(),
            request_timeout: Duration::from_secs(20),
            ca_bundle: None,
            observer: None,
            metrics_name: None,
            store_check: crate::StoreCheck::default(),
            lock_format: crate::LockFormat::default(),
            operation: None,
            s3: S3Settings::default(),
            #[cfg(feature = "azure")]
            azure: crate::AzureSettings::default(),
            #[cfg(feature = "gcs")]
            gcs: crate::GcsSettings::default(),
        }
    }
}

impl Options {
    /// Options for a lock on `scheme`'s store, from the process environment: the CA bundle
    /// (`SETS3LOCK_CA_BUNDLE`, or for S3 `AWS_CA_BUNDLE`), and that store's variables only:
    /// [`S3Settings::from_vars`] (the AWS variables completed from the AWS profile they
    /// name), `AzureSettings::from_vars` (feature `azure`) or `GcsSettings::from_vars`
    /// (feature `gcs`).
    pub fn from_env(scheme: Scheme) -> Result<Options, Error> {
        Options::from_vars(scheme, env_var)
    }

    /// Like [`from_env`](Options::from_env), with an AWS profile named explicitly for
    /// `s3://` locks (the AWS CLI's `--profile`): [`S3Settings::from_env_and_profile`]. The
    /// credentials come from that profile (its keys win over the environment's), and so do
    /// the region and endpoint where no variable sets them; no other profile is read. Other
    /// stores ignore it.
    pub fn from_env_with_profile(scheme: Scheme, profile: &str) -> Result<Options, Error> {
        match scheme {
            Scheme::S3 => Ok(Options {
                ca_bundle: ca_bundle(Scheme::S3, env_var),
                s3: S3Settings::from_env_and_profile(Some(profile))?,
                ..Options::default()
            }),
            other => Options::from_env(other),
        }
    }

    /// Like [`from_env`](Options::from_env), with variables from `var` (`HOME`,
    /// `AWS_SHARED_CREDENTIALS_FILE` and `AWS_CONFIG_FILE` say where the AWS profile's files
    /// are; without them none is read).
    pub fn from_vars(
        scheme: Scheme,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Options, Error> {
        let mut options = Options {
            ca_bundle: ca_bundle(scheme, &var),
            ..Options::default()
        };
        match scheme {
            Scheme::S3 => options.s3 = S3Settings::from_vars(&var)?,
            #[cfg(feature = "azure")]
            Scheme::Azure => options.azure = crate::AzureSettings::from_vars(&var)?,
            #[cfg(feature = "gcs")]
            Scheme::Gcs => options.gcs = crate::GcsSettings::from_vars(&var)?,
            // A store this build lacks: opening the lock says so.
            #[allow(unreachable_patterns)] // with every store's feature on
            _ => {}
        }
        Ok(options)
    }

    /// Sends the requests of `scheme`'s store to `endpoint` (an S3-compatible store, an Azure
    /// blob endpoint, a GCS emulator), as the command's `--endpoint` does.
    ///
    /// ```
    /// use sets3lock::{parse_endpoint, Options, Scheme};
    /// let mut options = Options::default();
    /// options.set_endpoint(Scheme::S3, parse_endpoint("http://127.0.0.1:8333")?);
    /// assert_eq!(options.s3.endpoint.unwrap().port(), Some(8333));
    /// # Ok::<(), sets3lock::Error>(())
    /// ```
    pub fn set_endpoint(&mut self, scheme: Scheme, endpoint: Url) {
        match scheme {
            #[cfg(feature = "azure")]
            Scheme::Azure => self.azure.endpoint = Some(endpoint),
            #[cfg(feature = "gcs")]
            Scheme::Gcs => self.gcs.endpoint = Some(endpoint),
            // S3, and the stores this build lacks (opening their locks says so).
            _ => self.s3.endpoint = Some(endpoint),
        }
    }
}

/// The CA bundle for `scheme`'s store: `SETS3LOCK_CA_BUNDLE`, or for S3 `AWS_CA_BUNDLE`.
fn ca_bundle(scheme: Scheme, var: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let store_bundle = || match scheme {
        Scheme::S3 => var("AWS_CA_BUNDLE"),
        _ => None,
    };
    var("SETS3LOCK_CA_BUNDLE")
        .or_else(store_bundle)
        .map(PathBuf::from)
}

/// A variable of the process environment; empty counts as unset.
pub(crate) fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
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
    let url = Url::parse(endpoint).map_err(|e| invalid(EndpointError::parse(e)))?;
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
