//! A hold as Python holds it, whichever face it has (`Held`, blocking, in `held.rs`;
//! `AsyncHeld`, awaitable, in `async_held.rs`): the cell the library's handle lives in, what
//! is known of the hold from its start, every hold of the process (released at interpreter
//! exit), and what a release or a loss came to. Outcomes stay types until a face hands them
//! to Python.

use pyo3::prelude::*;
use sets3lock::proto::ReleaseOutcome;
use sets3lock::{Error as LockError, Health, Loss};
use sets3lock::{Held as RustHeld, LossWatch};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use crate::errors::{to_py, Error};
use crate::process::{self, Origin};

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
pub(crate) struct Cell {
    held: Mutex<Option<RustHeld>>,
    /// The process the lock was acquired in (see `os.fork()` in the package's README).
    origin: Origin,
    /// Whether Python was given the hold: one never delivered (an asyncio acquisition
    /// cancelled as it succeeded) is released without a warning.
    delivered: std::sync::atomic::AtomicBool,
}

impl Cell {
    pub(crate) fn slot(&self) -> MutexGuard<'_, Option<RustHeld>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Marks the hold as received by Python.
    pub(crate) fn delivered(&self) {
        self.delivered
            .store(true, std::sync::atomic::Ordering::SeqCst);
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
pub(crate) struct Hold {
    pub(crate) cell: Arc<Cell>,
    pub(crate) watch: LossWatch,
    pub(crate) url: String,
    pub(crate) owner: String,
    pub(crate) token: Option<u64>,
    pub(crate) slot: Option<u32>,
    /// The last ETag known: the one at the release, once released.
    last_etag: Mutex<String>,
}

impl Hold {
    /// The hold of `held`, `delivered` to Python already or not yet; refused (and released
    /// at once) once the interpreter is exiting.
    pub(crate) fn new(held: RustHeld, delivered: bool) -> PyResult<Hold> {
        if process::closing() {
            drop(held);
            return Err(process::exiting());
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
    pub(crate) fn here(&self) -> PyResult<()> {
        self.cell.origin.check("the hold of", &self.url)
    }

    pub(crate) fn etag(&self) -> PyResult<String> {
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

    /// "renewing", "behind" or "ended".
    pub(crate) fn health(&self) -> PyResult<&'static str> {
        self.here()?;
        Ok(match self.cell.slot().as_ref().map(RustHeld::health) {
            Some(Health::Renewing) => "renewing",
            Some(Health::Behind { .. }) => "behind",
            _ => "ended",
        })
    }

    pub(crate) fn remaining(&self) -> PyResult<Option<f64>> {
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

    pub(crate) fn is_held(&self) -> PyResult<bool> {
        self.here()?;
        Ok(self.cell.slot().as_ref().is_some_and(RustHeld::is_held))
    }

    /// The loss so far, if any; `Released` once released here.
    pub(crate) fn loss(&self) -> Option<Ended> {
        loss_of(Some(&self.cell), &self.watch)
    }

    pub(crate) fn ensure(&self) -> PyResult<()> {
        self.here()?;
        match self.loss() {
            None => Ok(()),
            Some(Ended::Released) => Err(Error::new_err(format!(
                "the lock {} was released: acquire it again",
                self.url
            ))),
            Some(ended) => Err(lost(&self.url, ended)),
        }
    }

    /// The handle, for a release; an error if it was released already.
    pub(crate) fn for_release(&self) -> PyResult<RustHeld> {
        self.here()?;
        let held = self
            .cell
            .take()
            .ok_or_else(|| Error::new_err(format!("the lock {} was released already", self.url)))?;
        *self.last_etag.lock().unwrap_or_else(|e| e.into_inner()) = held.etag().as_str().to_owned();
        Ok(held)
    }
}

/// How a hold ended, as `wait_lost`, `lost()` and `LockLost.reason` name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ended {
    /// Another holder took it over.
    TakenOver,
    /// The lock object was deleted.
    Deleted,
    /// Its lease ran out before a renewal got through.
    Expired,
    /// Its driver stopped.
    Stopped,
    /// Released here.
    Released,
}

impl Ended {
    /// The name Python sees.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Ended::TakenOver => "taken_over",
            Ended::Deleted => "deleted",
            Ended::Expired => "expired",
            Ended::Stopped => "stopped",
            Ended::Released => "released",
        }
    }

    /// What happened, for a message.
    fn how(self) -> &'static str {
        match self {
            Ended::TakenOver => "another holder took it over",
            Ended::Deleted => "the lock object was deleted",
            Ended::Expired => "its lease ran out before a renewal got through",
            Ended::Stopped | Ended::Released => "its driver stopped (the lease runs out)",
        }
    }

    /// How the library's `loss` ended the hold.
    pub(crate) fn of(loss: Loss) -> Ended {
        match loss {
            Loss::Lost(sets3lock::proto::LostReason::Deleted) => Ended::Deleted,
            Loss::Lost(_) => Ended::TakenOver,
            Loss::Expired => Ended::Expired,
            _ => Ended::Stopped,
        }
    }
}

/// The loss of the hold in `cell` (gone: dropped, so released) that `watch` watches, if any;
/// `Released` once released here.
pub(crate) fn loss_of(cell: Option<&Cell>, watch: &LossWatch) -> Option<Ended> {
    if cell.is_none_or(|c| c.slot().is_none()) {
        return Some(Ended::Released);
    }
    watch.loss().map(Ended::of)
}

/// The exception a `with` block is leaving by, from `__exit__`'s arguments (`None` if the
/// block ended normally).
pub(crate) fn leaving_by(exc: &Bound<'_, pyo3::types::PyTuple>) -> Option<Py<PyAny>> {
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
pub(crate) fn exit_outcome(
    url: &str,
    outcome: Result<ReleaseOutcome, LockError>,
    by: Option<Py<PyAny>>,
) -> PyResult<()> {
    let error = match outcome {
        Ok(ReleaseOutcome::TakenOver) => lost(url, Ended::TakenOver),
        Ok(ReleaseOutcome::AlreadyGone) => lost(url, Ended::Deleted),
        Ok(_) => return Ok(()),
        Err(e) => to_py(e),
    };
    Err(chained(error, by))
}

/// Whether a release's outcome leaves a `with` block quietly (no Python object to make).
pub(crate) fn quiet(outcome: &Result<ReleaseOutcome, LockError>) -> bool {
    matches!(outcome, Ok(ReleaseOutcome::Deleted | ReleaseOutcome::Freed))
}

/// The name Python sees for what a release found.
pub(crate) fn outcome_name(outcome: ReleaseOutcome) -> &'static str {
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

/// `LockLost` for the lock at `url`, ended as `ended` says.
fn lost(url: &str, ended: Ended) -> PyErr {
    Python::attach(|py| {
        let made = py
            .import("sets3lock._errors")
            .and_then(|m| m.getattr("LockLost"))
            .and_then(|c| {
                c.call1((
                    format!("the lock {url} was lost: {}", ended.how()),
                    ended.name(),
                ))
            });
        match made {
            Ok(e) => PyErr::from_value(e),
            Err(e) => e,
        }
    })
}

/// Releases `held`: what the release found.
pub(crate) async fn release(held: RustHeld) -> Result<ReleaseOutcome, LockError> {
    held.release().await
}
