//! A held lock's awaitable face, `AsyncHeld`, for asyncio: an async context manager that
//! releases at exit, and its delivery to the awaiting task.

use pyo3::prelude::*;
use sets3lock::Held as RustHeld;
use std::sync::Arc;

use crate::hold::{exit_outcome, leaving_by, loss_of, outcome_name, quiet, release, Ended, Hold};
use crate::hold_face::hold_face;
use crate::runtime::{self, in_python};

/// A held lock (awaitable methods), for asyncio.
#[pyclass(frozen, module = "sets3lock")]
#[derive(Debug)]
pub(crate) struct AsyncHeld {
    hold: Hold,
}

impl AsyncHeld {
    /// The Python face of `held`, for an awaitable to deliver (refused once the interpreter
    /// is exiting).
    pub(crate) fn deliver(held: RustHeld) -> PyResult<Delivered> {
        Ok(Delivered(AsyncHeld {
            hold: Hold::new(held, false)?,
        }))
    }
}

/// The awaitable that resolves with the hold `acquiring` gets (a lock's, a slot's, a
/// leadership), delivered to the awaiting task. Cancelling it gives up the acquisition.
pub(crate) fn acquiring<'py>(
    py: Python<'py>,
    acquiring: impl std::future::Future<Output = Result<RustHeld, sets3lock::Error>> + Send + 'static,
) -> PyResult<Bound<'py, PyAny>> {
    delivering(runtime::awaitable(py, async move {
        let held = in_python(acquiring.await).await?;
        AsyncHeld::deliver(held)
    })?)
}

/// An `AsyncHeld` on its way to Python. Marked delivered only by Python code that received it
/// (`_enter.delivered`, see [`delivering`]): a hold whose task was cancelled as it succeeded
/// is released quietly.
pub(crate) struct Delivered(AsyncHeld);

/// The awaitable `acquiring` (which resolves with an `AsyncHeld`) as the awaitable the
/// caller gets: the package's `_enter.delivered(acquiring)`, which marks the hold delivered
/// once the awaiting task has it.
pub(crate) fn delivering<'py>(acquiring: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = acquiring.py();
    py.import("sets3lock._enter")?
        .getattr("delivered")?
        .call1((acquiring,))
}

impl<'py> IntoPyObject<'py> for Delivered {
    type Target = AsyncHeld;
    type Output = Bound<'py, AsyncHeld>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> Result<Self::Output, Self::Error> {
        Bound::new(py, self.0)
    }
}

hold_face! {
    AsyncHeld {
        /// Marks the hold as received by Python (called by `_enter.delivered`).
        fn _delivered(&self) {
            self.hold.cell.delivered();
        }

        /// Resolves when the lock is lost or expires, with why ("released" if released here).
        fn lost<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
            self.hold.here()?;
            // The future holds no strong reference to the hold: the hold is dropped (and, if
            // never released, released with its warning) with the Python object, under the GIL.
            let (watch, cell) = (self.hold.watch.clone(), Arc::downgrade(&self.hold.cell));
            runtime::awaitable(py, async move {
                let loss = watch.lost().await;
                let ended = loss_of(cell.upgrade().as_deref(), &watch).unwrap_or(Ended::of(loss));
                Ok(ended.name())
            })
        }

        /// Releases the lock; resolves with what the release found (as `Held.release`).
        fn release<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
            let held = self.hold.for_release()?;
            runtime::awaitable(py, async move {
                in_python(release(held).await.map(outcome_name)).await
            })
        }

        fn __aenter__<'py>(slf: Py<Self>, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
            runtime::awaitable(py, async move { Ok(slf) })
        }

        #[pyo3(signature = (*exc))]
        fn __aexit__<'py>(
            &self,
            py: Python<'py>,
            exc: &Bound<'py, pyo3::types::PyTuple>,
        ) -> PyResult<Bound<'py, PyAny>> {
            self.exit(py, exc)
        }
    }
}

impl AsyncHeld {
    /// Leaving an `async with` block: releases (unless released already), raising
    /// `LockLost` if the lock was lost.
    pub(crate) fn exit<'py>(
        &self,
        py: Python<'py>,
        exc: &Bound<'py, pyo3::types::PyTuple>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let by = leaving_by(exc);
        let held = if self.hold.here().is_ok() && self.hold.cell.slot().is_none() {
            None
        } else {
            Some(self.hold.for_release()?)
        };
        let url = self.hold.url.clone();
        runtime::awaitable(py, async move {
            let Some(held) = held else { return Ok(()) };
            let outcome = release(held).await;
            if quiet(&outcome) {
                return Ok(());
            }
            // The exception is made on a blocking thread: the workers never wait for the GIL.
            tokio::task::spawn_blocking(move || exit_outcome(&url, outcome, by))
                .await
                .unwrap_or_else(|_| Err(crate::process::exiting()))
        })
    }
}
