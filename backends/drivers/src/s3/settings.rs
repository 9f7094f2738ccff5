//! How to reach S3: the endpoint, the region, the addressing, the credentials and how long a
//! presigned request stays valid.

use crate::options::parse_endpoint;
use crate::s3::credentials::AwsCredentials;
use crate::signin::credentials::Credentials;
use crate::signin::source::CredentialSource;
use crate::Error;
use core::time::Duration;
use std::sync::Arc;
use url::Url;

/// How to reach Amazon S3 or an S3-compatible store, for `s3://bucket/key` locks: the `s3`
/// part of [`Options`](crate::Options). [`S3Settings::from_env`] reads the standard AWS
/// variables and completes them from the AWS profile, as the AWS tools do; every field can be
/// set in code.
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
/// assert_eq!(s3.signer().unwrap().current().unwrap().key(), "AKIDEXAMPLE");
/// assert_eq!(s3.endpoint.unwrap().as_str(), "http://127.0.0.1:8333/");
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
    /// Where the credentials come from: the AWS chain (the default: found when the store
    /// opens, from the process environment and [`profile`](S3Settings::profile)), keys given
    /// ([`Credentials::Fixed`]), or a source of your own ([`Credentials::Source`], asked
    /// before every request). `from_env` and `from_vars` find the chain's source at once.
    pub credentials: Credentials<AwsCredentials>,
    /// The AWS profile the chain reads, named as the AWS CLI's `--profile` names it: its keys
    /// win over the environment's, and it must give some. `None`: `AWS_PROFILE`, else
    /// `default`, and the environment's keys win.
    pub profile: Option<String>,
    /// What the chain found when a store opened with `Credentials::Chain`, shared by clones.
    pub(crate) found: crate::signin::credentials::Found<AwsCredentials>,
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
            credentials: Credentials::Chain,
            profile: None,
            found: Default::default(),
            chain_ca: Default::default(),
            presign_expiry: Duration::from_secs(15),
        }
    }
}

impl S3Settings {
    /// The source that will sign, as [`credentials`](S3Settings::credentials) says; `None`
    /// for the chain until a store opens and finds it.
    ///
    /// ```
    /// use sets3lock::{AwsCredentials, Credentials, S3Settings};
    /// let mut s3 = S3Settings::default();
    /// assert!(s3.signer().is_none());
    /// s3.credentials = Credentials::Fixed(AwsCredentials::new("AKID", "secret"));
    /// assert_eq!(s3.signer().unwrap().current().unwrap().key(), "AKID");
    /// ```
    pub fn signer(&self) -> Option<Arc<dyn CredentialSource<AwsCredentials>>> {
        self.credentials.source(shown)
    }

    /// The environment's settings completed from the AWS profile and the rest of the AWS
    /// chain, as [`from_vars_and_profile`](S3Settings::from_vars_and_profile) with no profile
    /// named: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION`
    /// (or `AWS_DEFAULT_REGION`), `AWS_ENDPOINT_URL_S3` (or `AWS_ENDPOINT_URL`), `AWS_PROFILE`
    /// and the profile's files, from the process environment.
    pub fn from_env() -> Result<S3Settings, Error> {
        S3Settings::from_vars(crate::options::env_var)
    }

    /// Like [`from_env`](S3Settings::from_env), with variables from `var` (`HOME`,
    /// `AWS_SHARED_CREDENTIALS_FILE` and `AWS_CONFIG_FILE` say where the profile's files are;
    /// without them none is read).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<S3Settings, Error> {
        S3Settings::from_vars_and_profile(None, var)
    }

    /// The variables alone, no profile read: the region, the endpoint, and the keys as
    /// fixed credentials if both are set (else the chain).
    pub(crate) fn from_variables_only(
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<S3Settings, Error> {
        let mut options = S3Settings::default();
        if let Some(region) = var("AWS_REGION").or_else(|| var("AWS_DEFAULT_REGION")) {
            options.region = region;
        }
        if let Some(endpoint) = var("AWS_ENDPOINT_URL_S3").or_else(|| var("AWS_ENDPOINT_URL")) {
            options.endpoint = Some(parse_endpoint(&endpoint)?);
        }
        if let (Some(key), Some(secret)) = (var("AWS_ACCESS_KEY_ID"), var("AWS_SECRET_ACCESS_KEY"))
        {
            options.credentials = Credentials::Fixed(match var("AWS_SESSION_TOKEN") {
                Some(token) => AwsCredentials::new_with_token(key, secret, token),
                None => AwsCredentials::new(key, secret),
            });
        }
        Ok(options)
    }
}

/// How keys given show as a sign-in: by their key id.
pub(crate) fn shown(keys: &AwsCredentials) -> String {
    format!("keys ({})", keys.key())
}
