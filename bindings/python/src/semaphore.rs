//! `Semaphore` and `AsyncSemaphore`: at most N holders of one name at once.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use sets3lock::Semaphore as RustSemaphore;
use sets3lock::Wait;
use std::sync::Arc;

use crate::async_held::acquiring;
use crate::entered::Entered;
use crate::errors::to_py;
use crate::held::Held;
use crate::process::Origin;
use crate::runtime;
use crate::settings::{lock_url, Settings, LOCK, STORE, WAIT};

/// `slots` as the library takes it; a `ValueError` with the library's message if it is out of
/// range.
fn slot_count(slots: &Bound<'_, PyAny>) -> PyResult<u32> {
    let range = format!("1 to {} slots", sets3lock::MAX_SLOTS);
    let n = crate::settings::whole("slots", slots, &range)?;
    if n == 0 || n > sets3lock::MAX_SLOTS {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "slots = {n}: give {range}"
        )));
    }
    Ok(n)
}

fn open(
    what: &str,
    url: &str,
    slots: u32,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<(Arc<RustSemaphore>, Wait)> {
    let settings = Settings::read(what, options, &[STORE, LOCK, WAIT])?;
    let parsed = lock_url(url)?;
    let options = settings.lock(parsed.scheme())?;
    let wait = settings.wait()?;
    let handle = runtime::runtime()?;
    let _in_runtime = handle.enter();
    let semaphore = RustSemaphore::new(url, slots, options).map_err(to_py)?;
    Ok((Arc::new(semaphore), wait))
}

/// At most `slots` holders of `url` at once (one lock object per slot, `url/0` ...).
/// `with Semaphore(url, 2) as held:` takes a slot (`held.slot`).
#[pyclass(frozen, module = "sets3lock")]
pub(crate) struct Semaphore {
    semaphore: Arc<RustSemaphore>,
    wait: Wait,
    entered: Entered,
    origin: Origin,
}

#[pymethods]
impl Semaphore {
    #[new]
    #[pyo3(signature = (url, slots, **options))]
    fn new(
        url: &str,
        slots: &Bound<'_, PyAny>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let slots = slot_count(slots)?;
        let (semaphore, wait) = open("Semaphore", url, slots, options)?;
        Ok(Semaphore {
            semaphore,
            wait,
            entered: Entered::default(),
            origin: Origin::here(),
        })
    }

    /// The semaphore's URL.
    #[getter]
    fn url(&self) -> String {
        self.semaphore.url().to_string()
    }

    /// How many holders it admits at once.
    #[getter]
    fn slots(&self) -> u32 {
        self.semaphore.slots()
    }

    /// Takes a slot (waiting as the arguments said): the hold, with `slot` set.
    fn acquire(&self, py: Python<'_>) -> PyResult<Held> {
        self.origin
            .check("the Semaphore", &self.semaphore.url().to_string())?;
        let semaphore = self.semaphore.clone();
        let wait = self.wait;
        Held::acquired(py, async move { semaphore.acquire(wait).await })
    }

    fn __enter__(&self, py: Python<'_>) -> PyResult<Py<Held>> {
        self.entered.enter(py, self.acquire(py)?)
    }

    #[pyo3(signature = (*exc))]
    fn __exit__(&self, py: Python<'_>, exc: &Bound<'_, PyTuple>) -> PyResult<()> {
        self.entered.exit(py, exc)
    }
}

/// At most `slots` holders at once, for asyncio: `async with AsyncSemaphore(url, 2) as held:`.
#[pyclass(frozen, module = "sets3lock")]
pub(crate) struct AsyncSemaphore {
    semaphore: Arc<RustSemaphore>,
    wait: Wait,
    entered: Arc<Entered>,
    origin: Origin,
}

#[pymethods]
impl AsyncSemaphore {
    #[new]
    #[pyo3(signature = (url, slots, **options))]
    fn new(
        url: &str,
        slots: &Bound<'_, PyAny>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let slots = slot_count(slots)?;
        let (semaphore, wait) = open("AsyncSemaphore", url, slots, options)?;
        Ok(AsyncSemaphore {
            semaphore,
            wait,
            entered: Arc::default(),
            origin: Origin::here(),
        })
    }

    /// The semaphore's URL.
    #[getter]
    fn url(&self) -> String {
        self.semaphore.url().to_string()
    }

    /// How many holders it admits at once.
    #[getter]
    fn slots(&self) -> u32 {
        self.semaphore.slots()
    }

    /// Takes a slot; resolves with the hold.
    fn acquire<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.origin
            .check("the AsyncSemaphore", &self.semaphore.url().to_string())?;
        let semaphore = self.semaphore.clone();
        let wait = self.wait;
        acquiring(py, async move { semaphore.acquire(wait).await })
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
}
