//! One task (or, for the blocking mode, one thread) that drives every lock of a
//! [`Locks`](crate::Locks): each lock's driver loop is a future, and the hub polls them all.
//! A lock waiting on its timer costs a future and a timer entry, not a task or a thread.
//! Written on the crate's own change signal, so it runs on any runtime.

use crate::driver::mode::Mode;
use crate::driver::signal::Signal;
use crate::Error;
use core::future::Future;
use core::pin::Pin;
use futures_util::stream::{FuturesUnordered, StreamExt};
use futures_util::FutureExt as _;
use std::sync::{Arc, Mutex, MutexGuard};

/// One lock's driver loop.
pub(crate) type Driver = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The way in to the hub: drivers handed here are polled by it until they finish. Started
/// with the first driver; it ends once every driver it has is finished and the
/// [`Locks`](crate::Locks) is gone (after that, a new driver starts a new hub).
#[derive(Debug, Default)]
pub(crate) struct Hub {
    inbox: Mutex<Option<Arc<Inbox>>>,
}

/// Drivers on their way to a running hub.
#[derive(Default)]
struct Inbox {
    /// The drivers handed in and not yet taken; `None` once the hub has ended.
    queue: Mutex<Option<Vec<Driver>>>,
    /// Rung when a driver is handed in, or the `Locks` is gone.
    rung: Signal,
    /// The `Locks` is gone: end once every driver has finished.
    closed: Mutex<bool>,
}

impl core::fmt::Debug for Inbox {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Inbox")
    }
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Poisoned only by a panic while pushing or taking: the data is still whole.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Hub {
    /// Hands `driver` to the hub, starting it (the mode's way) if it is not running.
    pub(crate) fn run<M: Mode>(&self, driver: Driver) -> Result<(), Error> {
        let mut inbox = locked(&self.inbox);
        if let Some(running) = inbox.as_ref() {
            if let Some(queue) = locked(&running.queue).as_mut() {
                queue.push(driver);
                running.rung.notify_all();
                return Ok(());
            }
        }
        // No hub, or it has ended: a new one.
        let fresh = Arc::new(Inbox {
            queue: Mutex::new(Some(vec![driver])),
            ..Inbox::default()
        });
        M::spawn_hub(hub(fresh.clone()))?;
        *inbox = Some(fresh);
        Ok(())
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        if let Some(inbox) = locked(&self.inbox).take() {
            *locked(&inbox.closed) = true;
            inbox.rung.notify_all();
        }
    }
}

/// Marks the hub as ended however its future ends (finished, or dropped by a runtime that shut
/// down): drivers handed in later start a new hub instead of waiting in a queue nobody reads,
/// and those still queued are dropped, so their handles learn the driver is gone.
struct Ending(Arc<Inbox>);

impl Drop for Ending {
    fn drop(&mut self) {
        let queued = locked(&self.0.queue).take();
        drop(queued);
    }
}

/// Polls every driver handed in until the `Locks` is gone and they have all finished.
async fn hub(inbox: Arc<Inbox>) {
    let _ending = Ending(inbox.clone());
    let mut running: FuturesUnordered<Driver> = FuturesUnordered::new();
    loop {
        // Listening before looking, so that a driver handed in between still wakes us.
        let rung = inbox.rung.listen();
        let arrived = locked(&inbox.queue).as_mut().map(core::mem::take);
        for driver in arrived.unwrap_or_default() {
            // A driver that panics ends alone (its handle sees it stopped), not the hub and
            // every other lock with it.
            running.push(Box::pin(
                core::panic::AssertUnwindSafe(driver)
                    .catch_unwind()
                    .map(drop),
            ));
        }
        if running.is_empty() && *locked(&inbox.closed) {
            break;
        }
        if running.is_empty() {
            rung.await;
            continue;
        }
        let next = running.next();
        // Whichever comes first: a driver finishing, or a new one (or the end) rung in.
        let _ = futures_util::future::select(next, rung).await;
    }
}
