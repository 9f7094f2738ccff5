//! Where GCS is and who we are there: `STORAGE_EMULATOR_HOST` (an emulator, no credentials),
//! `GOOGLE_OAUTH_ACCESS_TOKEN` (a token given), else Application Default Credentials:
//! `GOOGLE_APPLICATION_CREDENTIALS`, gcloud's file, the metadata server (see
//! `signin/google/`).

use crate::{BearerToken, Credentials, Error};
use std::path::PathBuf;
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
/// Two settings are equal when their fields are (see [`Credentials`] for when two slots are).
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct GcsSettings {
    /// The endpoint; `None`: `https://storage.googleapis.com`.
    pub endpoint: Option<Url>,
    /// Send no credentials (an emulator).
    pub anonymous: bool,
    /// Where the bearer tokens come from: Application Default Credentials (the default:
    /// found when the store opens, from the process environment, with
    /// [`credentials_file`](GcsSettings::credentials_file) and
    /// [`metadata_host`](GcsSettings::metadata_host) first), a token given
    /// ([`Credentials::Fixed`], sent as it is, never refreshed), or a source of your own
    /// ([`Credentials::Source`]). [`from_vars`](GcsSettings::from_vars) finds the chain's
    /// source at once. Not used when [`anonymous`](GcsSettings::anonymous).
    pub credentials: Credentials<BearerToken>,
    /// A Google credentials file (a service account's key, `authorized_user`,
    /// `external_account`) for the chain, used ahead of anything the environment names.
    pub credentials_file: Option<PathBuf>,
    /// The metadata server's `host[:port]` for the chain: without a `credentials_file`, it is
    /// asked ahead of anything the environment names (even with `NO_GCE_CHECK`); `None`: the
    /// environment's chain (`GCE_METADATA_HOST`, else `metadata.google.internal`).
    pub metadata_host: Option<String>,
    /// What the chain found when a store opened with `Credentials::Chain`, shared by clones.
    pub(crate) found: crate::signin::credentials::Found<BearerToken>,
    /// The CA bundle of the chain's token services, when `from_vars` made the source (see
    /// `CaBundle`).
    pub(crate) chain_ca: crate::signin::fetch::CaBundle,
}

impl PartialEq for GcsSettings {
    fn eq(&self, other: &GcsSettings) -> bool {
        self.endpoint == other.endpoint
            && self.anonymous == other.anonymous
            && self.credentials == other.credentials
            && self.credentials_file == other.credentials_file
            && self.metadata_host == other.metadata_host
    }
}

// Pointer identity is reflexive, symmetric and transitive: the relation is an equivalence.
impl Eq for GcsSettings {}

impl core::fmt::Debug for GcsSettings {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("GcsSettings")
            .field("endpoint", &self.endpoint)
            .field("anonymous", &self.anonymous)
            .field("credentials", &self.credentials)
            .field("credentials_file", &self.credentials_file)
            .field("metadata_host", &self.metadata_host)
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
    /// use sets3lock::{Credentials, GcsSettings};
    /// let vars = |name: &str| match name {
    ///     "GOOGLE_OAUTH_ACCESS_TOKEN" => Some("ya29.not-shown".to_string()),
    ///     _ => None,
    /// };
    /// let gcs = GcsSettings::from_vars(vars).unwrap();
    /// assert!(matches!(gcs.credentials, Credentials::Fixed(_)));
    /// assert!(!format!("{gcs:?}").contains("not-shown"));
    /// ```
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<GcsSettings, Error> {
        let mut options = GcsSettings {
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
        } else if let Some(token) = var("GOOGLE_OAUTH_ACCESS_TOKEN") {
            options.credentials = Credentials::Fixed(BearerToken::new(token));
        } else {
            options.chain_ca =
                crate::signin::fetch::CaBundle::new(var("SETS3LOCK_CA_BUNDLE").map(PathBuf::from));
            options.credentials = Credentials::Source(crate::signin::google::resolve(
                &var,
                true,
                &options.chain_ca,
            )?);
        }
        Ok(options)
    }
}
