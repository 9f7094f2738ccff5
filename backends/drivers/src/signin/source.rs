//! What a store asks for credentials: one trait for every cloud, over what it gives (AWS keys
//! for S3, a bearer token for Azure's Entra ID and Google's OAuth), and the one-line error a
//! source answers with when it has none.

use crate::signin::SignIn;
use std::fmt::Debug;

/// A source of credentials, asked before every request: [`AwsCredentials`](crate::AwsCredentials)
/// for `s3://` locks, a [`BearerToken`] for `az://` and `gs://` ones. The cloud's own chain is
/// one; put one of your own in the `credentials` slot of the store's settings, as a
/// [`Credentials::Source`](crate::Credentials::Source).
///
/// It must answer quickly: serve a cached value and refresh it in the background.
///
/// ```
/// use sets3lock::{AwsCredentials, CredentialError, CredentialSource};
/// #[derive(Debug)]
/// struct Vault;
/// impl CredentialSource<AwsCredentials> for Vault {
///     fn current(&self) -> Result<AwsCredentials, CredentialError> {
///         Ok(AwsCredentials::new("AKID", "secret"))
///     }
/// }
/// assert_eq!(Vault.current().unwrap().key(), "AKID");
/// assert_eq!(Vault.sign_in().source, "your own credential source");
/// ```
pub trait CredentialSource<C>: Send + Sync + Debug {
    /// The credentials to sign the next request with, or why there are none right now (the
    /// request is then not sent, a setback the lock retries).
    fn current(&self) -> Result<C, CredentialError>;

    /// Waits (a bounded time) until first credentials are at hand; why not, if there are
    /// none. Called once when a lock is opened (on a thread of its own in async code), so that
    /// a source that cannot work says so then, in one line.
    fn ready(&self) -> Result<(), CredentialError> {
        Ok(())
    }

    /// Who signs, for `doctor` and `--verbose`.
    fn sign_in(&self) -> SignIn {
        SignIn::new("your own credential source")
    }
}

/// Why a [`CredentialSource`] has no credentials: one line that names what was tried and the
/// fix, never a secret.
///
/// ```
/// let e = sets3lock::CredentialError::new("the vault is sealed: unseal it");
/// assert_eq!(e.to_string(), "the vault is sealed: unseal it");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct CredentialError {
    message: String,
}

impl CredentialError {
    /// An error saying `message` (one line).
    pub fn new(message: impl Into<String>) -> CredentialError {
        CredentialError {
            message: message.into(),
        }
    }

    /// The line.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl From<String> for CredentialError {
    fn from(message: String) -> CredentialError {
        CredentialError::new(message)
    }
}

/// An OAuth bearer token (Entra ID's for Azure, Google's for GCS). Its `Debug` never shows it.
///
/// ```
/// let t = sets3lock::BearerToken::new("eyJ0eXAiOiJKV1Qi...");
/// assert_eq!(t.secret(), "eyJ0eXAiOiJKV1Qi...");
/// assert!(!format!("{t:?}").contains("eyJ"));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct BearerToken(String);

impl BearerToken {
    /// The token `token`.
    pub fn new(token: impl Into<String>) -> BearerToken {
        BearerToken(token.into())
    }

    /// The token itself, as it goes in `Authorization: Bearer`.
    pub fn secret(&self) -> &str {
        &self.0
    }
}

impl From<String> for BearerToken {
    fn from(token: String) -> BearerToken {
        BearerToken(token)
    }
}

#[cfg(any(feature = "azure", feature = "gcs"))]
impl BearerToken {
    /// A fingerprint of the token (the first 8 bytes of its SHA-256, in hex): it tells two
    /// tokens apart, in a sign-in and in the store check's cache, and reveals nothing.
    pub(crate) fn fingerprint(&self) -> String {
        use sha2::Digest as _;
        let digest = sha2::Sha256::digest(self.0.as_bytes());
        digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
    }
}

impl Debug for BearerToken {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("BearerToken(…)")
    }
}
