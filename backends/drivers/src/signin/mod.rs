//! Signing in: where credentials come from when none are given, the way each cloud's own tools
//! find them, and the cache that keeps temporary ones fresh.
//!
//! - `refresh.rs`: the cache and its thread (fetch ahead of expiry, keep the old value
//!   through a failed fetch);
//! - `ready.rs`: a store's first credentials, waited for (blocking) or awaited (async);
//! - `fetch.rs`: the blocking HTTP client, token files and commands the fetchers use;
//! - `aws/`: the AWS chain;
//! - `azure/`: Entra ID (service principal, workload identity, managed identity, Azure CLI);
//! - `google/`: Application Default Credentials (credentials files, the metadata server);
//! - `bearer.rs`: what the last two share (OAuth token answers, the chained token source).

pub(crate) mod aws;
#[cfg(feature = "azure")]
pub(crate) mod azure;
#[cfg(any(feature = "azure", feature = "gcs"))]
pub(crate) mod bearer;
pub(crate) mod fetch;
#[cfg(feature = "gcs")]
pub(crate) mod google;
pub(crate) mod ready;
pub(crate) mod refresh;
#[cfg(all(test, any(feature = "azure", feature = "gcs")))]
pub(crate) mod stub;

use std::fmt::Debug;
use std::time::SystemTime;

/// The answer that stands for a request with no `what` (credentials, a token) to sign it:
/// not sent, a setback the core retries.
pub(crate) fn unsigned(what: &str, why: String) -> sets3lock_proto::Response {
    sets3lock_proto::Response::Ambiguous(sets3lock_proto::Ambiguity::NotSent {
        detail: format!("no {what} to sign with: {why}"),
    })
}

/// Who signs a lock's requests, as `sets3lock doctor` and `--verbose` show it: the source's
/// name, when its credentials expire, and why the last fetch failed. Never a secret.
///
/// ```
/// let s = sets3lock::SignIn::new("static keys");
/// assert_eq!(s.to_string(), "static keys");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SignIn {
    /// Where the credentials come from ("profile ci (SSO, role …)", "instance metadata").
    pub source: String,
    /// When the credentials in use expire (`None`: they do not, or none are held yet).
    pub expires: Option<SystemTime>,
    /// Why the last fetch failed, if it did (the credentials in use, if any, stay in use
    /// until they expire).
    pub problem: Option<String>,
}

impl SignIn {
    /// A source by this name, with credentials that do not expire.
    pub fn new(source: impl Into<String>) -> SignIn {
        SignIn {
            source: source.into(),
            expires: None,
            problem: None,
        }
    }

    pub(crate) fn from_status(source: &str, status: refresh::Status) -> SignIn {
        SignIn {
            source: source.to_owned(),
            expires: status.expires,
            problem: status.error,
        }
    }
}

impl core::fmt::Display for SignIn {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.source)?;
        if let Some(e) = self.expires {
            write!(f, ", credentials expire at {}", refresh::shown(e))?;
        }
        if let Some(p) = &self.problem {
            write!(f, " (the last refresh failed: {p})")?;
        }
        Ok(())
    }
}

/// A source of bearer tokens (Azure's Entra ID, Google's OAuth), asked before every request:
/// plug in your own through `AzureSettings::token_source` or `GcsSettings::token_source`.
///
/// It must answer quickly: serve a cached token and refresh it in the background.
///
/// ```
/// use sets3lock::TokenSource;
/// #[derive(Debug)]
/// struct FromVault;
/// impl TokenSource for FromVault {
///     fn token(&self) -> Result<String, String> {
///         Ok("eyJ0eXAiOiJKV1Qi...".into())
///     }
/// }
/// assert!(FromVault.token().is_ok());
/// assert_eq!(FromVault.sign_in().source, "your own token source");
/// ```
pub trait TokenSource: Send + Sync + Debug {
    /// The token to send with the next request, or why there is none right now (the request
    /// is then not sent, a setback the lock retries).
    fn token(&self) -> Result<String, String>;

    /// Waits (a bounded time) until a first token is at hand; why not, if there is none.
    /// Called once when a lock is opened, so that a source that cannot work says so then.
    fn ready(&self) -> Result<(), String> {
        Ok(())
    }

    /// Who signs, for `doctor` and `--verbose`.
    fn sign_in(&self) -> SignIn {
        SignIn::new("your own token source")
    }
}
