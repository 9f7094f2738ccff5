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
//! - `source.rs`: the public trait every source answers to, over what it gives (AWS keys, a
//!   bearer token), and its error;
//! - `credentials.rs`: the one slot each store's settings have for where its credentials
//!   come from (the chain, credentials given, a source);
//! - `chained.rs`: the source a chain settles on (a cache over a fetcher), and the one it
//!   gives when nothing applies, for every cloud;
//! - `bearer.rs`: what Azure's and Google's chains share (OAuth token answers).

pub(crate) mod aws;
#[cfg(feature = "azure")]
pub(crate) mod azure;
#[cfg(any(feature = "azure", feature = "gcs"))]
pub(crate) mod bearer;
pub(crate) mod chained;
pub(crate) mod credentials;
pub(crate) mod fetch;
#[cfg(feature = "gcs")]
pub(crate) mod google;
pub(crate) mod ready;
pub(crate) mod refresh;
pub(crate) mod source;
#[cfg(all(test, any(feature = "azure", feature = "gcs")))]
pub(crate) mod stub;

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
