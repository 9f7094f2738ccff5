//! One task (or, for the blocking mode, one thread) that drives every lock of a
//! [`Locks`](crate::Locks): each lock's driver loop is a future, and the hub polls them all.
//! A lock waiting on its timer costs a future and a timer entry, not a task or a thread.

use crate::driver::mode::Mode;
use crate::Error;
use core::future::Future;
use core::pin::Pin;
use futures_util::stream::{FuturesUnordered, StreamExt};
use futures_util::FutureExt as _;
use std::sync::Mutex;
use tokio::sync::mpsc;

/// One lock's driver loop.
pub(crate) type Driver = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The way in to the hub: drivers sent here are polled by it until they finish. Started with
/// the first driver; it ends once the [`Locks`](crate::Locks) is gone and every driver has
/// finished (after that, a new driver starts a new hub).
#[derive(Debug, Default)]
pub(crate) struct Hub {
    inbox: Mutex<Option<mpsc::UnboundedSender<Driver>>>,
}

impl Hub {
    /// Hands `driver` to the hub, starting it (the mode's way) if it is not running.
    pub(crate) fn run<M: Mode>(&self, driver: Driver) -> Result<(), Error> {
        // Poisoned only by a panic while sending: the sender is still a sender.
        let mut inbox = self.inbox.lock().unwrap_or_else(|e| e.into_inner());
        let driver = match inbox.as_ref() {
            Some(tx) => match tx.send(driver) {
                Ok(()) => return Ok(()),
                // The hub has ended (every driver finished, the runtime gone): a new one.
                Err(mpsc::error::SendError(driver)) => driver,
            },
            None => driver,
        };
        let (tx, rx) = mpsc::unbounded_channel();
        // Cannot fail: the receiver is right here.
        let _ = tx.send(driver);
        M::spawn_hub(hub(rx))?;
        *inbox = Some(tx);
        Ok(())
    }
}

/// Polls every driver received until the inbox closes and they have all finished.
async fn hub(mut inbox: mpsc::UnboundedReceiver<Driver>) {
    let mut running: FuturesUnordered<Driver> = FuturesUnordered::new();
    loop {
        tokio::select! {
            received = inbox.recv() => match received {
                // A driver that panics ends alone (its handle sees it stopped), not the hub
                // and every other lock with it.
                Some(driver) => running.push(Box::pin(
                    core::panic::AssertUnwindSafe(driver).catch_unwind().map(drop),
                )),
                None => break,
            },
            Some(()) = running.next(), if !running.is_empty() => {}
        }
    }
    while running.next().await.is_some() {}
}
