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

/// One exception class per [`ErrorKind`](sets3lock::ErrorKind), with the details the class
/// carries (the holder of a busy lock, how a hold was lost).
fn to_py_in(py: Python<'_>, error: LockError, message: String) -> PyErr {
    use sets3lock::ErrorKind;
    match (error.kind(), error) {
        (ErrorKind::InvalidInput, _) => PyValueError::new_err(message),
        (
            ErrorKind::Busy,
            LockError::Busy { holder, etag } | LockError::HoldInUse { holder, etag },
        ) => {
            let holder = Holder::from_record(&holder, Some(etag.as_str()));
            raise(py, "Busy", (message, holder, etag.as_str().to_owned()))
        }
        (ErrorKind::Busy, _) => raise(py, "Busy", (message, py.None(), py.None())),
        (ErrorKind::TimedOut, LockError::TimedOut { holder }) => {
            let holder = holder.map(|h| Holder::from_record(&h, None));
            raise(py, "Timeout", (message, holder))
        }
        (ErrorKind::TimedOut, _) => raise(py, "Timeout", (message, py.None())),
        (ErrorKind::Lost, error) => raise(py, "LockLost", (message, lost_how(&error))),
        (ErrorKind::Refused, _) => raise(py, "StoreRefused", (message,)),
        (ErrorKind::MissingBucket, _) => raise(py, "NoSuchBucket", (message,)),
        (ErrorKind::AccessDenied, _) => raise(py, "AccessDenied", (message,)),
        (ErrorKind::Unreachable, _) => raise(py, "Unreachable", (message,)),
        _ => raise(py, "Error", (message,)),
    }
}

/// `LockLost.reason` for an error of the kind `Lost`.
fn lost_how(error: &LockError) -> &'static str {
    use sets3lock::{HoldEnded, LostReason};
    match error {
        LockError::AlreadyLost(reason) if matches!(**reason, LostReason::Deleted) => "deleted",
        LockError::HoldEnded(ended)
            if matches!(**ended, HoldEnded::Gone | HoldEnded::Released { .. }) =>
        {
            "deleted"
        }
        LockError::HoldEnded(ended) if matches!(**ended, HoldEnded::Expired { .. }) => "expired",
        LockError::AlreadyExpired => "expired",
        LockError::DriverGone => "stopped",
        _ => "taken_over",
    }
}

/// A `TypeError` saying what `name` takes.
pub(crate) fn wrong_type(name: &str, takes: &str) -> PyErr {
    PyTypeError::new_err(format!("{name} takes {takes}"))
}
