//! The blocking mode's driver threads: one per lock being driven, started when none is free,
//! and kept for a while after its lock is done, for the next one.
//!
//! Starting a thread costs about as much as a request to a fast local store; a program that
//! takes and releases a lock in a loop would start one per acquisition. A thread whose driver
//! has finished waits up to [`LINGER`] for another before it ends, if fewer than [`KEPT`]
//! free threads wait already. A driver is never queued behind another: it gets a waiting
//! thread or a new one.
//!
//! A child made by `fork` starts over with no thread (its parent's stay with the parent);
//! a fork while a thread of the parent was updating the pool would leave the child's pool
//! locked, as a fork without `exec` in a threaded program risks for any lock.
//!
//! A thread is [reserved](Pool::reserve) before it is needed, so that handing it a driver
//! cannot fail: the blocking mode reserves one before an acquisition's first request, and
//! hands it the lock once it is held. Were the thread only started then, a failure to start
//! it would leave the lock written with nobody to renew or release it.

use core::future::Future;
use core::pin::{pin, Pin};
use core::task::{Context, Poll, Waker};
use core::time::Duration;
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// Runs one of the blocking mode's futures to completion on this thread. They block inside `poll`
/// and are ready the first time; parking on a waker keeps this correct even if one were not.
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut context = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut context) {
            return out;
        }
        std::thread::park();
    }
}

/// A driver, run to its end by the pool's `run` on the thread that takes it.
pub(crate) type Job = Pin<Box<dyn Future<Output = ()> + Send>>;

/// How long a thread with nothing to drive waits for a new driver before it ends.
pub(crate) const LINGER: Duration = Duration::from_secs(10);

/// A thread whose driver is done ends at once when this many free threads wait already.
pub(crate) const KEPT: usize = 16;

/// The blocking mode's pool: its drivers run by `block_on`.
static POOL: Pool = Pool::new(LINGER, KEPT, block_on::<Job>);

/// Reserves one of the blocking mode's driver threads (see [`Pool::reserve`]).
pub(crate) fn reserve() -> std::io::Result<Reserved> {
    POOL.reserve()
}

/// Runs `job` on one of the blocking mode's driver threads.
pub(crate) fn start(job: Job) -> std::io::Result<()> {
    POOL.reserve().map(|thread| thread.run(job))
}

/// Threads that run drivers, and wait a while for the next.
pub(crate) struct Pool {
    state: Mutex<State>,
    handed: Condvar,
    linger: Duration,
    kept: usize,
    run: fn(Job),
}

/// The waiting threads and the drivers handed to them.
struct State {
    /// Drivers handed over and not yet taken: never more than the threads waiting.
    jobs: VecDeque<Job>,
    /// Threads waiting that nobody has reserved: the waiting ones, less the reserved ones
    /// (whose drivers may be in `jobs` already).
    free: usize,
    /// The process the counts are of: a child made by `fork` has none of its parent's threads.
    pid: u32,
}

/// A thread promised to one driver: [`run`](Reserved::run) hands it over; dropped unused, the
/// thread is free for another.
#[must_use = "a reserved thread is free again once this is dropped"]
pub(crate) struct Reserved {
    pool: &'static Pool,
    used: bool,
    /// The process that reserved it: a child forked since has no such thread.
    pid: u32,
}

impl Reserved {
    /// Runs `job` on the reserved thread. Cannot fail: the thread is there, waiting for it.
    pub(crate) fn run(mut self, job: Job) {
        self.used = true;
        if self.pid != std::process::id() {
            // Reserved before a fork, used in the child: the thread stayed with the parent.
            // A thread of the job's own; if even that cannot start, the job is dropped, and
            // its handle learns that its driver stopped (the lock then expires by its lease).
            let run = self.pool.run;
            let spawned = std::thread::Builder::new()
                .name("sets3lock".into())
                .spawn(move || run(job));
            drop(spawned);
            return;
        }
        self.pool.state().jobs.push_back(job);
        // Any waiting thread may take it: one of them is this reservation's.
        self.pool.handed.notify_one();
    }
}

impl Drop for Reserved {
    fn drop(&mut self) {
        // (After a fork the thread is the parent's: the child's pool never counted it.)
        if !self.used && self.pid == std::process::id() {
            self.pool.state().free += 1;
        }
    }
}

impl Pool {
    pub(crate) const fn new(linger: Duration, kept: usize, run: fn(Job)) -> Pool {
        Pool {
            state: Mutex::new(State {
                jobs: VecDeque::new(),
                free: 0,
                pid: 0,
            }),
            handed: Condvar::new(),
            linger,
            kept,
            run,
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Poisoned only by a panic inside these few lines' pushes and pops: still consistent.
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let pid = std::process::id();
        if state.pid != pid {
            // A new process (or the first use): no thread of ours waits here. The parent's
            // drivers are not ours to run, nor to drop (their destructors would act for it).
            core::mem::forget(core::mem::take(&mut state.jobs));
            state.free = 0;
            state.pid = pid;
        }
        state
    }

    /// A thread for one driver: a waiting one if there is one, else a new one (named
    /// `sets3lock`), which waits until it is handed its driver. Fails only when a new thread
    /// cannot be started.
    pub(crate) fn reserve(&'static self) -> std::io::Result<Reserved> {
        {
            let mut state = self.state();
            if state.free > 0 {
                state.free -= 1;
                return Ok(Reserved {
                    pool: self,
                    used: false,
                    pid: state.pid,
                });
            }
        }
        std::thread::Builder::new()
            .name("sets3lock".into())
            .spawn(move || self.serve())
            .map(|_| Reserved {
                pool: self,
                used: false,
                pid: std::process::id(),
            })
    }

    /// A driver thread's life: waits for a driver and runs it, again and again, until none
    /// comes within the linger time or enough threads wait already. Started reserved: it does
    /// not count itself free until its first driver is done.
    fn serve(&'static self) {
        loop {
            let job = self.next_job();
            let Some(job) = job else { return };
            (self.run)(job);
            let mut state = self.state();
            if state.free >= self.kept {
                return;
            }
            state.free += 1;
        }
    }

    /// The next driver handed over, or `None` if this thread is to end: nothing came within
    /// the linger time and a free thread can go (while every waiting thread is reserved, each
    /// waits on for its driver).
    fn next_job(&self) -> Option<Job> {
        let mut state = self.state();
        let mut deadline = std::time::Instant::now() + self.linger;
        loop {
            if let Some(job) = state.jobs.pop_front() {
                return Some(job);
            }
            let now = std::time::Instant::now();
            if now >= deadline {
                if state.free > 0 {
                    // One free thread fewer: this one (threads that wait are alike).
                    state.free -= 1;
                    return None;
                }
                deadline = now + self.linger;
            }
            state = self
                .handed
                .wait_timeout(state, deadline.saturating_duration_since(now))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn block_on(job: Job) {
        super::block_on(job);
    }

    /// A pool of the tests' own, leaked: pools live as long as the process, as the real one.
    fn pool(linger: Duration) -> &'static Pool {
        Box::leak(Box::new(Pool::new(linger, KEPT, block_on)))
    }

    /// The thread `job` runs on.
    fn thread_of(pool: &'static Pool) -> std::thread::ThreadId {
        let (tx, rx) = mpsc::channel();
        let thread = pool.reserve().expect("reserved");
        thread.run(Box::pin(async move {
            let _ = tx.send(std::thread::current().id());
        }));
        rx.recv_timeout(Duration::from_secs(10))
            .expect("the job ran")
    }

    /// Waits until `pool` has `n` free threads (bounded: fails with what it saw).
    fn until_free(pool: &Pool, n: usize) {
        for _ in 0..500 {
            if pool.state().free == n {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("{} free threads, not {n}", pool.state().free);
    }

    #[test]
    fn a_thread_whose_driver_ended_takes_the_next() {
        let pool = pool(LINGER);
        let first = thread_of(pool);
        until_free(pool, 1);
        assert_eq!(thread_of(pool), first, "a new thread ran the second driver");
    }

    #[test]
    fn a_reserved_thread_is_there_when_its_driver_comes() {
        // Reserved long before its driver, past the linger time: the thread waits on for it.
        let pool = pool(Duration::from_millis(50));
        let thread = pool.reserve().expect("reserved");
        std::thread::sleep(Duration::from_millis(300));
        let (tx, rx) = mpsc::channel();
        thread.run(Box::pin(async move {
            let _ = tx.send(());
        }));
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok(()));
    }

    #[test]
    fn a_thread_with_nothing_to_drive_ends_after_the_linger_time() {
        let pool = pool(Duration::from_millis(300));
        let first = thread_of(pool);
        until_free(pool, 1);
        until_free(pool, 0);
        assert_ne!(thread_of(pool), first, "the thread did not end");
    }

    #[test]
    fn a_reservation_dropped_unused_frees_its_thread() {
        let pool = pool(LINGER);
        let first = thread_of(pool);
        until_free(pool, 1);
        drop(pool.reserve().expect("reserved"));
        assert_eq!(pool.state().free, 1);
        assert_eq!(thread_of(pool), first);
    }

    #[test]
    fn drivers_never_wait_for_each_other() {
        // Two drivers that each wait for the other to start: both must run at once.
        let pool = pool(LINGER);
        let (a_tx, a_rx) = mpsc::channel::<()>();
        let (b_tx, b_rx) = mpsc::channel::<()>();
        let (done_tx, done_rx) = mpsc::channel();
        let done_a = done_tx.clone();
        let first = pool.reserve().expect("reserved");
        first.run(Box::pin(async move {
            let _ = a_tx.send(());
            let _ = done_a.send(b_rx.recv_timeout(Duration::from_secs(10)).is_ok());
        }));
        let second = pool.reserve().expect("reserved");
        second.run(Box::pin(async move {
            let _ = b_tx.send(());
            let _ = done_tx.send(a_rx.recv_timeout(Duration::from_secs(10)).is_ok());
        }));
        for _ in 0..2 {
            let met = done_rx.recv_timeout(Duration::from_secs(20));
            assert_eq!(met, Ok(true), "a driver waited behind another");
        }
    }
}
