//! The holds a `with` (or `async with`) on a lock object entered and has not left yet: per
//! thread for the blocking classes, per asyncio task for the async ones, so one lock object
//! can be entered by several threads or tasks at once.

use pyo3::prelude::*;
use std::sync::Mutex;

/// One entered hold: who entered it (a thread's or a task's id) and when (an order number).
#[derive(Debug)]
struct Entry {
    who: u64,
    order: u64,
    held: Py<PyAny>,
}

/// Entered holds, in the order they were entered.
#[derive(Debug, Default)]
pub(crate) struct Entered(Mutex<(u64, Vec<Entry>)>);

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
        let who = whose(py, in_task)?;
        let mut entered = self.0.lock().unwrap_or_else(|e| e.into_inner());
        entered.0 += 1;
        let order = entered.0;
        entered.1.push(Entry { who, order, held });
        Ok(())
    }

    /// The hold the caller entered last, now left. A caller that entered none (a block
    /// entered in one task and left in another: async generators, fixtures) leaves the hold
    /// entered last by anyone, so that no hold is left entered for ever.
    pub(crate) fn pop(&self, py: Python<'_>, in_task: bool) -> PyResult<Py<PyAny>> {
        let who = whose(py, in_task)?;
        let mut entered = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let list = &mut entered.1;
        let mine = list
            .iter()
            .enumerate()
            .filter(|(_, e)| e.who == who)
            .max_by_key(|(_, e)| e.order)
            .map(|(i, _)| i);
        let last = list
            .iter()
            .enumerate()
            .max_by_key(|(_, e)| e.order)
            .map(|(i, _)| i);
        match mine.or(last) {
            Some(i) => Ok(list.remove(i).held),
            None => Err(crate::errors::Error::new_err(
                "__exit__ without __enter__: this lock object holds nothing entered by `with`"
                    .into(),
            )),
        }
    }
}
