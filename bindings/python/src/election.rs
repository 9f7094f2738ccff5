//! `Election` and `AsyncElection`: one leader at a time, its value published in the lock.

use pyo3::prelude::*;
use pyo3::types::PyDict;
use sets3lock::proto::Sighting;
use sets3lock::Election as RustElection;
use std::sync::Arc;

use crate::async_held::acquiring;
use crate::errors::to_py;
use crate::held::Held;
use crate::holder::Holder;
use crate::process::Origin;
use crate::runtime;
use crate::runtime::in_python;
use crate::settings::{lock_url, Settings, STORE};
use crate::watch::{cadence, AsyncWatch, Watch};

/// The settings an election takes (it always waits; its value is the candidate's).
const CANDIDATE: &[&str] = &["lease", "poll_max", "retry_limit", "store_check"];

fn open(
    what: &str,
    url: &str,
    value: &str,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Arc<RustElection>> {
    let settings = Settings::read(what, options, &[STORE, CANDIDATE])?;
    let parsed = lock_url(url)?;
    let options = settings.lock(parsed.scheme())?;
    let handle = runtime::runtime()?;
    let _in_runtime = handle.enter();
    let election = RustElection::new(url, value, options).map_err(to_py)?;
    Ok(Arc::new(election))
}

/// The leader in `sighting`, if anyone leads.
fn leader(sighting: &Sighting) -> Option<Holder> {
    match sighting {
        Sighting::Held { etag, holder, .. } | Sighting::Stale { etag, holder, .. } => {
            Some(Holder::from_record(holder, Some(etag.as_str())))
        }
        _ => None,
    }
}

/// Leader election on `url`: `campaign()` waits until elected and returns the leadership
/// (a `Held`; release it to resign), `leader()` reads who leads, `observe()` watches.
#[pyclass(frozen, module = "sets3lock")]
pub(crate) struct Election {
    election: Arc<RustElection>,
    url: String,
    origin: Origin,
}

#[pymethods]
impl Election {
    #[new]
    #[pyo3(signature = (url, value, **options))]
    fn new(url: &str, value: &str, options: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        Ok(Election {
            election: open("Election", url, value, options)?,
            url: url.to_owned(),
            origin: Origin::here(),
        })
    }

    /// The election's URL.
    #[getter]
    fn url(&self) -> &str {
        &self.url
    }

    /// Campaigns until elected (as long as it takes): the leadership.
    fn campaign(&self, py: Python<'_>) -> PyResult<Held> {
        self.origin.check("the election", &self.url)?;
        let election = self.election.clone();
        Held::acquired(py, async move { election.campaign().await })
    }

    /// The leader now (one read), `None` if nobody leads.
    fn leader(&self, py: Python<'_>) -> PyResult<Option<Holder>> {
        self.origin.check("the election", &self.url)?;
        let election = self.election.clone();
        let sighting = runtime::wait(py, async move { election.leader().await })?.map_err(to_py)?;
        Ok(leader(&sighting))
    }

    /// Watches the leadership: the leader now, then every change.
    #[pyo3(signature = (**options))]
    fn observe(&self, options: Option<&Bound<'_, PyDict>>) -> PyResult<Watch> {
        self.origin.check("the election", &self.url)?;
        let settings = Settings::read("observe", options, &[&["interval", "foreign_lease"]])?;
        let handle = runtime::runtime()?;
        let _in_runtime = handle.enter();
        let watcher = self.election.observe(cadence(&settings)?).map_err(to_py)?;
        Ok(Watch::of(watcher))
    }
}

/// Leader election for asyncio.
#[pyclass(frozen, module = "sets3lock")]
pub(crate) struct AsyncElection {
    election: Arc<RustElection>,
    url: String,
    origin: Origin,
}

#[pymethods]
impl AsyncElection {
    #[new]
    #[pyo3(signature = (url, value, **options))]
    fn new(url: &str, value: &str, options: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        Ok(AsyncElection {
            election: open("AsyncElection", url, value, options)?,
            url: url.to_owned(),
            origin: Origin::here(),
        })
    }

    /// The election's URL.
    #[getter]
    fn url(&self) -> &str {
        &self.url
    }

    /// Campaigns until elected; resolves with the leadership.
    fn campaign<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.origin.check("the election", &self.url)?;
        let election = self.election.clone();
        acquiring(py, async move { election.campaign().await })
    }

    /// The leader now (one read); resolves with `None` if nobody leads.
    fn leader<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.origin.check("the election", &self.url)?;
        let election = self.election.clone();
        runtime::awaitable(py, async move {
            let sighting = in_python(election.leader().await).await?;
            Ok(leader(&sighting))
        })
    }

    /// Watches the leadership (an async iterator).
    #[pyo3(signature = (**options))]
    fn observe(&self, options: Option<&Bound<'_, PyDict>>) -> PyResult<AsyncWatch> {
        self.origin.check("the election", &self.url)?;
        let settings = Settings::read("observe", options, &[&["interval", "foreign_lease"]])?;
        let handle = runtime::runtime()?;
        let _in_runtime = handle.enter();
        let watcher = self.election.observe(cadence(&settings)?).map_err(to_py)?;
        Ok(AsyncWatch::of(watcher))
    }
}
