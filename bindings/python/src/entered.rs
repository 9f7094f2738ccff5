//! The holds a `with` (or `async with`) on a lock object entered and has not left yet: per
//! thread for the blocking classes, per asyncio task for the async ones, so one lock object
//! can be entered by several threads or tasks at once.

use pyo3::prelude::*;
use pyo3::types::PyTuple;
use std::sync::Mutex;

use crate::async_held::AsyncHeld;
use crate::held::Held;

/// Who entered a hold.
#[derive(Debug)]
enum Who {
    /// An asyncio task (kept, so that its identity is not reused while the entry lives).
    Task(Py<PyAny>),
    /// A thread, by `threading.get_ident()`.
    Thread(u64),
}

impl Who {
    /// The caller: its asyncio task in async code, its thread otherwise.
    fn caller(py: Python<'_>, in_task: bool) -> PyResult<Who> {
        if in_task {
            let task = py.import("asyncio")?.call_method0("current_task")?;
            if !task.is_none() {
                return Ok(Who::Task(task.unbind()));
            }
        }
        Ok(Who::Thread(
            py.import("threading")?
                .call_method0("get_ident")?
                .extract()?,
        ))
    }

    fn is(&self, other: &Who) -> bool {
        match (self, other) {
            (Who::Task(a), Who::Task(b)) => a.is(b),
            (Who::Thread(a), Who::Thread(b)) => a == b,
            _ => false,
        }
    }

    /// Whether the task is done (or the thread gone): it can no longer leave its block.
    fn gone(&self, py: Python<'_>) -> PyResult<bool> {
        match self {
            Who::Task(task) => task.bind(py).call_method0("done")?.is_truthy(),
            Who::Thread(ident) => {
                let threads = py.import("threading")?.call_method0("enumerate")?;
                for thread in threads.try_iter()? {
                    if thread?.getattr("ident")?.extract::<Option<u64>>()? == Some(*ident) {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
        }
    }
}

/// One entered hold: who entered it and when (an order number).
#[derive(Debug)]
struct Entry {
    who: Who,
    order: u64,
    held: Py<PyAny>,
}

/// Entered holds, in the order they were entered.
#[derive(Debug, Default)]
pub(crate) struct Entered(Mutex<(u64, Vec<Entry>)>);

impl Entered {
    /// Notes that the caller entered `held`.
    pub(crate) fn push(&self, py: Python<'_>, in_task: bool, held: Py<PyAny>) -> PyResult<()> {
        let who = Who::caller(py, in_task)?;
        let mut entered = self.0.lock().unwrap_or_else(|e| e.into_inner());
        entered.0 += 1;
        let order = entered.0;
        entered.1.push(Entry { who, order, held });
        Ok(())
    }

    /// The hold the caller entered last, now left. A caller that entered none (a block
    /// entered in one task and left in another: async generators, fixtures) leaves the one
    /// hold entered, or the last one entered by a task that is done (or a thread that is
    /// gone): never a hold that a living task or thread may still be using.
    pub(crate) fn pop(&self, py: Python<'_>, in_task: bool) -> PyResult<Py<PyAny>> {
        let caller = Who::caller(py, in_task)?;
        let mut entered = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let list = &mut entered.1;
        let latest = |keep: &dyn Fn(&Entry) -> bool| {
            list.iter()
                .enumerate()
                .filter(|(_, e)| keep(e))
                .max_by_key(|(_, e)| e.order)
                .map(|(i, _)| i)
        };
        let mine = latest(&|e: &Entry| e.who.is(&caller));
        let chosen = match mine {
            Some(i) => Some(i),
            None if list.len() == 1 => Some(0),
            None => {
                let mut gone = Vec::with_capacity(list.len());
                for e in list.iter() {
                    gone.push(e.who.gone(py)?);
                }
                list.iter()
                    .enumerate()
                    .filter(|(i, _)| gone[*i])
                    .max_by_key(|(_, e)| e.order)
                    .map(|(i, _)| i)
            }
        };
        match chosen {
            Some(i) => Ok(list.remove(i).held),
            None => Err(crate::errors::Error::new_err(
                "__exit__ from a thread or task that entered nothing, while others hold this lock object: leave each block where it was entered".into(),
            )),
        }
    }
}

impl Entered {
    /// `__enter__` of a blocking lock object: notes `held` (just acquired) as this thread's.
    pub(crate) fn enter(&self, py: Python<'_>, held: Held) -> PyResult<Py<Held>> {
        let held = Py::new(py, held)?;
        self.push(py, false, held.clone_ref(py).into_any())?;
        Ok(held)
    }

    /// `__exit__` of a blocking lock object: leaves this thread's hold as `Held.__exit__`
    /// does, with the block's exception `exc`.
    pub(crate) fn exit(&self, py: Python<'_>, exc: &Bound<'_, PyTuple>) -> PyResult<()> {
        let held = self.pop(py, false)?;
        held.bind(py).call_method1("__exit__", exc)?;
        Ok(())
    }

    /// `__aexit__` of an async lock object: leaves this task's hold as `AsyncHeld.__aexit__`
    /// does.
    pub(crate) fn aexit<'py>(
        &self,
        py: Python<'py>,
        exc: &Bound<'py, PyTuple>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let held = self.pop(py, true)?;
        let held = held.bind(py).cast::<AsyncHeld>()?.clone();
        held.get().exit(py, exc)
    }
}

/// `__aenter__` of an async lock object: the package's coroutine `_enter.enter(lock)`, which
/// awaits `lock.acquire()` and notes the hold (`lock._entered`) in the task itself, so an entry
/// cancelled before delivery notes nothing.
pub(crate) fn aenter<'py>(lock: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    lock.py()
        .import("sets3lock._enter")?
        .getattr("enter")?
        .call1((lock,))
}
