//! One-shot operator calls (`status`, `unlock`) and the command itself.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use sets3lock::proto::{ETag, LockUrl};
use sets3lock::{Client, Options, Unlocked};

use crate::errors::{to_py, to_py_said, Error};
use crate::holder::Holder;
use crate::runtime;
use crate::settings::{lock_url, Settings, STORE};

/// The lock and the store options of a one-shot call.
fn target(
    what: &str,
    url: &str,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<(LockUrl, Options)> {
    let settings = Settings::read(what, options, &[STORE])?;
    let parsed = lock_url(url)?;
    let store = settings.store(parsed.scheme())?;
    Ok((parsed, store))
}

/// Who holds the lock now (one read), on a blocking thread of the runtime.
fn read(url: LockUrl, options: Options) -> PyResult<Option<Holder>> {
    let client = Client::in_store(url.scheme(), url.bucket(), &options).map_err(to_py)?;
    let found = client.status(url.key()).map_err(to_py)?;
    // A freed fenced record is nobody's hold (its last token is in `watch`'s events).
    Ok(found
        .filter(|(_, holder)| !holder.is_free())
        .map(|(etag, holder)| Holder::from_record(&holder, Some(etag.as_str()))))
}

/// The force-unlock, on a blocking thread of the runtime.
/// Which version `unlock` removes: the one with this ETag, with this Terraform lock ID, or the
/// one there now once it has stayed unchanged for its lease.
enum Which {
    ETag(ETag),
    Id(String),
    Stale,
}

impl Which {
    fn given(etag: Option<String>, id: Option<String>, if_stale: bool) -> PyResult<Which> {
        match (etag, id, if_stale) {
            (Some(etag), None, false) => ETag::parse(&etag)
                .map(Which::ETag)
                .map_err(|e| PyValueError::new_err(e.to_string())),
            (None, Some(id), false) => Ok(Which::Id(id)),
            (None, None, true) => Ok(Which::Stale),
            _ => Err(PyValueError::new_err(
                "unlock takes the ETag status showed, id= Terraform's lock ID, or if_stale=True: one of them",
            )),
        }
    }
}

impl std::fmt::Display for Which {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Which::ETag(etag) => write!(f, "the version with ETag {}", etag.as_str()),
            Which::Id(id) => write!(f, "the lock with Terraform lock ID {id}"),
            Which::Stale => write!(f, "the version that stayed unchanged for its lease"),
        }
    }
}

fn force(url: LockUrl, options: Options, which: Which) -> PyResult<&'static str> {
    let client = Client::in_store(url.scheme(), url.bucket(), &options).map_err(to_py)?;
    let unlocked = match &which {
        Which::ETag(etag) => client.unlock(url.key(), etag),
        Which::Id(id) => client.unlock_id(url.key(), id),
        Which::Stale => client.unlock_if_stale(url.key(), |_| {}),
    };
    match unlocked {
        Ok(Unlocked::Deleted) => Ok("deleted"),
        Ok(Unlocked::Freed { .. }) => Ok("freed"),
        Ok(Unlocked::AlreadyFree) => Ok("already_free"),
        Ok(Unlocked::Changed {
            now: Some((current, holder)),
        }) => Err(Error::new_err(format!(
            "{url}: not deleted: the lock is now {holder} under ETag {}, not {which} (run status again)",
            current.as_str(),
        ))),
        Ok(other) => Err(Error::new_err(format!(
            "{url}: not deleted: the lock is no longer {which} ({other:?})"
        ))),
        Err(e) => {
            let line = format!("{url}: {e}");
            Err(to_py_said(e, line))
        }
    }
}

/// Runs `work` on a blocking thread of the runtime (the one-shot client blocks).
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> PyResult<T> + Send + 'static,
) -> PyResult<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| Error::new_err(format!("the request's thread failed: {e}")))?
}

/// Who holds the lock at `url` now (one read): a `Holder` (with its `etag`), or `None` if
/// nobody does (no lock object, or a fenced lock's `free` record).
#[pyfunction]
#[pyo3(signature = (url, **options))]
pub(crate) fn status(
    py: Python<'_>,
    url: &str,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Option<Holder>> {
    let (url, store) = target("status", url, options)?;
    runtime::wait(py, blocking(move || read(url, store)))?
}

/// `status` for asyncio.
#[pyfunction]
#[pyo3(signature = (url, **options))]
pub(crate) fn status_async<'py>(
    py: Python<'py>,
    url: &str,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let (url, store) = target("status_async", url, options)?;
    runtime::awaitable(py, blocking(move || read(url, store)))
}

/// Force-unlocks the lock at `url` only if its ETag is still `etag` (what `status` showed);
/// with `id=`, only if its Terraform lock ID is `id` (what `terraform force-unlock ID` means,
/// without its race); with `if_stale=True`, only once it has stayed unchanged for its lease
/// (waiting that long; a lock that declares no lease is refused): "deleted", "freed" (a fenced
/// lock: freed, never deleted, its token kept) or "already_free"; raises `sets3lock.Error` if
/// another holder has it now.
#[pyfunction]
#[pyo3(signature = (url, etag=None, *, id=None, if_stale=false, **options))]
pub(crate) fn unlock(
    py: Python<'_>,
    url: &str,
    etag: Option<String>,
    id: Option<String>,
    if_stale: bool,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<&'static str> {
    let which = Which::given(etag, id, if_stale)?;
    let (url, store) = target("unlock", url, options)?;
    runtime::wait(py, blocking(move || force(url, store, which)))?
}

/// `unlock` for asyncio.
#[pyfunction]
#[pyo3(signature = (url, etag=None, *, id=None, if_stale=false, **options))]
pub(crate) fn unlock_async<'py>(
    py: Python<'py>,
    url: &str,
    etag: Option<String>,
    id: Option<String>,
    if_stale: bool,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let which = Which::given(etag, id, if_stale)?;
    let (url, store) = target("unlock_async", url, options)?;
    runtime::awaitable(py, blocking(move || force(url, store, which)))
}

/// The `sets3lock` command with these arguments (the program's name first): its exit
/// status. The GIL is released while it runs; it handles the signals itself.
#[pyfunction]
pub(crate) fn run_command(py: Python<'_>, argv: Vec<std::ffi::OsString>) -> u8 {
    py.detach(|| sets3lock_cli::run(argv))
}
