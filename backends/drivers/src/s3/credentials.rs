//! AWS signing credentials, and where they come from: asked once per request so that
//! temporary credentials can be refreshed underneath a long hold.

use crate::signin::source::CredentialSource;
use std::fmt::Debug;

/// An AWS access key, its secret and, for temporary credentials, the session token.
///
/// `Debug` shows the key id only.
///
/// ```
/// use sets3lock::AwsCredentials;
/// let c = AwsCredentials::new_with_token("AKID", "wJalrXUtnFEMI", "FwoGZXIvYXdz");
/// assert_eq!((c.key(), c.secret(), c.token()), ("AKID", "wJalrXUtnFEMI", Some("FwoGZXIvYXdz")));
/// let shown = format!("{c:?}");
/// assert!(shown.contains("AKID") && !shown.contains("wJalr") && !shown.contains("FwoG"));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct AwsCredentials {
    key: String,
    secret: String,
    token: Option<String>,
}

impl AwsCredentials {
    /// Long-term credentials: an access key id and its secret.
    pub fn new(key: impl Into<String>, secret: impl Into<String>) -> AwsCredentials {
        AwsCredentials {
            key: key.into(),
            secret: secret.into(),
            token: None,
        }
    }

    /// Temporary credentials: an access key id, its secret and the session token.
    pub fn new_with_token(
        key: impl Into<String>,
        secret: impl Into<String>,
        token: impl Into<String>,
    ) -> AwsCredentials {
        AwsCredentials {
            token: Some(token.into()),
            ..AwsCredentials::new(key, secret)
        }
    }

    /// The access key id.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The secret access key.
    pub fn secret(&self) -> &str {
        &self.secret
    }

    /// The session token, for temporary credentials.
    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// The same credentials, as the wire layer signs with them.
    pub(crate) fn to_signer(&self) -> sets3lock_wire::s3::Keys {
        let keys = sets3lock_wire::s3::Keys::new(&self.key, &self.secret);
        match &self.token {
            Some(t) => keys.with_token(t),
            None => keys,
        }
    }
}

impl Debug for AwsCredentials {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("AwsCredentials")
            .field("key", &self.key)
            .field("secret", &"…")
            .field("token", &self.token.as_ref().map(|_| "…"))
            .finish()
    }
}

/// The credentials to sign a request with now, or (when the source has none) the answer that
/// stands for the request: not sent, so a setback the core retries.
pub(crate) fn to_sign_with(
    source: &dyn CredentialSource<AwsCredentials>,
) -> Result<sets3lock_wire::s3::Keys, sets3lock_proto::Response> {
    source
        .current()
        .map(|c| c.to_signer())
        .map_err(|why| crate::signin::unsigned("credentials", why.to_string()))
}
