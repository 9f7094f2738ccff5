//! Where GCS is and who we are there: `STORAGE_EMULATOR_HOST` (an emulator, no credentials),
//! `GOOGLE_OAUTH_ACCESS_TOKEN` (a token given), else Application Default Credentials:
//! `GOOGLE_APPLICATION_CREDENTIALS`, gcloud's file, the metadata server (see
//! `signin/google/`).

use crate::{BearerToken, CredentialSource, Error};
use std::path::PathBuf;
use std::sync::Arc;
use url::Url;

/// How to reach Google Cloud Storage, for `gs://bucket/key` locks.
///
/// ```
/// use sets3lock::GcsSettings;
/// let vars = |name: &str| match name {
///     "STORAGE_EMULATOR_HOST" => Some("127.0.0.1:4443".to_string()),
///     _ => None,
/// };
/// let gcs = GcsSettings::from_vars(vars).unwrap();
/// assert_eq!(gcs.endpoint.unwrap().as_str(), "http://127.0.0.1:4443/");
/// assert!(gcs.anonymous);
/// ```
///
/// Two settings are equal when their fields are, and their token sources are the same one
/// (the same `Arc`) or both absent.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct GcsSettings {
    /// The endpoint; `None`: `https://storage.googleapis.com`.
    pub endpoint: Option<Url>,
    /// Send no credentials (an emulator).
    pub anonymous: bool,
    /// An OAuth access token to send as it is (it is not refreshed).
    pub token: Option<String>,
    /// A Google credentials file (a service account's key, `authorized_user`,
    /// `external_account`), used when there is no `token` and no `token_source`.
    pub credentials_file: Option<PathBuf>,
    /// The metadata server's `host[:port]`, asked for tokens when nothing above is set
    /// (`GCE_METADATA_HOST`; `None`: `metadata.google.internal`).
    pub metadata_host: Option<String>,
    /// Where bearer tokens come from, used when there is no `token`: your own source, or
    /// the Application Default Credentials chain [`from_vars`](GcsSettings::from_vars)
    /// finds. Without one, `credentials_file`, else the metadata server, is used.
    pub token_source: Option<Arc<dyn CredentialSource<BearerToken>>>,
    /// The source made from `credentials_file` or `metadata_host` when there is none of the
    /// above: made once for these settings and their clones, so that the stores they open
    /// share one cache (and one try of the metadata server).
    pub(crate) fallback: Arc<std::sync::Mutex<Option<Arc<dyn CredentialSource<BearerToken>>>>>,
    /// The CA bundle of the chain's token services, when `from_vars` or the fallback made
    /// the source (see `CaBundle`).
    pub(crate) chain_ca: crate::signin::fetch::CaBundle,
}

impl GcsSettings {
    /// The fallback source, made by `make` the first time.
    pub(crate) fn fallback_source(
        &self,
        make: impl FnOnce() -> Result<Arc<dyn CredentialSource<BearerToken>>, crate::Error>,
    ) -> Result<Arc<dyn CredentialSource<BearerToken>>, crate::Error> {
        let mut made = self.fallback.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(source) = made.as_ref() {
            return Ok(source.clone());
        }
        let source = make()?;
        *made = Some(source.clone());
        Ok(source)
    }
}

impl PartialEq for GcsSettings {
    fn eq(&self, other: &GcsSettings) -> bool {
        let same_source = match (&self.token_source, &other.token_source) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        self.endpoint == other.endpoint
            && self.anonymous == other.anonymous
            && self.token == other.token
            && self.credentials_file == other.credentials_file
            && self.metadata_host == other.metadata_host
            && same_source
    }
}

// Pointer identity is reflexive, symmetric and transitive: the relation is an equivalence.
impl Eq for GcsSettings {}

impl core::fmt::Debug for GcsSettings {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("GcsSettings")
            .field("endpoint", &self.endpoint)
            .field("anonymous", &self.anonymous)
            .field("token", &self.token.as_ref().map(|_| "…"))
            .field("credentials_file", &self.credentials_file)
            .field("metadata_host", &self.metadata_host)
            .field("token_source", &self.token_source)
            .finish()
    }
}

impl GcsSettings {
    /// Reads `STORAGE_EMULATOR_HOST` (`host:port` or a URL; no credentials then),
    /// `GOOGLE_OAUTH_ACCESS_TOKEN` (a token sent as it is), else finds Application Default
    /// Credentials the way Google's libraries do:
    /// 1. `GOOGLE_APPLICATION_CREDENTIALS`, a credentials file: a service account's key
    ///    (`service_account`), a user's refresh token (`authorized_user`), or workload
    ///    identity federation (`external_account`, its subject token from a file, a URL, or
    ///    an executable if `GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES=1`);
    /// 2. gcloud's `application_default_credentials.json` (`gcloud auth
    ///    application-default login`), in `CLOUDSDK_CONFIG`, else `~/.config/gcloud`
    ///    (`%APPDATA%\gcloud` on Windows);
    /// 3. the metadata server: `GCE_METADATA_HOST`, else `GCE_METADATA_IP`, else
    ///    `metadata.google.internal` (asked for at most a second the first time);
    ///    `NO_GCE_CHECK=true` skips it.
    ///
    /// A credentials file that cannot be used is an error now; tokens are fetched only when
    /// a lock is opened.
    ///
    /// ```
    /// use sets3lock::GcsSettings;
    /// let vars = |name: &str| match name {
    ///     "GOOGLE_OAUTH_ACCESS_TOKEN" => Some("ya29.not-shown".to_string()),
    ///     _ => None,
    /// };
    /// let gcs = GcsSettings::from_vars(vars).unwrap();
    /// assert!(gcs.token.is_some() && gcs.token_source.is_none());
    /// assert!(!format!("{gcs:?}").contains("not-shown"));
    /// ```
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<GcsSettings, Error> {
        let mut options = GcsSettings {
            token: var("GOOGLE_OAUTH_ACCESS_TOKEN"),
            credentials_file: var("GOOGLE_APPLICATION_CREDENTIALS").map(PathBuf::from),
            metadata_host: var("GCE_METADATA_HOST"),
            ..GcsSettings::default()
        };
        if let Some(host) = var("STORAGE_EMULATOR_HOST") {
            let url = if host.contains("://") {
                host
            } else {
                format!("http://{host}")
            };
            options.endpoint = Some(crate::parse_endpoint(&url)?);
            options.anonymous = true;
        }
        if !options.anonymous && options.token.is_none() {
            options.chain_ca =
                crate::signin::fetch::CaBundle::new(var("SETS3LOCK_CA_BUNDLE").map(PathBuf::from));
            options.token_source = Some(crate::signin::google::resolve(
                &var,
                true,
                &options.chain_ca,
            )?);
        }
        Ok(options)
    }
}
