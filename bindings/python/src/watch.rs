//! `watch()` and `watch_async()`: a lock's holder now, then one event per change, without
//! taking part in the lock.

use pyo3::exceptions::{PyStopAsyncIteration, PyStopIteration};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use sets3lock::Watcher;
use sets3lock::{WatchConfig, WatchEvent as RustEvent};
use std::sync::Arc;
use tokio::sync::Mutex;

use crate::errors::to_py;
use crate::holder::WatchEvent;
use crate::process::Origin;
use crate::runtime;
use crate::runtime::in_python;
use crate::settings::{lock_url, Settings, STORE};

/// The watch's own settings.
const CADENCE: &[&str] = &["interval", "foreign_lease"];

/// A watcher, and the latest sighting it made (readable while a wait for the next is on).
struct Watching {
    watcher: Mutex<Watcher>,
    latest: std::sync::Mutex<Option<WatchEvent>>,
}

impl Watching {
    fn new(watcher: Watcher) -> Arc<Watching> {
        Arc::new(Watching {
            watcher: Mutex::new(watcher),
            latest: std::sync::Mutex::new(None),
        })
    }

    fn latest(&self) -> Option<WatchEvent> {
        self.latest
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// The next event of `watching`: `None` once it has ended; a permanent refusal (no bucket,
/// access denied) as the library's error. Takes no GIL.
async fn next(watching: Arc<Watching>) -> Result<Option<WatchEvent>, sets3lock::Error> {
    let mut watcher = watching.watcher.lock().await;
    Ok(match watcher.next().await {
        None => None,
        Some(RustEvent::Changed(sighting)) => {
            let event = WatchEvent::sighting(&sighting);
            *watching.latest.lock().unwrap_or_else(|e| e.into_inner()) = Some(event.clone());
            Some(event)
        }
        Some(RustEvent::Unreachable { setback }) => {
            Some(WatchEvent::reach(Some(setback.to_string())))
        }
        Some(RustEvent::Reachable) => Some(WatchEvent::reach(None)),
        Some(RustEvent::Failed { error }) => return Err(sets3lock::Error::Store(error)),
        Some(_) => None,
    })
}

/// The cadence from `interval` and `foreign_lease`.
pub(crate) fn cadence(settings: &Settings<'_>) -> PyResult<WatchConfig> {
    let mut cfg = WatchConfig::default();
    if let Some(interval) = settings.duration("interval")? {
        if interval.is_zero() {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "interval must be more than 0 (a read every interval)",
            ));
        }
        cfg.interval = interval;
    }
    cfg.foreign_lease = settings.duration("foreign_lease")?;
    Ok(cfg)
}

fn open(what: &str, url: &str, options: Option<&Bound<'_, PyDict>>) -> PyResult<Arc<Watching>> {
    let settings = Settings::read(what, options, &[STORE, CADENCE])?;
    let parsed = lock_url(url)?;
    let store = settings.store(parsed.scheme())?;
    let cfg = cadence(&settings)?;
    let handle = runtime::runtime()?;
    let _in_runtime = handle.enter();
    let watcher = Watcher::new(url, store, cfg).map_err(to_py)?;
    Ok(Watching::new(watcher))
}

/// Watches `url`: iterate for the holder now, then one event per change (a read every
/// `interval`, 2 s by default). Ends only with an error the store keeps giving (no bucket,
/// access denied); trouble reaching the store is an "unreachable" event.
#[pyfunction]
#[pyo3(signature = (url, **options))]
pub(crate) fn watch(url: &str, options: Option<&Bound<'_, PyDict>>) -> PyResult<Watch> {
    Ok(Watch {
        watcher: open("watch", url, options)?,
        origin: Origin::here(),
    })
}

/// Watches `url` from asyncio: `async for event in watch_async(url):`.
#[pyfunction]
#[pyo3(signature = (url, **options))]
pub(crate) fn watch_async(url: &str, options: Option<&Bound<'_, PyDict>>) -> PyResult<AsyncWatch> {
    Ok(AsyncWatch {
        watcher: open("watch_async", url, options)?,
        origin: Origin::here(),
    })
}

/// The events of a watched lock (an iterator; each step blocks until the next change).
#[pyclass(frozen, module = "sets3lock")]
pub(crate) struct Watch {
    watcher: Arc<Watching>,
    origin: Origin,
}

impl Watch {
    /// The events of `watcher`.
    pub(crate) fn of(watcher: Watcher) -> Watch {
        Watch {
            watcher: Watching::new(watcher),
            origin: Origin::here(),
        }
    }
}

#[pymethods]
impl Watch {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<WatchEvent> {
        self.origin.check("the watch", "")?;
        let watcher = self.watcher.clone();
        runtime::wait(py, next(watcher))?
            .map_err(to_py)?
            .ok_or_else(|| PyStopIteration::new_err(()))
    }

    /// The latest sighting, without a request (`None` before the first).
    fn current(&self) -> Option<WatchEvent> {
        self.watcher.latest()
    }
}

/// The events of a watched lock, for asyncio (an async iterator).
#[pyclass(frozen, module = "sets3lock")]
pub(crate) struct AsyncWatch {
    watcher: Arc<Watching>,
    origin: Origin,
}

impl AsyncWatch {
    /// The events of `watcher`.
    pub(crate) fn of(watcher: Watcher) -> AsyncWatch {
        AsyncWatch {
            watcher: Watching::new(watcher),
            origin: Origin::here(),
        }
    }
}

#[pymethods]
impl AsyncWatch {
    fn __aiter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __anext__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.origin.check("the watch", "")?;
        let watcher = self.watcher.clone();
        runtime::awaitable(py, async move {
            in_python(next(watcher).await)
                .await?
                .ok_or_else(|| PyStopAsyncIteration::new_err(()))
        })
    }
}
