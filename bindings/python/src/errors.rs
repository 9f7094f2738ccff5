//! The library's errors as Python exceptions (the classes live in `sets3lock._errors`).

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use sets3lock::Error as LockError;

use crate::holder::Holder;

/// `sets3lock.Error` with a message, for this module's own failures.
pub(crate) struct Error;

impl Error {
    /// A `sets3lock.Error(message)`.
    pub(crate) fn new_err(message: String) -> PyErr {
        Python::attach(|py| raise(py, "Error", (message,)))
    }
}

/// An instance of the exception class `name` of `sets3lock._errors`, made with `args`.
fn raise<'py, A>(py: Python<'py>, name: &str, args: A) -> PyErr
where
    A: pyo3::call::PyCallArgs<'py>,
{
    let made = py
        .import("sets3lock._errors")
        .and_then(|m| m.getattr(name))
        .and_then(|class| class.call1(args));
    match made {
        Ok(exception) => PyErr::from_value(exception),
        Err(e) => e,
    }
}

/// The exception for `error`: `ValueError` for what the caller wrote wrong, one of
/// `sets3lock._errors`' classes otherwise; the message is the library's one line.
pub(crate) fn to_py(error: LockError) -> PyErr {
    let message = error.to_string();
    Python::attach(|py| to_py_in(py, error, message))
}

/// The exception for `error`, saying `message` instead of the library's line.
pub(crate) fn to_py_said(error: LockError, message: String) -> PyErr {
    Python::attach(|py| to_py_in(py, error, message))
}

/// `result`, its error made a Python exception on a blocking thread: the runtime's two
/// workers (which renew every lock) never wait for the GIL.
pub(crate) async fn in_python<T>(result: Result<T, LockError>) -> PyResult<T> {
    match result {
        Ok(value) => Ok(value),
        Err(error) => Err(made_in_python(move || to_py(error)).await),
    }
}

/// The exception `make` makes (with the GIL), made on a blocking thread of the runtime.
pub(crate) async fn made_in_python(make: impl FnOnce() -> PyErr + Send + 'static) -> PyErr {
    match tokio::task::spawn_blocking(make).await {
        Ok(e) => e,
        Err(_) => crate::runtime::exiting(),
    }
}

fn to_py_in(py: Python<'_>, error: LockError, message: String) -> PyErr {
    match error {
        LockError::Url(_)
        | LockError::Config(_)
        | LockError::InvalidEndpoint { .. }
        | LockError::Profile { .. }
        | LockError::Slots { .. } => PyValueError::new_err(message),
        LockError::Busy { holder, etag } => {
            let holder = Holder::from_record(&holder, Some(etag.as_str()));
            raise(py, "Busy", (message, holder, etag.as_str().to_owned()))
        }
        LockError::AllSlotsBusy { .. } => raise(py, "Busy", (message, py.None(), py.None())),
        LockError::TimedOut { holder } => {
            let holder = holder.map(|h| Holder::from_record(&h, None));
            raise(py, "Timeout", (message, holder))
        }
        LockError::AlreadyLost(reason) => {
            let why = match *reason {
                sets3lock::proto::LostReason::Deleted => "deleted",
                _ => "taken_over",
            };
            raise(py, "LockLost", (message, why))
        }
        LockError::AlreadyExpired => raise(py, "LockLost", (message, "expired")),
        LockError::DriverGone => raise(py, "LockLost", (message, "stopped")),
        LockError::StoreIgnoresConditions { .. }
        | LockError::ConditionalDeleteUnsafe { .. }
        | LockError::GcsIgnoresConditions => raise(py, "StoreRefused", (message,)),
        LockError::S3(core) => core_error(py, core, message),
        _ => raise(py, "Error", (message,)),
    }
}

fn core_error(py: Python<'_>, error: sets3lock::proto::Error, message: String) -> PyErr {
    match error {
        sets3lock::proto::Error::NoSuchBucket { .. }
        | sets3lock::proto::Error::MissingContainer { .. } => raise(py, "NoSuchBucket", (message,)),
        sets3lock::proto::Error::Refused {
            status: 401 | 403, ..
        } => raise(py, "AccessDenied", (message,)),
        sets3lock::proto::Error::GaveUp { .. } => raise(py, "Unreachable", (message,)),
        _ => raise(py, "Error", (message,)),
    }
}

/// A `TypeError` saying what `name` takes.
pub(crate) fn wrong_type(name: &str, takes: &str) -> PyErr {
    PyTypeError::new_err(format!("{name} takes {takes}"))
}
