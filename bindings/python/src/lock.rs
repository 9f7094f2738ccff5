//! `Lock` and `AsyncLock`: one key, acquired by `with`/`async with` or `acquire()`.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use sets3lock::Locker;
use sets3lock::Wait;
use std::sync::Arc;

use crate::async_held::acquiring;
use crate::entered::Entered;
use crate::errors::to_py;
use crate::held::Held;
use crate::process::Origin;
use crate::runtime;
use crate::settings::{lock_url, Settings, LOCK, STORE, WAIT};

/// A locker for `url` with the keyword arguments of `what`, and how long it waits.
fn open(
    what: &str,
    url: &str,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<(Arc<Locker>, Wait)> {
    let settings = Settings::read(what, options, &[STORE, LOCK, WAIT])?;
    let parsed = lock_url(url)?;
    let options = settings.lock(parsed.scheme())?;
    let wait = settings.wait()?;
    let handle = runtime::runtime()?;
    let _in_runtime = handle.enter();
    let locker = Locker::new(url, options).map_err(to_py)?;
    Ok((Arc::new(locker), wait))
}

/// A lock on one object (`s3://bucket/key`, `az://container/key`, `gs://bucket/key`).
/// `with Lock(url) as held:` acquires it (waiting as the arguments say), renews it in the
/// background, and releases it at the end of the block.
#[pyclass(frozen, module = "sets3lock")]
pub(crate) struct Lock {
    locker: Arc<Locker>,
    wait: Wait,
    entered: Entered,
    origin: Origin,
}

#[pymethods]
impl Lock {
    #[new]
    #[pyo3(signature = (url, **options))]
    fn new(py: Python<'_>, url: &str, options: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let (locker, wait) = open("Lock", url, options)?;
        // The first credentials of a source that fetches them (instance metadata, a role):
        // waited for here, with the GIL released, so that missing credentials fail the
        // constructor as they always did. (`AsyncLock` leaves them to its first acquisition:
        // its constructor runs on the event loop.)
        let ready = locker.clone();
        runtime::wait(py, async move { ready.ready().await })?.map_err(to_py)?;
        Ok(Lock {
            locker,
            wait,
            entered: Entered::default(),
            origin: Origin::here(),
        })
    }

    /// The lock's URL.
    #[getter]
    fn url(&self) -> String {
        self.locker.url().to_string()
    }

    /// Acquires the lock (waiting as the arguments said; the GIL is released meanwhile) and
    /// returns the hold, renewed in the background until released.
    fn acquire(&self, py: Python<'_>) -> PyResult<Held> {
        self.origin
            .check("the Lock", &self.locker.url().to_string())?;
        let locker = self.locker.clone();
        let wait = self.wait;
        Held::acquired(py, async move { locker.acquire(wait).await })
    }

    fn __enter__(&self, py: Python<'_>) -> PyResult<Py<Held>> {
        self.entered.enter(py, self.acquire(py)?)
    }

    #[pyo3(signature = (*exc))]
    fn __exit__(&self, py: Python<'_>, exc: &Bound<'_, PyTuple>) -> PyResult<()> {
        self.entered.exit(py, exc)
    }

    /// Requests sent to the store so far by this lock object.
    fn requests(&self) -> u64 {
        self.locker.requests()
    }

    fn __repr__(&self) -> String {
        format!("<sets3lock.Lock {}>", self.locker.url())
    }
}

/// A lock on one object, for asyncio: `async with AsyncLock(url) as held:`.
#[pyclass(frozen, module = "sets3lock")]
pub(crate) struct AsyncLock {
    locker: Arc<Locker>,
    wait: Wait,
    entered: Arc<Entered>,
    origin: Origin,
}

#[pymethods]
impl AsyncLock {
    #[new]
    #[pyo3(signature = (url, **options))]
    fn new(url: &str, options: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let (locker, wait) = open("AsyncLock", url, options)?;
        Ok(AsyncLock {
            locker,
            wait,
            entered: Arc::default(),
            origin: Origin::here(),
        })
    }

    /// The lock's URL.
    #[getter]
    fn url(&self) -> String {
        self.locker.url().to_string()
    }

    /// Acquires the lock; resolves with the hold. Cancelling the wait gives up the
    /// acquisition (and cleans up a write of ours that landed).
    fn acquire<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.origin
            .check("the AsyncLock", &self.locker.url().to_string())?;
        let locker = self.locker.clone();
        let wait = self.wait;
        acquiring(py, async move { locker.acquire(wait).await })
    }

    fn __aenter__<'py>(slf: Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        crate::entered::aenter(slf.into_any())
    }

    /// Notes `held` as entered by the running task (called by `_enter.enter`).
    fn _entered(&self, py: Python<'_>, held: Py<PyAny>) -> PyResult<()> {
        self.entered.push(py, true, held)
    }

    #[pyo3(signature = (*exc))]
    fn __aexit__<'py>(
        &self,
        py: Python<'py>,
        exc: &Bound<'py, PyTuple>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.entered.aexit(py, exc)
    }

    /// Requests sent to the store so far by this lock object.
    fn requests(&self) -> u64 {
        self.locker.requests()
    }

    fn __repr__(&self) -> String {
        format!("<sets3lock.AsyncLock {}>", self.locker.url())
    }
}
