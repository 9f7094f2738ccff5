//! How to reach S3: the endpoint, the region, the addressing, the credentials and how long a
//! presigned request stays valid.

use crate::options::parse_endpoint;
use crate::s3::credentials::AwsCredentials;
use crate::signin::source::CredentialSource;
use crate::Error;
use core::time::Duration;
use std::sync::Arc;
use url::Url;

/// How to reach Amazon S3 or an S3-compatible store, for `s3://bucket/key` locks: the `s3`
/// part of [`Options`](crate::Options). [`S3Settings::from_env`] reads the standard AWS
/// variables; every field can be set in code.
///
/// ```
/// use sets3lock::S3Settings;
/// let vars = |name: &str| match name {
///     "AWS_ACCESS_KEY_ID" => Some("AKIDEXAMPLE".to_string()),
///     "AWS_SECRET_ACCESS_KEY" => Some("secret".to_string()),
///     "AWS_ENDPOINT_URL" => Some("http://127.0.0.1:8333".to_string()),
///     _ => None,
/// };
/// let s3 = S3Settings::from_vars(vars).unwrap();
/// assert_eq!(s3.region, "us-east-1");
/// assert_eq!(s3.endpoint.unwrap().as_str(), "http://127.0.0.1:8333/");
/// assert_eq!(s3.credentials.unwrap().key(), "AKIDEXAMPLE");
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct S3Settings {
    /// The S3 endpoint; `None` means AWS (`https://s3.<region>.amazonaws.com`).
    pub endpoint: Option<Url>,
    /// The region to sign for.
    pub region: String,
    /// Path-style addressing (`endpoint/bucket/key`). `None`: on for custom endpoints and for
    /// bucket names with dots, virtual-host style otherwise.
    pub path_style: Option<bool>,
    /// The credentials: keys given, or static keys the environment or a profile names.
    pub credentials: Option<AwsCredentials>,
    /// A provider of your own, asked before every request (refreshing temporary
    /// credentials); takes precedence over `credentials` and over the chain.
    pub credential_source: Option<Arc<dyn CredentialSource<AwsCredentials>>>,
    /// The source the AWS chain found ([`S3Settings::from_env_and_profile`]), when it is not
    /// static keys: used only when neither field above is set. Without any of the three,
    /// opening a lock fails with [`SettingsError::MissingCredentials`](crate::SettingsError::MissingCredentials).
    pub(crate) chain: Option<Arc<dyn CredentialSource<AwsCredentials>>>,
    /// The CA bundle of the chain's token services (see `CaBundle`).
    pub(crate) chain_ca: crate::signin::fetch::CaBundle,
    /// How long a presigned request stays valid after it is signed (15 s): the window in
    /// which a captured request could be replayed (with the same body: PUT bodies are bound
    /// to the signature by a signed `Content-MD5`). Requests are signed at the server's time,
    /// learned from its `Date` header, so this need not cover a skewed clock.
    pub presign_expiry: Duration,
}

impl Default for S3Settings {
    fn default() -> S3Settings {
        S3Settings {
            endpoint: None,
            region: "us-east-1".into(),
            path_style: None,
            credentials: None,
            credential_source: None,
            chain: None,
            chain_ca: Default::default(),
            presign_expiry: Duration::from_secs(15),
        }
    }
}

impl S3Settings {
    /// The source that will sign: `credential_source`, else `credentials`, else the source
    /// the AWS chain found; `None` if there is none.
    ///
    /// ```
    /// use sets3lock::{AwsCredentials, S3Settings};
    /// let mut s3 = S3Settings::default();
    /// assert!(s3.signer().is_none());
    /// s3.credentials = Some(AwsCredentials::new("AKID", "secret"));
    /// assert_eq!(s3.signer().unwrap().current().unwrap().key(), "AKID");
    /// ```
    pub fn signer(&self) -> Option<Arc<dyn CredentialSource<AwsCredentials>>> {
        crate::s3::credentials::source_of(self)
    }

    /// Reads `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION`
    /// (or `AWS_DEFAULT_REGION`) and `AWS_ENDPOINT_URL_S3` (or `AWS_ENDPOINT_URL`) from the
    /// process environment.
    pub fn from_env() -> Result<S3Settings, Error> {
        S3Settings::from_vars(crate::options::env_var)
    }

    /// Like [`from_env`](S3Settings::from_env), with variables from `var`.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<S3Settings, Error> {
        let mut options = S3Settings::default();
        if let Some(region) = var("AWS_REGION").or_else(|| var("AWS_DEFAULT_REGION")) {
            options.region = region;
        }
        if let Some(endpoint) = var("AWS_ENDPOINT_URL_S3").or_else(|| var("AWS_ENDPOINT_URL")) {
            options.endpoint = Some(parse_endpoint(&endpoint)?);
        }
        options.credentials = match (var("AWS_ACCESS_KEY_ID"), var("AWS_SECRET_ACCESS_KEY")) {
            (Some(key), Some(secret)) => Some(match var("AWS_SESSION_TOKEN") {
                Some(token) => AwsCredentials::new_with_token(key, secret, token),
                None => AwsCredentials::new(key, secret),
            }),
            _ => None,
        };
        Ok(options)
    }
}
