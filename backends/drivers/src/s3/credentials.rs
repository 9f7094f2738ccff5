//! Where the signing credentials come from, asked once per request so that temporary
//! credentials can be refreshed underneath a long hold.

use rusty_s3::Credentials;
use std::fmt::Debug;
use std::sync::Arc;

/// A source of signing credentials, asked before every request.
///
/// Implement it to plug in your own provider; it must answer quickly (serve a cached value and
/// refresh in the background). With the `aws-config` feature,
/// [`S3Options::from_aws_config`](crate::S3Options) uses the whole AWS chain.
///
/// ```
/// use sets3lock::{CredentialSource, Credentials};
/// #[derive(Debug)]
/// struct Vault;
/// impl CredentialSource for Vault {
///     fn current(&self) -> Result<Credentials, String> {
///         Ok(Credentials::new("AKID", "secret"))
///     }
/// }
/// assert_eq!(Vault.current().unwrap().key(), "AKID");
/// ```
pub trait CredentialSource: Send + Sync + Debug {
    /// The credentials to sign the next request with, or why there are none right now.
    fn current(&self) -> Result<Credentials, String>;
}

/// Fixed credentials.
#[derive(Debug)]
pub(crate) struct Fixed(pub(crate) Credentials);

impl CredentialSource for Fixed {
    fn current(&self) -> Result<Credentials, String> {
        Ok(self.0.clone())
    }
}

/// The credentials to sign a request with now, or (when the source has none) the answer that
/// stands for the request: not sent, so a setback the core retries.
pub(crate) fn to_sign_with(
    source: &dyn CredentialSource,
) -> Result<Credentials, sets3lock_proto::Response> {
    source.current().map_err(|why| {
        sets3lock_proto::Response::Ambiguous(sets3lock_proto::Ambiguity::NotSent {
            detail: format!("no credentials to sign with: {why}"),
        })
    })
}

/// The source the options name: a provider, or fixed credentials, or none.
pub(crate) fn source_of(options: &crate::S3Options) -> Option<Arc<dyn CredentialSource>> {
    options.credential_source.clone().or_else(|| {
        options
            .credentials
            .clone()
            .map(|c| Arc::new(Fixed(c)) as Arc<dyn CredentialSource>)
    })
}
