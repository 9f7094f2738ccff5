//! Bearer tokens for GCS: none (an emulator), one given, or one from a [`CredentialSource`] (the
//! ADC chain of `signin/google/`, or your own), asked before each request and never fetched
//! on the request's path.

use crate::{BearerToken, CredentialError, CredentialSource};
use sets3lock_proto::Response;
use std::sync::Arc;

/// Where a store's tokens come from.
#[derive(Clone, Debug)]
pub(crate) enum Tokens {
    /// No token (an emulator).
    Anonymous,
    /// A source asked before each request.
    Source(Arc<dyn CredentialSource<BearerToken>>),
}

impl Tokens {
    /// The token for the next request (`None`: send none), or the reply that stands for the
    /// request when there is none to be had (not sent: a setback the core retries).
    pub(crate) fn current(&self) -> Result<Option<String>, Response> {
        match self {
            Tokens::Anonymous => Ok(None),
            Tokens::Source(s) => s
                .current()
                .map(|t| Some(t.secret().to_owned()))
                .map_err(|why| Tokens::unavailable(why.to_string())),
        }
    }

    /// The answer that stands for a request with no token to sign it: not sent.
    pub(crate) fn unavailable(why: String) -> Response {
        crate::signin::unsigned("Google token", why)
    }
}

/// A token given as it is (`GOOGLE_OAUTH_ACCESS_TOKEN`): never refreshed, never shown.
pub(crate) struct Fixed(pub(crate) String);

impl core::fmt::Debug for Fixed {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Fixed(…)")
    }
}

impl CredentialSource<BearerToken> for Fixed {
    fn current(&self) -> Result<BearerToken, CredentialError> {
        Ok(BearerToken::new(self.0.clone()))
    }

    fn sign_in(&self) -> crate::SignIn {
        crate::SignIn::new("a token given (GOOGLE_OAUTH_ACCESS_TOKEN)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_token_is_sent_as_it_is_and_never_shown() {
        let t = Tokens::Source(Arc::new(Fixed("ya29.given".into())));
        assert_eq!(t.current().ok().flatten().as_deref(), Some("ya29.given"));
        assert!(!format!("{t:?}").contains("ya29"));
        assert_eq!(Tokens::Anonymous.current().ok(), Some(None));
    }
}
