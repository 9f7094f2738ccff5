//! Bearer tokens for GCS: none (an emulator), one given, or one from a [`CredentialSource`] (the
//! ADC chain of `signin/google/`, or your own), asked before each request and never fetched
//! on the request's path.

use crate::{BearerToken, CredentialSource};
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

/// How a token given (`GOOGLE_OAUTH_ACCESS_TOKEN`, or in code) shows as a sign-in: by its
/// fingerprint, never the token. Two tokens may grant different permissions, so the store
/// check keeps a verdict for each.
pub(crate) fn shown(token: &BearerToken) -> String {
    format!("a token given ({})", token.fingerprint())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_token_is_sent_as_it_is_and_never_shown() {
        let given = crate::Credentials::Fixed(BearerToken::new("ya29.given"));
        let t = Tokens::Source(given.source(shown).expect("a source"));
        assert_eq!(t.current().ok().flatten().as_deref(), Some("ya29.given"));
        assert!(!format!("{t:?}").contains("ya29"));
        assert_eq!(Tokens::Anonymous.current().ok(), Some(None));
    }

    #[test]
    fn two_given_tokens_sign_in_as_two_identities_and_neither_is_shown() {
        // The store check keeps one verdict per identity: a token that may delete must not
        // vouch for one that may not.
        let (a, b) = (
            BearerToken::new("ya29.first"),
            BearerToken::new("ya29.second"),
        );
        assert_ne!(shown(&a), shown(&b));
        assert_eq!(shown(&a), shown(&BearerToken::new("ya29.first")));
        assert!(!shown(&a).contains("ya29") && !shown(&b).contains("ya29"));
    }
}
