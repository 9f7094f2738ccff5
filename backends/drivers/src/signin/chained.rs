//! The source a chain settles on, and the one it gives when nothing applies: the same two for
//! every cloud, over what each one's fetcher gives.

use crate::signin::refresh::{Fetch, Refreshing, FIRST_WAIT};
use crate::signin::source::{CredentialError, CredentialSource};
use crate::signin::SignIn;
use std::sync::{Arc, Mutex};

/// A source's name, which its fetcher may change (a chain that settles on one of two
/// sources at its first fetch says which).
#[derive(Clone)]
pub(crate) struct Name(Arc<Mutex<String>>);

impl Name {
    pub(crate) fn new(name: impl Into<String>) -> Name {
        Name(Arc::new(Mutex::new(name.into())))
    }

    pub(crate) fn get(&self) -> String {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    #[cfg_attr(not(feature = "azure"), allow(dead_code))]
    pub(crate) fn set(&self, name: impl Into<String>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = name.into();
    }
}

/// A source of a chain, with its cache.
pub(crate) struct Chained<F: Fetch> {
    name: Name,
    /// What was passed over to reach this source ("the environment (...), ..."), for the
    /// error when it fails too.
    tried: Vec<String>,
    /// Whether the fetcher's error already names each source it tried ("A (why), B (why)").
    lists_itself: bool,
    fix: String,
    cache: Refreshing<F>,
}

impl<F: Fetch> core::fmt::Debug for Chained<F> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Chained")
            .field("source", &self.name.get())
            .finish_non_exhaustive()
    }
}

impl<F: Fetch> Chained<F> {
    /// The fetchers `make` makes, on a thread named after `thread`, under `name`, reached
    /// after `tried`; `fix` is the advice when it fails.
    pub(crate) fn new(
        make: impl Fn() -> F + Send + Sync + 'static,
        name: Name,
        tried: Vec<String>,
        fix: impl Into<String>,
        thread: &'static str,
    ) -> Chained<F> {
        Chained {
            name,
            tried,
            lists_itself: false,
            fix: fix.into(),
            cache: Refreshing::new(make, thread),
        }
    }

    /// The fetcher's errors name every source it tried.
    #[cfg_attr(not(feature = "azure"), allow(dead_code))]
    pub(crate) fn listing_itself(mut self) -> Chained<F> {
        self.lists_itself = true;
        self
    }
}

impl<C, F> CredentialSource<C> for Chained<F>
where
    F: Fetch,
    F::Value: Into<C>,
{
    fn current(&self) -> Result<C, CredentialError> {
        self.cache
            .get(FIRST_WAIT)
            .map(Into::into)
            .map_err(|e| CredentialError::new(format!("{}: {e}", self.name.get())))
    }

    fn ready(&self) -> Result<(), CredentialError> {
        self.cache.wait_first(FIRST_WAIT).map_err(|e| {
            let mut tried = self.tried.clone();
            if self.lists_itself {
                tried.push(e);
            } else {
                tried.push(format!("{} ({e})", self.name.get()));
            }
            CredentialError::new(format!("tried {}; {}", tried.join(", "), self.fix))
        })
    }

    fn sign_in(&self) -> SignIn {
        SignIn::from_status(&self.name.get(), self.cache.status())
    }
}

/// No source at all: what was tried and the fix, for the error when a lock is opened.
#[derive(Debug)]
pub(crate) struct Nothing {
    pub(crate) tried: Vec<String>,
    pub(crate) fix: String,
}

impl Nothing {
    fn reason(&self) -> CredentialError {
        CredentialError::new(format!("tried {}; {}", self.tried.join(", "), self.fix))
    }
}

impl<C> CredentialSource<C> for Nothing {
    fn current(&self) -> Result<C, CredentialError> {
        Err(self.reason())
    }

    fn ready(&self) -> Result<(), CredentialError> {
        Err(self.reason())
    }

    fn sign_in(&self) -> SignIn {
        SignIn::new("none")
    }
}
