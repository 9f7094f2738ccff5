//! `Locks` and `AsyncLocks`: many keys of one bucket, one client and one driver task.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use sets3lock::proto::{LockUrl, Scheme};
use sets3lock::Locks as RustLocks;
use std::sync::Arc;

use crate::async_held::acquiring;
use crate::errors::to_py;
use crate::held::Held;
use crate::process::Origin;
use crate::runtime;
use crate::settings::{Settings, LOCK, STORE, WAIT};

/// The store `url` names: a lock URL, or a bucket's (`s3://bucket`, `az://container`).
fn scheme_of(url: &str) -> PyResult<Scheme> {
    match LockUrl::parse(url) {
        Ok(u) => Ok(u.scheme()),
        Err(e) => match LockUrl::parse(&format!("{}/k", url.trim_end_matches('/'))) {
            Ok(u) => Ok(u.scheme()),
            Err(_) => Err(PyValueError::new_err(e.to_string())),
        },
    }
}

fn open(
    what: &str,
    bucket_url: &str,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Arc<RustLocks>> {
    let settings = Settings::read(what, options, &[STORE, LOCK])?;
    let options = settings.lock(scheme_of(bucket_url)?)?;
    let handle = runtime::runtime()?;
    let _in_runtime = handle.enter();
    let locks = RustLocks::new(bucket_url, options).map_err(to_py)?;
    Ok(Arc::new(locks))
}

/// Locks on many keys of one bucket (`Locks("s3://bucket")`), sharing one client and one
/// background task: `with locks.acquire("jobs/42") as held:`.
#[pyclass(frozen, module = "sets3lock")]
pub(crate) struct Locks {
    locks: Arc<RustLocks>,
    origin: Origin,
}

#[pymethods]
impl Locks {
    #[new]
    #[pyo3(signature = (bucket_url, **options))]
    fn new(bucket_url: &str, options: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        Ok(Locks {
            locks: open("Locks", bucket_url, options)?,
            origin: Origin::here(),
        })
    }

    /// The bucket's name.
    #[getter]
    fn bucket(&self) -> String {
        self.locks.bucket().to_owned()
    }

    /// Acquires the lock on `key` (`wait=False` tries once, `timeout` bounds the wait).
    #[pyo3(signature = (key, **options))]
    fn acquire(
        &self,
        py: Python<'_>,
        key: &str,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Held> {
        self.origin
            .check("the Locks of bucket", self.locks.bucket())?;
        let wait = Settings::read("acquire", options, &[WAIT])?.wait()?;
        let (locks, key) = (self.locks.clone(), key.to_owned());
        Held::acquired(py, async move { locks.acquire(&key, wait).await })
    }

    /// Requests sent to the store so far by these locks.
    fn requests(&self) -> u64 {
        self.locks.requests()
    }
}

/// Locks on many keys of one bucket, for asyncio.
#[pyclass(frozen, module = "sets3lock")]
pub(crate) struct AsyncLocks {
    locks: Arc<RustLocks>,
    origin: Origin,
}

#[pymethods]
impl AsyncLocks {
    #[new]
    #[pyo3(signature = (bucket_url, **options))]
    fn new(bucket_url: &str, options: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        Ok(AsyncLocks {
            locks: open("AsyncLocks", bucket_url, options)?,
            origin: Origin::here(),
        })
    }

    /// The bucket's name.
    #[getter]
    fn bucket(&self) -> String {
        self.locks.bucket().to_owned()
    }

    /// Acquires the lock on `key`; resolves with the hold.
    #[pyo3(signature = (key, **options))]
    fn acquire<'py>(
        &self,
        py: Python<'py>,
        key: &str,
        options: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.origin
            .check("the AsyncLocks of bucket", self.locks.bucket())?;
        let wait = Settings::read("acquire", options, &[WAIT])?.wait()?;
        let (locks, key) = (self.locks.clone(), key.to_owned());
        acquiring(py, async move { locks.acquire(&key, wait).await })
    }

    /// Requests sent to the store so far by these locks.
    fn requests(&self) -> u64 {
        self.locks.requests()
    }
}
