//! A held lock's blocking face, `Held`: a context manager that releases at exit.

use pyo3::prelude::*;
use sets3lock::proto::ReleaseOutcome;
use sets3lock::{Error as LockError, Held as RustHeld};

use crate::errors::to_py;
use crate::hold::{exit_outcome, leaving_by, outcome_name, release, Ended, Hold};
use crate::hold_face::hold_face;
use crate::runtime;

/// A held lock (blocking methods). Renewed in the background until released; leaving a
/// `with` block releases it, and raises `LockLost` if it was lost meanwhile.
#[pyclass(frozen, module = "sets3lock")]
#[derive(Debug)]
pub(crate) struct Held {
    hold: Hold,
}

impl Held {
    /// The Python face of `held` (refused once the interpreter is exiting).
    pub(crate) fn new(held: RustHeld) -> PyResult<Held> {
        Ok(Held {
            hold: Hold::new(held, true)?,
        })
    }

    /// The hold `acquiring` gets (a lock's, a slot's, a leadership), waited for on this
    /// thread with the GIL released.
    pub(crate) fn acquired(
        py: Python<'_>,
        acquiring: impl std::future::Future<Output = Result<RustHeld, LockError>> + Send + 'static,
    ) -> PyResult<Held> {
        Held::new(runtime::wait(py, acquiring)?.map_err(to_py)?)
    }

    /// Releases: what the release found, or the library's error.
    fn end(&self, py: Python<'_>) -> PyResult<Result<ReleaseOutcome, LockError>> {
        let held = self.hold.for_release()?;
        runtime::wait(py, release(held))
    }
}

hold_face! {
    Held {
        /// Blocks until the lock is lost or expires (then why: "taken_over", "deleted",
        /// "expired", "stopped"; "released" if released here), or for at most `timeout`
        /// (then `None`). The GIL is released while it waits.
        #[pyo3(signature = (timeout=None))]
        fn wait_lost(
            &self,
            py: Python<'_>,
            timeout: Option<Bound<'_, PyAny>>,
        ) -> PyResult<Option<&'static str>> {
            self.hold.here()?;
            let timeout = crate::settings::optional_duration("timeout", timeout.as_ref())?;
            if let Some(ended) = self.hold.loss() {
                return Ok(Some(ended.name()));
            }
            let watch = self.hold.watch.clone();
            let waited = runtime::wait(py, async move {
                match timeout {
                    Some(t) => tokio::time::timeout(t, watch.lost()).await.ok(),
                    None => Some(watch.lost().await),
                }
            })?;
            Ok(waited.map(|loss| self.hold.loss().unwrap_or(Ended::of(loss)).name()))
        }

        /// Releases the lock and says what the release found: "deleted" (presence mode),
        /// "freed" (fenced mode), or "taken_over" / "already_gone" if it had been lost.
        fn release(&self, py: Python<'_>) -> PyResult<&'static str> {
            self.end(py)?.map(outcome_name).map_err(to_py)
        }

        fn __enter__(slf: Py<Self>) -> Py<Self> {
            slf
        }

        #[pyo3(signature = (*exc))]
        fn __exit__(&self, py: Python<'_>, exc: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<()> {
            if self.hold.here().is_ok() && self.hold.cell.slot().is_none() {
                return Ok(());
            }
            let outcome = self.end(py)?;
            exit_outcome(&self.hold.url, outcome, leaving_by(exc))
        }
    }
}
