//! Where GCS is and who we are there: `STORAGE_EMULATOR_HOST` (an emulator, no credentials),
//! `GOOGLE_OAUTH_ACCESS_TOKEN` (a token given), `GOOGLE_APPLICATION_CREDENTIALS` (a service
//! account's key file), else the metadata server (GCE, GKE, Cloud Run; `GCE_METADATA_HOST`).

use crate::Error;
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
#[derive(Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct GcsSettings {
    /// The endpoint; `None`: `https://storage.googleapis.com`.
    pub endpoint: Option<Url>,
    /// Send no credentials (an emulator).
    pub anonymous: bool,
    /// An OAuth access token to send as it is (it is not refreshed).
    pub token: Option<String>,
    /// A service account's JSON key file.
    pub credentials_file: Option<PathBuf>,
    /// The metadata server's `host[:port]`, asked for tokens when nothing above is set
    /// (`GCE_METADATA_HOST`; `None`: `metadata.google.internal`).
    pub metadata_host: Option<String>,
}

impl core::fmt::Debug for GcsSettings {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("GcsSettings")
            .field("endpoint", &self.endpoint)
            .field("anonymous", &self.anonymous)
            .field("token", &self.token.as_ref().map(|_| "…"))
            .field("credentials_file", &self.credentials_file)
            .field("metadata_host", &self.metadata_host)
            .finish()
    }
}

impl GcsSettings {
    /// Reads `STORAGE_EMULATOR_HOST` (`host:port` or a URL; no credentials then),
    /// `GOOGLE_OAUTH_ACCESS_TOKEN`, `GOOGLE_APPLICATION_CREDENTIALS` and `GCE_METADATA_HOST`
    /// from `var`.
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
        Ok(options)
    }
}
