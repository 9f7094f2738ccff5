//! Where a store's credentials come from, one slot in each store's settings: the cloud's own
//! chain (the default), credentials given as they are, or a source of your own.

use crate::signin::source::{CredentialError, CredentialSource};
use crate::signin::SignIn;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};

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

/// What the chain found when a store opened with [`Credentials::Chain`], kept for the
/// settings and their clones: the stores they open share one source (one cache, one refresh
/// thread, one try of a metadata service), as long as the chain's inputs (the profile, the
/// file, the host the settings name) are the ones it was found for.
pub(crate) struct Found<C>(Arc<Mutex<Option<Kept<C>>>>);

/// A source the chain found, and the inputs it was found for.
type Kept<C> = (String, Arc<dyn CredentialSource<C>>);

impl<C> Clone for Found<C> {
    fn clone(&self) -> Found<C> {
        Found(self.0.clone())
    }
}

impl<C> Default for Found<C> {
    fn default() -> Found<C> {
        Found(Arc::default())
    }
}

impl<C> Debug for Found<C> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Found")
    }
}

impl<C> Found<C> {
    /// The source found for `inputs`, or the one `find` finds now (then kept).
    pub(crate) fn get_or_find(
        &self,
        inputs: String,
        find: impl FnOnce() -> Result<Arc<dyn CredentialSource<C>>, crate::Error>,
    ) -> Result<Arc<dyn CredentialSource<C>>, crate::Error> {
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((key, source)) = kept.as_ref() {
            if *key == inputs {
                return Ok(source.clone());
            }
        }
        let source = find()?;
        *kept = Some((inputs, source.clone()));
        Ok(source)
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

    #[test]
    fn what_the_chain_found_is_shared_by_clones_for_the_same_inputs_only() {
        use super::Found;
        let found: Found<BearerToken> = Found::default();
        let clone = found.clone();
        let mut finds = 0;
        let mut find = || -> Result<Arc<dyn CredentialSource<BearerToken>>, crate::Error> {
            finds += 1;
            Ok(Arc::new(Own))
        };
        let a = found
            .get_or_find("profile ci".into(), &mut find)
            .expect("found");
        let b = clone
            .get_or_find("profile ci".into(), &mut find)
            .expect("kept");
        assert!(Arc::ptr_eq(&a, &b));
        let c = clone
            .get_or_find("profile prod".into(), &mut find)
            .expect("found again");
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(finds, 2);
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
