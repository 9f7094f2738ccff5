//! The holds a `with` (or `async with`) on a lock object entered and has not left yet: per
//! thread for the blocking classes, per asyncio task for the async ones, so one lock object
//! can be entered by several threads or tasks at once.

use pyo3::prelude::*;
use std::collections::HashMap;
use std::sync::Mutex;

/// Entered holds by who entered them (a thread's or a task's id), innermost last.
#[derive(Debug, Default)]
pub(crate) struct Entered(Mutex<HashMap<u64, Vec<Py<PyAny>>>>);

/// The running asyncio task's id (the thread's outside one), read where `__aenter__` is
/// called, for a hold entered later, when the acquisition is done.
pub(crate) fn task_id(py: Python<'_>) -> PyResult<u64> {
    whose(py, true)
}

/// The caller's id: its asyncio task's in async code, its thread's otherwise.
fn whose(py: Python<'_>, in_task: bool) -> PyResult<u64> {
    if in_task {
        let task = py.import("asyncio")?.call_method0("current_task")?;
        if !task.is_none() {
            return Ok(task.as_ptr() as usize as u64);
        }
    }
    py.import("threading")?.call_method0("get_ident")?.extract()
}

impl Entered {
    /// Notes that the caller entered `held`.
    pub(crate) fn push(&self, py: Python<'_>, in_task: bool, held: Py<PyAny>) -> PyResult<()> {
        self.push_for(whose(py, in_task)?, held);
        Ok(())
    }

    /// Notes that the task (or thread) `who` entered `held`.
    pub(crate) fn push_for(&self, who: u64, held: Py<PyAny>) {
        let mut entered = self.0.lock().unwrap_or_else(|e| e.into_inner());
        entered.entry(who).or_default().push(held);
    }

    /// The hold the caller entered last, now left.
    pub(crate) fn pop(&self, py: Python<'_>, in_task: bool) -> PyResult<Py<PyAny>> {
        let who = whose(py, in_task)?;
        let mut entered = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let held = entered.get_mut(&who).and_then(Vec::pop);
        if entered.get(&who).is_some_and(Vec::is_empty) {
            entered.remove(&who);
        }
        held.ok_or_else(|| {
            crate::errors::Error::new_err(
                "__exit__ without __enter__ in this thread or task: use the lock object with `with`".into(),
            )
        })
    }
}
