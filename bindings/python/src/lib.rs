//! The native module of the `sets3lock` Python package: the Rust drivers (`sets3lock`,
//! tokio) and the command (`sets3lock-cli`) as Python classes and functions. Nothing here
//! speaks to a store itself; the Python package (`python/sets3lock`) re-exports it.

#![forbid(unsafe_code)]

mod async_held;
mod client;
mod election;
mod entered;
mod errors;
mod held;
mod hold;
mod hold_face;
mod holder;
mod lock;
mod locks;
mod process;
mod runtime;
mod semaphore;
mod settings;
mod watch;

use pyo3::prelude::*;

/// The module `sets3lock._native`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<holder::Holder>()?;
    m.add_class::<holder::WatchEvent>()?;
    m.add_class::<held::Held>()?;
    m.add_class::<async_held::AsyncHeld>()?;
    m.add_class::<lock::Lock>()?;
    m.add_class::<lock::AsyncLock>()?;
    m.add_class::<locks::Locks>()?;
    m.add_class::<locks::AsyncLocks>()?;
    m.add_class::<semaphore::Semaphore>()?;
    m.add_class::<semaphore::AsyncSemaphore>()?;
    m.add_class::<election::Election>()?;
    m.add_class::<election::AsyncElection>()?;
    m.add_class::<watch::Watch>()?;
    m.add_class::<watch::AsyncWatch>()?;
    m.add_function(wrap_pyfunction!(watch::watch, m)?)?;
    m.add_function(wrap_pyfunction!(watch::watch_async, m)?)?;
    m.add_function(wrap_pyfunction!(client::status, m)?)?;
    m.add_function(wrap_pyfunction!(client::status_async, m)?)?;
    m.add_function(wrap_pyfunction!(client::unlock, m)?)?;
    m.add_function(wrap_pyfunction!(client::unlock_async, m)?)?;
    m.add_function(wrap_pyfunction!(client::run_command, m)?)?;
    m.add_function(wrap_pyfunction!(runtime::shutdown, m)?)?;
    Ok(())
}
