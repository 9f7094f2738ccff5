//! The one tokio runtime each process drives its locks on, and the two ways Python waits on
//! it: blocking (the GIL released, signals checked) and asyncio (a future on the event loop).
//!
//! After `os.fork()` the child has none of the parent's threads, so its runtime is dead: the
//! first use in a child builds a new one (the old one is leaked, never dropped: dropping it
//! would wait for threads that do not exist there).

use pyo3::prelude::*;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;
use tokio::runtime::{Handle, Runtime};

/// How often a blocking wait wakes to let Python handle signals (Ctrl-C).
const SIGNAL_CHECK: Duration = Duration::from_millis(20);

/// How long an interrupted acquisition waits for its cleanup before raising.
const CLEANUP_BOUND: Duration = Duration::from_secs(5);

/// Where this process's runtime stands.
enum State {
    /// Not built yet (or built by the parent of this forked process).
    Unbuilt,
    /// Running in process `pid`.
    Running { pid: u32, runtime: Runtime },
    /// Shut down at interpreter exit in process `pid`: nothing of ours may call into Python
    /// once the interpreter finalizes.
    Closed { pid: u32 },
}

static RUNTIME: Mutex<State> = Mutex::new(State::Unbuilt);

/// The runtime of this process, built on first use (and again in a forked child, whose
/// copy of the parent's is dead: that one is leaked, never dropped, as dropping it would wait
/// for threads the child does not have).
pub(crate) fn runtime() -> PyResult<Handle> {
    let pid = std::process::id();
    let mut state = RUNTIME.lock().unwrap_or_else(|e| e.into_inner());
    match &*state {
        State::Running { pid: p, runtime } if *p == pid => return Ok(runtime.handle().clone()),
        State::Closed { pid: p } if *p == pid => {
            return Err(crate::errors::Error::new_err(
                "the interpreter is exiting: sets3lock has shut down".into(),
            ))
        }
        _ => {}
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("sets3lock")
        .enable_all()
        .build()
        .map_err(|e| {
            crate::errors::Error::new_err(format!("cannot start the lock's threads: {e}"))
        })?;
    let handle = runtime.handle().clone();
    if let State::Running {
        runtime: parents, ..
    } = std::mem::replace(&mut *state, State::Running { pid, runtime })
    {
        std::mem::forget(parents);
    }
    Ok(handle)
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
        State::Running { pid: p, runtime } if p == pid => {
            py.detach(|| runtime.shutdown_timeout(timeout));
        }
        State::Running { runtime, .. } => std::mem::forget(runtime),
        _ => {}
    }
}

/// Runs `work` on the runtime and blocks this thread until it is done, with the GIL
/// released; every [`SIGNAL_CHECK`] it takes the GIL back to run Python's signal handlers.
/// If one raises (Ctrl-C: `KeyboardInterrupt`), `work` is dropped (an acquisition asks its
/// driver to clean up), `cleanup` is awaited for at most [`CLEANUP_BOUND`], and the
/// exception is raised.
pub(crate) fn wait<T, C>(
    py: Python<'_>,
    work: impl Future<Output = T> + Send + 'static,
    cleanup: C,
) -> PyResult<T>
where
    T: Send + 'static,
    C: Future<Output = ()> + Send + 'static,
{
    let runtime = runtime()?;
    let mut task = runtime.spawn(work);
    loop {
        let polled = py.detach(|| {
            runtime.block_on(async { tokio::time::timeout(SIGNAL_CHECK, &mut task).await })
        });
        match polled {
            Ok(Ok(done)) => return Ok(done),
            Ok(Err(e)) => {
                return Err(crate::errors::Error::new_err(format!(
                    "the lock's task failed: {e}"
                )))
            }
            Err(_elapsed) => {
                if let Err(interrupted) = py.check_signals() {
                    task.abort();
                    py.detach(|| {
                        runtime.block_on(async {
                            let _ = (&mut task).await;
                            let _ = tokio::time::timeout(CLEANUP_BOUND, cleanup).await;
                        })
                    });
                    return Err(interrupted);
                }
            }
        }
    }
}

/// At interpreter exit: releases every lock still held in this process, waits until no lock
/// driver is left running (those releases, an interrupted acquisition's cleanup, a dropped
/// handle's release) for at most `timeout` seconds, then shuts the runtime down. Whether the
/// drivers all finished in time.
#[pyfunction]
pub(crate) fn shutdown(py: Python<'_>, timeout: f64) -> bool {
    crate::held::release_all();
    let deadline = std::time::Instant::now() + Duration::from_secs_f64(timeout.clamp(0.0, 3600.0));
    let settled = py.detach(|| loop {
        if sets3lock_s3::drivers_running() == 0 {
            return true;
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

/// The runtime for the bridge. Every async entry point calls [`runtime`] first, so it is
/// there; once shut down (interpreter exit), a task spawned is dropped at once, unpolled.
fn bridge_runtime() -> Handle {
    static CLOSED: OnceLock<Runtime> = OnceLock::new();
    runtime().unwrap_or_else(|_| {
        let closed = CLOSED.get_or_init(|| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap_or_else(|e| panic!("sets3lock: no tokio runtime: {e}"));
            runtime
        });
        closed.handle().clone()
    })
}

impl pyo3_async_runtimes::generic::Runtime for Asyncio {
    type JoinError = JoinFailed;
    type JoinHandle = Joined;

    fn spawn<F>(fut: F) -> Self::JoinHandle
    where
        F: Future<Output = ()> + Send + 'static,
    {
        Joined(bridge_runtime().spawn(fut))
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
    pyo3_async_runtimes::generic::future_into_py::<Asyncio, F, T>(py, fut)
}

/// The process an object was made in. After `os.fork()` the child has none of the parent's
/// threads and shares its connections, so an object made before the fork refuses any use
/// there (the parent's locks stay the parent's).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Origin(u32);

impl Origin {
    /// This process.
    pub(crate) fn here() -> Origin {
        Origin(std::process::id())
    }

    /// Whether this is the process the object was made in.
    pub(crate) fn is_here(self) -> bool {
        self.0 == std::process::id()
    }

    /// An error unless this is the process the object `what` (for `url`) was made in.
    pub(crate) fn check(self, what: &str, url: &str) -> PyResult<()> {
        if self.is_here() {
            return Ok(());
        }
        let name = match url {
            "" => what.to_owned(),
            url => format!("{what} {url}"),
        };
        Err(crate::errors::Error::new_err(format!(
            "{name} was made by process {} before os.fork(): a forked child cannot use it (the parent keeps its locks); make a new one in the child",
            self.0
        )))
    }
}
