//! What belongs to this process as a whole: whether the interpreter is exiting, and which
//! process an object was made in (`os.fork()` copies objects, not threads).

use pyo3::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set at interpreter exit: acquisitions still under way are given up, and a hold that
/// arrives after it is released at once.
static CLOSING: AtomicBool = AtomicBool::new(false);

/// Whether the interpreter is exiting (see `runtime::shutdown`).
pub(crate) fn closing() -> bool {
    CLOSING.load(Ordering::SeqCst)
}

/// Marks the interpreter as exiting, for good.
pub(crate) fn begin_closing() {
    CLOSING.store(true, Ordering::SeqCst);
}

/// The error for an operation refused because the interpreter is exiting. (Made without the
/// GIL: it may be made on one of the runtime's threads.)
pub(crate) fn exiting() -> PyErr {
    pyo3::exceptions::PyRuntimeError::new_err(
        "sets3lock: interrupted by the interpreter's exit: no lock can be acquired now (a release under way goes on until the exit's wait ends)",
    )
}

/// The process an object was made in. After `os.fork()` the child has none of the parent's
/// threads and shares its connections, so an object made before the fork refuses any use
/// there (the parent's locks stay the parent's).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Origin(u32);

impl Origin {
    /// This process.
    pub(crate) fn here() -> Origin {
        Origin(std::process::id())
    }

    /// Whether this is the process the object was made in.
    pub(crate) fn is_here(self) -> bool {
        self.0 == std::process::id()
    }

    /// An error unless this is the process the object `what` (for `url`) was made in.
    pub(crate) fn check(self, what: &str, url: &str) -> PyResult<()> {
        if self.is_here() {
            return Ok(());
        }
        let name = match url {
            "" => what.to_owned(),
            url => format!("{what} {url}"),
        };
        Err(crate::errors::Error::new_err(format!(
            "{name} was made by process {} before os.fork(): a forked child cannot use it (the parent keeps its locks); make a new one in the child",
            self.0
        )))
    }
}
