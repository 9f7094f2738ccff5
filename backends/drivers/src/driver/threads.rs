//! The blocking mode's driver threads: one per lock being driven, started when none is free,
//! and kept for a while after its lock is done, for the next one.
//!
//! Starting a thread costs about as much as a request to a fast local store; a program that
//! takes and releases a lock in a loop would start one per acquisition. A thread whose driver
//! has finished waits up to [`LINGER`] for another before it ends, and at most [`KEPT`] wait
//! at once. A driver is never queued behind another: it gets a waiting thread or a new one.

use core::future::Future;
use core::pin::Pin;
use core::time::Duration;
use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};

/// A driver, run to its end by `run` on the thread that takes it.
pub(crate) type Job = Pin<Box<dyn Future<Output = ()> + Send>>;

/// How long a thread with nothing to drive waits for a new driver before it ends.
pub(crate) const LINGER: Duration = Duration::from_secs(10);

/// How many threads may wait for a driver at once; more end as soon as their driver does.
pub(crate) const KEPT: usize = 16;

/// The waiting threads and the drivers handed to them.
struct Pool {
    /// Drivers handed over and not yet taken: never more than threads waiting for them.
    jobs: VecDeque<Job>,
    /// Threads waiting, less the drivers in `jobs` (each promised to one of them).
    free: usize,
}

static POOL: Mutex<Pool> = Mutex::new(Pool {
    jobs: VecDeque::new(),
    free: 0,
});
static HANDED: Condvar = Condvar::new();

fn pool() -> MutexGuard<'static, Pool> {
    // Poisoned only by a panic inside these few lines' pushes and pops: still consistent.
    POOL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `job` on a waiting thread, or on a new one (named `sets3lock`) if none waits.
/// `run` is how the thread runs a driver to its end (the blocking mode's `block_on`).
pub(crate) fn start(job: Job, run: fn(Job)) -> std::io::Result<()> {
    {
        let mut pool = pool();
        if pool.free > 0 {
            pool.free -= 1;
            pool.jobs.push_back(job);
            drop(pool);
            HANDED.notify_one();
            return Ok(());
        }
    }
    std::thread::Builder::new()
        .name("sets3lock".into())
        .spawn(move || serve(job, run))
        .map(drop)
}

/// A driver thread's life: its first driver, then each one handed to it, until none comes
/// within [`LINGER`] or enough threads wait already.
fn serve(first: Job, run: fn(Job)) {
    let mut job = first;
    loop {
        run(job);
        let mut pool = pool();
        if pool.free >= KEPT {
            return;
        }
        pool.free += 1;
        let deadline = std::time::Instant::now() + LINGER;
        job = loop {
            if let Some(next) = pool.jobs.pop_front() {
                // `free` was counted down for it when it was handed over.
                break next;
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                // Nothing was promised to this thread: it leaves, one fewer waiting.
                pool.free -= 1;
                return;
            }
            pool = HANDED
                .wait_timeout(pool, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn on_this_thread(job: Job) {
        crate::blocking::block_on(job);
    }

    fn thread_of(start_job: impl Fn(Job)) -> std::thread::ThreadId {
        let (tx, rx) = mpsc::channel();
        start_job(Box::pin(async move {
            let _ = tx.send(std::thread::current().id());
        }));
        rx.recv_timeout(Duration::from_secs(10))
            .expect("the job ran")
    }

    #[test]
    fn a_thread_whose_driver_ended_takes_the_next() {
        let start_job = |job| start(job, on_this_thread).expect("started");
        let first = thread_of(start_job);
        // Other tests of this binary share the pool: the thread may be taken by theirs.
        // One of a few tries finds it free once it has finished its first job.
        let again = (0..50).any(|_| {
            std::thread::sleep(Duration::from_millis(20));
            thread_of(start_job) == first
        });
        assert!(again, "no driver ran on the thread that ran the first");
    }

    #[test]
    fn drivers_never_wait_for_each_other() {
        // Two drivers that each wait for the other to start: both must run at once.
        let (a_tx, a_rx) = mpsc::channel::<()>();
        let (b_tx, b_rx) = mpsc::channel::<()>();
        let (done_tx, done_rx) = mpsc::channel();
        let done_a = done_tx.clone();
        start(
            Box::pin(async move {
                let _ = a_tx.send(());
                let _ = done_a.send(b_rx.recv_timeout(Duration::from_secs(10)).is_ok());
            }),
            on_this_thread,
        )
        .expect("started");
        start(
            Box::pin(async move {
                let _ = b_tx.send(());
                let _ = done_tx.send(a_rx.recv_timeout(Duration::from_secs(10)).is_ok());
            }),
            on_this_thread,
        )
        .expect("started");
        for _ in 0..2 {
            let met = done_rx.recv_timeout(Duration::from_secs(20));
            assert_eq!(met, Ok(true), "a driver waited behind another");
        }
    }
}
