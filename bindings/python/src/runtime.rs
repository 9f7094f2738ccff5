//! The one tokio runtime each process drives its locks on, and the two ways Python waits on
//! it: blocking (the GIL released, signals checked) and asyncio (a future on the event loop).
//!
//! After `os.fork()` the child has none of the parent's threads, so its runtime is dead: the
//! first use in a child builds a new one (the old one is leaked, never dropped: dropping it
//! would wait for threads that do not exist there).

use crate::errors::to_py;
use crate::process::{closing, exiting};
use pyo3::prelude::*;
use sets3lock::Error as LockError;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;
use tokio::runtime::{Handle, Runtime};
use tokio::task::AbortHandle;

/// How often a blocking wait wakes to let Python handle signals (Ctrl-C).
const SIGNAL_CHECK: Duration = Duration::from_millis(20);

/// Where this process's runtime stands.
enum State {
    /// Not built yet (or built by the parent of this forked process).
    Unbuilt,
    /// Running in process `pid`; `baseline` drivers were counted when it was built (in a
    /// forked child: the parent's, which never finish here).
    Running {
        pid: u32,
        runtime: Runtime,
        baseline: usize,
    },
    /// Shut down at interpreter exit in process `pid`: nothing of ours may call into Python
    /// once the interpreter finalizes.
    Closed { pid: u32 },
}

static RUNTIME: Mutex<State> = Mutex::new(State::Unbuilt);

/// Tasks of ours that may hold an acquisition (blocking waits, asyncio awaitables): aborted
/// at interpreter exit, so that their drivers clean up before the runtime stops. The list
/// is pruned of finished tasks whenever it has doubled since the last pruning.
static TASKS: Mutex<Tasks> = Mutex::new(Tasks {
    list: Vec::new(),
    prune_at: 64,
});

/// The tracked tasks.
struct Tasks {
    list: Vec<AbortHandle>,
    prune_at: usize,
}

/// Why there is no runtime.
enum NoRuntime {
    /// The interpreter is exiting (or has shut sets3lock down).
    Exiting,
    /// The threads could not be started.
    Start(std::io::Error),
}

/// The runtime of this process, built on first use (and again in a forked child, whose
/// copy of the parent's is dead: that one is leaked, never dropped, as dropping it would wait
/// for threads the child does not have). Takes no GIL.
fn handle() -> Result<Handle, NoRuntime> {
    let pid = std::process::id();
    let mut state = RUNTIME.lock().unwrap_or_else(|e| e.into_inner());
    match &*state {
        State::Running {
            pid: p, runtime, ..
        } if *p == pid => return Ok(runtime.handle().clone()),
        State::Closed { pid: p } if *p == pid => return Err(NoRuntime::Exiting),
        _ => {}
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("sets3lock")
        .enable_all()
        .build()
        .map_err(NoRuntime::Start)?;
    let handle = runtime.handle().clone();
    let running = State::Running {
        pid,
        runtime,
        baseline: sets3lock::drivers_running(),
    };
    if let State::Running {
        runtime: parents, ..
    } = std::mem::replace(&mut *state, running)
    {
        std::mem::forget(parents);
        // A forked child: the parent's tasks are not ours to abort.
        let mut tasks = TASKS.lock().unwrap_or_else(|e| e.into_inner());
        std::mem::forget(std::mem::take(&mut tasks.list));
    }
    Ok(handle)
}

/// The runtime of this process, or the exception saying why not.
pub(crate) fn runtime() -> PyResult<Handle> {
    handle().map_err(|why| match why {
        NoRuntime::Exiting => exiting(),
        NoRuntime::Start(e) => {
            crate::errors::Error::new_err(format!("cannot start the lock's threads: {e}"))
        }
    })
}

/// Notes a task that may hold an acquisition, to abort it at exit; once the exit has begun,
/// aborts it at once (checked under the same lock the exit sets its flag under).
fn track(task: AbortHandle) {
    let mut tasks = TASKS.lock().unwrap_or_else(|e| e.into_inner());
    if closing() {
        task.abort();
        return;
    }
    if tasks.list.len() >= tasks.prune_at {
        tasks.list.retain(|t| !t.is_finished());
        tasks.prune_at = (tasks.list.len() * 2).max(64);
    }
    tasks.list.push(task);
}

/// Runs `work` on the runtime and blocks this thread until it is done, with the GIL
/// released; every [`SIGNAL_CHECK`] it takes the GIL back to run Python's signal handlers.
/// If one raises (Ctrl-C: `KeyboardInterrupt`), `work` is dropped and the exception raised at
/// once: an acquisition's driver then cleans up a write of ours that landed, in the
/// background, and the interpreter's exit waits for it.
pub(crate) fn wait<T>(py: Python<'_>, work: impl Future<Output = T> + Send + 'static) -> PyResult<T>
where
    T: Send + 'static,
{
    let runtime = runtime()?;
    if closing() {
        return Err(exiting());
    }
    let mut task = runtime.spawn(work);
    track(task.abort_handle());
    loop {
        let polled = py.detach(|| {
            runtime.block_on(async { tokio::time::timeout(SIGNAL_CHECK, &mut task).await })
        });
        match polled {
            Ok(Ok(done)) => return Ok(done),
            Ok(Err(e)) if e.is_cancelled() => return Err(exiting()),
            Ok(Err(e)) => {
                return Err(crate::errors::Error::new_err(format!(
                    "the lock's task failed: {e}"
                )))
            }
            Err(_elapsed) => {
                if let Err(interrupted) = py.check_signals() {
                    task.abort();
                    return Err(interrupted);
                }
            }
        }
    }
}

/// Shuts this process's runtime down (at interpreter exit, after the releases): its tasks are
/// dropped and its threads stopped, waiting at most `timeout` with the GIL released, so that
/// none of them calls into Python while the interpreter finalizes.
fn close(py: Python<'_>, timeout: Duration) {
    let pid = std::process::id();
    let mut state = RUNTIME.lock().unwrap_or_else(|e| e.into_inner());
    let closing = std::mem::replace(&mut *state, State::Closed { pid });
    drop(state);
    match closing {
        State::Running {
            pid: p, runtime, ..
        } if p == pid => {
            py.detach(|| runtime.shutdown_timeout(timeout));
        }
        State::Running { runtime, .. } => std::mem::forget(runtime),
        _ => {}
    }
}

/// At interpreter exit: gives up the acquisitions under way, releases every lock still held
/// in this process (again as long as new holds arrive), and waits until none of this process's
/// lock drivers is left running (those releases, the cleanups of writes that landed) for at
/// most `timeout` seconds; then shuts the runtime down. Whether the drivers all finished.
#[pyfunction]
pub(crate) fn shutdown(py: Python<'_>, timeout: f64) -> bool {
    {
        let _tasks = TASKS.lock().unwrap_or_else(|e| e.into_inner());
        crate::process::begin_closing();
    }
    let baseline = match &*RUNTIME.lock().unwrap_or_else(|e| e.into_inner()) {
        State::Running { pid, baseline, .. } if *pid == std::process::id() => Some(*baseline),
        _ => None,
    };
    let Some(baseline) = baseline else {
        // No runtime in this process: none of its drivers can be ours.
        close(py, Duration::ZERO);
        return true;
    };
    // NaN waits not at all; anything above an hour (infinity too) waits an hour.
    let timeout = if timeout.is_nan() {
        0.0
    } else {
        timeout.clamp(0.0, 3600.0)
    };
    let deadline = std::time::Instant::now() + Duration::from_secs_f64(timeout);
    // Settled when two looks 5 ms apart find no driver of ours: a task spawned just before
    // the flag was set has had its driver started (and its abort seen) by the second.
    let mut quiet_looks = 0;
    let settled = py.detach(|| loop {
        for task in TASKS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .list
            .drain(..)
        {
            task.abort();
        }
        crate::hold::release_all();
        if sets3lock::drivers_running() <= baseline {
            quiet_looks += 1;
            if quiet_looks == 2 {
                return true;
            }
        } else {
            quiet_looks = 0;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    });
    close(py, Duration::from_secs(2));
    settled
}

/// The asyncio bridge: futures spawned on this process's runtime.
pub(crate) struct Asyncio;

/// A join error of the asyncio bridge's tasks.
pub(crate) struct JoinFailed(tokio::task::JoinError);

impl pyo3_async_runtimes::generic::JoinError for JoinFailed {
    fn is_panic(&self) -> bool {
        self.0.is_panic()
    }
    fn into_panic(self) -> Box<dyn std::any::Any + Send + 'static> {
        self.0.into_panic()
    }
}

/// A spawned task of the asyncio bridge.
pub(crate) struct Joined(tokio::task::JoinHandle<()>);

impl Future for Joined {
    type Output = Result<(), JoinFailed>;
    fn poll(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        Pin::new(&mut self.0)
            .poll(cx)
            .map(|r| r.map_err(JoinFailed))
    }
}

/// The runtime for the bridge (taking no GIL: pyo3-async-runtimes spawns from the runtime's
/// threads too). Every async entry point calls [`runtime`] first, so it is there; once shut
/// down (interpreter exit), a task spawned is never polled.
fn bridge_runtime() -> Handle {
    static CLOSED: OnceLock<Option<Runtime>> = OnceLock::new();
    match handle() {
        Ok(h) => h,
        Err(_) => match CLOSED
            .get_or_init(|| tokio::runtime::Builder::new_current_thread().build().ok())
        {
            Some(closed) => closed.handle().clone(),
            // Without its I/O and time drivers a current-thread runtime starts no thread and
            // opens nothing: it does not fail.
            None => std::process::abort(),
        },
    }
}

impl pyo3_async_runtimes::generic::Runtime for Asyncio {
    type JoinError = JoinFailed;
    type JoinHandle = Joined;

    fn spawn<F>(fut: F) -> Self::JoinHandle
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let task = bridge_runtime().spawn(fut);
        track(task.abort_handle());
        Joined(task)
    }

    fn spawn_blocking<F>(f: F) -> Self::JoinHandle
    where
        F: FnOnce() + Send + 'static,
    {
        Joined(bridge_runtime().spawn_blocking(f))
    }
}

tokio::task_local! {
    static LOCALS: std::cell::OnceCell<pyo3_async_runtimes::TaskLocals>;
}

impl pyo3_async_runtimes::generic::ContextExt for Asyncio {
    fn scope<F, R>(
        locals: pyo3_async_runtimes::TaskLocals,
        fut: F,
    ) -> Pin<Box<dyn Future<Output = R> + Send>>
    where
        F: Future<Output = R> + Send + 'static,
    {
        let cell = std::cell::OnceCell::new();
        let _ = cell.set(locals);
        Box::pin(LOCALS.scope(cell, fut))
    }

    fn get_task_locals() -> Option<pyo3_async_runtimes::TaskLocals> {
        LOCALS.try_with(|c| c.get().cloned()).unwrap_or_default()
    }
}

/// `fut` as an asyncio awaitable on the running event loop; cancelling it drops `fut`.
pub(crate) fn awaitable<'py, F, T>(py: Python<'py>, fut: F) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = PyResult<T>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    runtime()?;
    if closing() {
        return Err(exiting());
    }
    pyo3_async_runtimes::generic::future_into_py::<Asyncio, F, T>(py, fut)
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
        Err(_) => exiting(),
    }
}
