//! Where a store's credentials come from, one slot in each store's settings: the cloud's own
//! chain (the default), credentials given as they are, or a source of your own.

use crate::signin::source::{CredentialError, CredentialSource};
use crate::signin::SignIn;
use std::fmt::Debug;
use std::sync::Arc;

/// Where a store's credentials come from: the `credentials` field of
/// [`S3Settings`](crate::S3Settings) (over [`AwsCredentials`](crate::AwsCredentials)), and of
/// `AzureSettings` and `GcsSettings` (over a [`BearerToken`](crate::BearerToken)).
///
/// - [`Chain`](Credentials::Chain), the default: found when the store opens, the way the
///   cloud's own tools find them (the environment, the profile or credentials file the
///   settings name, the platform's metadata service). The settings' `from_env` and
///   `from_vars` find the chain's source at once, with the variables they were given, and
///   put it here as a [`Source`](Credentials::Source).
/// - [`Fixed`](Credentials::Fixed): these, as they are, never refreshed.
/// - [`Source`](Credentials::Source): a source asked before every request (yours, or the
///   chain's).
///
/// Two slots are equal when they hold equal fixed credentials, or the same source (the same
/// `Arc`), or both the chain.
///
/// ```
/// use sets3lock::{AwsCredentials, Credentials, S3Settings};
/// let mut s3 = S3Settings::default();
/// assert_eq!(s3.credentials, Credentials::Chain);
/// s3.credentials = Credentials::Fixed(AwsCredentials::new("AKID", "secret"));
/// assert_eq!(s3.signer().unwrap().current().unwrap().key(), "AKID");
/// ```
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum Credentials<C> {
    /// The cloud's own chain, found when the store opens.
    #[default]
    Chain,
    /// These credentials, as they are.
    Fixed(C),
    /// A source asked before every request.
    Source(Arc<dyn CredentialSource<C>>),
}

impl<C: Clone + Debug + Send + Sync + 'static> Credentials<C> {
    /// Fixed or source: the source that will give them (fixed credentials as a source that
    /// always gives them, its sign-in `shown` by them); `None` for the chain, which only the
    /// store's opening finds.
    pub(crate) fn source(&self, shown: fn(&C) -> String) -> Option<Arc<dyn CredentialSource<C>>> {
        match self {
            Credentials::Chain => None,
            Credentials::Fixed(c) => Some(Arc::new(Fixed {
                credentials: c.clone(),
                shown,
            })),
            Credentials::Source(s) => Some(s.clone()),
        }
    }
}

impl<C: PartialEq> PartialEq for Credentials<C> {
    fn eq(&self, other: &Credentials<C>) -> bool {
        match (self, other) {
            (Credentials::Chain, Credentials::Chain) => true,
            (Credentials::Fixed(a), Credentials::Fixed(b)) => a == b,
            (Credentials::Source(a), Credentials::Source(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

// Equality of fixed credentials and pointer identity are both equivalences.
impl<C: Eq> Eq for Credentials<C> {}

impl<C: Debug> Debug for Credentials<C> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // Each credential type's own Debug hides its secret.
        match self {
            Credentials::Chain => f.write_str("Chain"),
            Credentials::Fixed(c) => f.debug_tuple("Fixed").field(c).finish(),
            Credentials::Source(s) => f.debug_tuple("Source").field(s).finish(),
        }
    }
}

/// Credentials given as they are, as a source.
struct Fixed<C> {
    credentials: C,
    shown: fn(&C) -> String,
}

impl<C: Debug> Debug for Fixed<C> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("Fixed").field(&self.credentials).finish()
    }
}

impl<C: Clone + Debug + Send + Sync> CredentialSource<C> for Fixed<C> {
    fn current(&self) -> Result<C, CredentialError> {
        Ok(self.credentials.clone())
    }

    fn sign_in(&self) -> SignIn {
        SignIn::new((self.shown)(&self.credentials))
    }
}

#[cfg(test)]
mod tests {
    use super::Credentials;
    use crate::{AwsCredentials, BearerToken, CredentialSource};
    use std::sync::Arc;

    #[test]
    fn fixed_credentials_are_a_source_that_names_them_and_the_chain_is_none_until_opened() {
        let keys = Credentials::Fixed(AwsCredentials::new("AKID", "s3cret"));
        let source = keys
            .source(|c| format!("keys ({})", c.key()))
            .expect("a source");
        assert_eq!(source.current().expect("keys").key(), "AKID");
        assert_eq!(source.sign_in().source, "keys (AKID)");
        assert!(Credentials::<AwsCredentials>::Chain
            .source(|_| String::new())
            .is_none());
        let shown = format!("{keys:?} {source:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
        let token = Credentials::Fixed(BearerToken::new("ya29.secret"));
        assert!(!format!("{token:?}").contains("ya29"));
    }

    #[derive(Debug)]
    struct Own;

    impl CredentialSource<BearerToken> for Own {
        fn current(&self) -> Result<BearerToken, crate::CredentialError> {
            Ok(BearerToken::new("own"))
        }
    }

    #[test]
    fn slots_are_equal_by_their_credentials_or_by_the_same_source() {
        let a = Credentials::Fixed(BearerToken::new("t"));
        assert_eq!(a, Credentials::Fixed(BearerToken::new("t")));
        assert_ne!(a, Credentials::Chain);
        let source: Arc<dyn CredentialSource<BearerToken>> = Arc::new(Own);
        let s = Credentials::Source(source.clone());
        assert_eq!(s, Credentials::Source(source));
        assert_ne!(s, Credentials::Source(Arc::new(Own)));
    }
}
