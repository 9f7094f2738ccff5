//! A held lock, as Python holds it: `Held` (blocking methods) and `AsyncHeld` (awaitables),
//! over one shared cell. Both are context managers that release at exit.

use pyo3::prelude::*;
use sets3lock::proto::ReleaseOutcome;
use sets3lock::{Error as LockError, Health, Loss};
use sets3lock::{Held as RustHeld, LossWatch};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use crate::errors::{in_python, to_py, Error};
use crate::runtime::{self, Origin};

/// Every hold of this process that Python may still reach: released at interpreter exit.
static LIVE: Mutex<Vec<Weak<Cell>>> = Mutex::new(Vec::new());

/// Asks every hold of this process that is still held to release (at interpreter exit;
/// `settle` then waits for the releases).
pub(crate) fn release_all() {
    let live: Vec<Arc<Cell>> = {
        let mut list = LIVE.lock().unwrap_or_else(|e| e.into_inner());
        list.retain(|w| w.strong_count() > 0);
        list.iter().filter_map(Weak::upgrade).collect()
    };
    for cell in live {
        if cell.origin.is_here() {
            drop(cell.take());
        }
    }
}

/// One hold: the library's handle until it is released, and what outlives it.
#[derive(Debug)]
struct Cell {
    held: Mutex<Option<RustHeld>>,
    /// The process the lock was acquired in (see `os.fork()` in the package's README).
    origin: Origin,
    /// Whether Python was given the hold: one never delivered (an asyncio acquisition
    /// cancelled as it succeeded) is released without a warning.
    delivered: std::sync::atomic::AtomicBool,
}

impl Cell {
    fn slot(&self) -> MutexGuard<'_, Option<RustHeld>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn take(&self) -> Option<RustHeld> {
        self.slot().take()
    }
}

impl Drop for Cell {
    fn drop(&mut self) {
        let Some(held) = self
            .held
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        else {
            return;
        };
        if !self.origin.is_here() {
            // A forked child: the driver is the parent's; the parent keeps the lock.
            std::mem::forget(held);
            return;
        }
        let url = held.url().to_string();
        // Released in the background; the interpreter's exit waits for it.
        drop(held);
        if !self.delivered.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        Python::attach(|py| {
            // An exception may be propagating (the hold dropped as a frame unwinds): the
            // warning must not replace it.
            let propagating = PyErr::take(py);
            let message = format!(
                "sets3lock: the lock {url} was garbage-collected while held (released now): release it, or use `with`"
            );
            let warned = std::ffi::CString::new(message).ok().map(|m| {
                let class = py.get_type::<pyo3::exceptions::PyResourceWarning>();
                PyErr::warn(py, class.as_any(), &m, 1)
            });
            if let Some(Err(e)) = warned {
                e.write_unraisable(py, None);
            }
            if let Some(e) = propagating {
                e.restore(py);
            }
        });
    }
}

/// What both faces share: the cell and what is known of the hold from its start.
#[derive(Debug)]
struct Hold {
    cell: Arc<Cell>,
    watch: LossWatch,
    url: String,
    owner: String,
    token: Option<u64>,
    slot: Option<u32>,
    /// The last ETag known: the one at the release, once released.
    last_etag: Mutex<String>,
}

impl Hold {
    /// The hold of `held`, `delivered` to Python already or not yet; refused (and released
    /// at once) once the interpreter is exiting.
    fn new(held: RustHeld, delivered: bool) -> PyResult<Hold> {
        if runtime::closing() {
            drop(held);
            return Err(runtime::exiting());
        }
        let hold = Hold {
            watch: held.loss_watch(),
            url: held.url().to_string(),
            owner: held.owner().to_string(),
            token: held.token(),
            slot: held.slot(),
            last_etag: Mutex::new(held.etag().as_str().to_owned()),
            cell: Arc::new(Cell {
                held: Mutex::new(Some(held)),
                origin: Origin::here(),
                delivered: std::sync::atomic::AtomicBool::new(delivered),
            }),
        };
        let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
        live.retain(|w| w.strong_count() > 0);
        live.push(Arc::downgrade(&hold.cell));
        Ok(hold)
    }

    /// Refuses use in a forked child of the process that acquired the lock.
    fn here(&self) -> PyResult<()> {
        self.cell.origin.check("the hold of", &self.url)
    }

    fn etag(&self) -> PyResult<String> {
        self.here()?;
        if let Some(held) = self.cell.slot().as_ref() {
            let etag = held.etag().as_str().to_owned();
            *self.last_etag.lock().unwrap_or_else(|e| e.into_inner()) = etag.clone();
            return Ok(etag);
        }
        Ok(self
            .last_etag
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone())
    }

    fn health(&self) -> PyResult<&'static str> {
        self.here()?;
        Ok(match self.cell.slot().as_ref().map(RustHeld::health) {
            Some(Health::Renewing) => "renewing",
            Some(Health::Behind { .. }) => "behind",
            _ => "ended",
        })
    }

    fn remaining(&self) -> PyResult<Option<f64>> {
        self.here()?;
        Ok(match self.cell.slot().as_ref() {
            Some(held) => match held.remaining_validity() {
                Some(left) => Some(left.as_secs_f64()),
                None if held.is_held() => None,
                None => Some(0.0),
            },
            None => Some(0.0),
        })
    }

    fn is_held(&self) -> PyResult<bool> {
        self.here()?;
        Ok(self.cell.slot().as_ref().is_some_and(RustHeld::is_held))
    }

    /// The loss so far, if any; "released" once released here.
    fn loss(&self) -> Option<&'static str> {
        loss_of(Some(&self.cell), &self.watch)
    }

    fn ensure(&self) -> PyResult<()> {
        self.here()?;
        match self.loss() {
            None => Ok(()),
            Some("released") => Err(Error::new_err(format!(
                "the lock {} was released: acquire it again",
                self.url
            ))),
            Some(reason) => Err(lost(&self.url, reason)),
        }
    }

    /// The handle, for a release; an error if it was released already.
    fn for_release(&self) -> PyResult<RustHeld> {
        self.here()?;
        let held = self
            .cell
            .take()
            .ok_or_else(|| Error::new_err(format!("the lock {} was released already", self.url)))?;
        *self.last_etag.lock().unwrap_or_else(|e| e.into_inner()) = held.etag().as_str().to_owned();
        Ok(held)
    }
}

/// The loss of the hold in `cell` (gone: dropped, so released) that `watch` watches, if any;
/// "released" once released here.
fn loss_of(cell: Option<&Cell>, watch: &LossWatch) -> Option<&'static str> {
    if cell.is_none_or(|c| c.slot().is_none()) {
        return Some("released");
    }
    watch.loss().map(loss_name)
}

/// The exception a `with` block is leaving by, from `__exit__`'s arguments (`None` if the
/// block ended normally).
fn leaving_by(exc: &Bound<'_, pyo3::types::PyTuple>) -> Option<Py<PyAny>> {
    exc.get_item(1)
        .ok()
        .filter(|e| !e.is_none())
        .map(Bound::unbind)
}

/// `error` with the block's exception `by` as its `__context__`, as Python chains an exception
/// raised by an `__exit__` written in Python.
fn chained(error: PyErr, by: Option<Py<PyAny>>) -> PyErr {
    if let Some(by) = by {
        Python::attach(|py| error.set_context(py, Some(PyErr::from_value(by.into_bound(py)))));
    }
    error
}

/// Leaving a `with` block on the lock at `url` by the exception `by` (if any): nothing if
/// the release found the lock still ours, `LockLost` (or the release's error) otherwise, with
/// `by` as its context.
fn exit_outcome(
    url: &str,
    outcome: Result<&'static str, LockError>,
    by: Option<Py<PyAny>>,
) -> PyResult<()> {
    let error = match outcome {
        Ok("taken_over") => lost(url, "taken_over"),
        Ok("already_gone") => lost(url, "deleted"),
        Ok(_) => return Ok(()),
        Err(e) => to_py(e),
    };
    Err(chained(error, by))
}

/// Whether a release's outcome leaves a `with` block quietly (no Python object to make).
fn quiet(outcome: &Result<&'static str, LockError>) -> bool {
    matches!(outcome, Ok("deleted" | "freed"))
}

fn loss_name(loss: Loss) -> &'static str {
    match loss {
        Loss::Lost(sets3lock::proto::LostReason::Deleted) => "deleted",
        Loss::Lost(_) => "taken_over",
        Loss::Expired => "expired",
        _ => "stopped",
    }
}

fn outcome_name(outcome: ReleaseOutcome) -> &'static str {
    match outcome {
        ReleaseOutcome::Deleted => "deleted",
        ReleaseOutcome::Freed => "freed",
        ReleaseOutcome::TakenOver => "taken_over",
        ReleaseOutcome::AlreadyGone => "already_gone",
        ReleaseOutcome::Resting => "resting",
        ReleaseOutcome::Overdue => "overdue",
        ReleaseOutcome::HeldElsewhere => "held_elsewhere",
        _ => "other",
    }
}

/// `LockLost` for the lock at `url`, lost for `reason`.
fn lost(url: &str, reason: &str) -> PyErr {
    let how = match reason {
        "taken_over" => "another holder took it over",
        "deleted" => "the lock object was deleted",
        "expired" => "its lease ran out before a renewal got through",
        _ => "its driver stopped (the lease runs out)",
    };
    Python::attach(|py| {
        let made = py
            .import("sets3lock._errors")
            .and_then(|m| m.getattr("LockLost"))
            .and_then(|c| c.call1((format!("the lock {url} was lost: {how}"), reason)));
        match made {
            Ok(e) => PyErr::from_value(e),
            Err(e) => e,
        }
    })
}

async fn release(held: RustHeld) -> Result<&'static str, LockError> {
    held.release().await.map(outcome_name)
}

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

    /// Releases: what the release found, or the library's error.
    fn end(&self, py: Python<'_>) -> PyResult<Result<&'static str, LockError>> {
        let held = self.hold.for_release()?;
        runtime::wait(py, release(held))
    }
}

#[pymethods]
impl Held {
    /// The lock's URL.
    #[getter]
    fn url(&self) -> &str {
        &self.hold.url
    }

    /// This hold's owner id (hex), as the lock's record names it.
    #[getter]
    fn owner(&self) -> &str {
        &self.hold.owner
    }

    /// The fencing token (fenced mode), `None` in presence mode.
    #[getter]
    fn token(&self) -> Option<u64> {
        self.hold.token
    }

    /// The slot, for a semaphore's hold.
    #[getter]
    fn slot(&self) -> Option<u32> {
        self.hold.slot
    }

    /// The lock object's version now (it changes at each renewal).
    #[getter]
    fn etag(&self) -> PyResult<String> {
        self.hold.etag()
    }

    /// "renewing", "behind" (renewals are failing; less than half the validity left) or
    /// "ended"; sends no request.
    fn health(&self) -> PyResult<&'static str> {
        self.hold.health()
    }

    /// Seconds of validity left (0 once ended), `None` for a lease of 0 (never expires).
    fn remaining(&self) -> PyResult<Option<f64>> {
        self.hold.remaining()
    }

    /// Whether the lock is held and valid now.
    fn is_held(&self) -> PyResult<bool> {
        self.hold.is_held()
    }

    /// Raises `LockLost` if the lock was lost (call it before an irreversible step).
    fn ensure(&self) -> PyResult<()> {
        self.hold.ensure()
    }

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
        if let Some(loss) = self.hold.loss() {
            return Ok(Some(loss));
        }
        let watch = self.hold.watch.clone();
        let waited = runtime::wait(py, async move {
            match timeout {
                Some(t) => tokio::time::timeout(t, watch.lost()).await.ok(),
                None => Some(watch.lost().await),
            }
        })?;
        Ok(waited.map(|loss| self.hold.loss().unwrap_or(loss_name(loss))))
    }

    /// Releases the lock and says what the release found: "deleted" (presence mode),
    /// "freed" (fenced mode), or "taken_over" / "already_gone" if it had been lost.
    fn release(&self, py: Python<'_>) -> PyResult<&'static str> {
        self.end(py)?.map_err(to_py)
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

    fn __repr__(&self) -> String {
        format!(
            "<sets3lock.Held {} owner {}>",
            self.hold.url, self.hold.owner
        )
    }
}

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

#[pymethods]
impl AsyncHeld {
    /// The lock's URL.
    #[getter]
    fn url(&self) -> &str {
        &self.hold.url
    }

    /// This hold's owner id (hex).
    #[getter]
    fn owner(&self) -> &str {
        &self.hold.owner
    }

    /// The fencing token (fenced mode), `None` in presence mode.
    #[getter]
    fn token(&self) -> Option<u64> {
        self.hold.token
    }

    /// The slot, for a semaphore's hold.
    #[getter]
    fn slot(&self) -> Option<u32> {
        self.hold.slot
    }

    /// The lock object's version now.
    #[getter]
    fn etag(&self) -> PyResult<String> {
        self.hold.etag()
    }

    /// "renewing", "behind" or "ended"; sends no request.
    fn health(&self) -> PyResult<&'static str> {
        self.hold.health()
    }

    /// Seconds of validity left, `None` for a lease of 0.
    fn remaining(&self) -> PyResult<Option<f64>> {
        self.hold.remaining()
    }

    /// Whether the lock is held and valid now.
    fn is_held(&self) -> PyResult<bool> {
        self.hold.is_held()
    }

    /// Raises `LockLost` if the lock was lost.
    fn ensure(&self) -> PyResult<()> {
        self.hold.ensure()
    }

    /// Marks the hold as received by Python (called by `_enter.delivered`).
    fn _delivered(&self) {
        self.hold
            .cell
            .delivered
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Resolves when the lock is lost or expires, with why ("released" if released here).
    fn lost<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.hold.here()?;
        // The future holds no strong reference to the hold: the hold is dropped (and, if
        // never released, released with its warning) with the Python object, under the GIL.
        let (watch, cell) = (self.hold.watch.clone(), Arc::downgrade(&self.hold.cell));
        runtime::awaitable(py, async move {
            let loss = watch.lost().await;
            Ok(loss_of(cell.upgrade().as_deref(), &watch).unwrap_or(loss_name(loss)))
        })
    }

    /// Releases the lock; resolves with what the release found (as `Held.release`).
    fn release<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let held = self.hold.for_release()?;
        runtime::awaitable(py, async move { in_python(release(held).await).await })
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

    fn __repr__(&self) -> String {
        format!(
            "<sets3lock.AsyncHeld {} owner {}>",
            self.hold.url, self.hold.owner
        )
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
                .unwrap_or_else(|_| Err(runtime::exiting()))
        })
    }
}
