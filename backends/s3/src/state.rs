//! What a held lock's handle can see, shared between the driver and the handle.
//!
//! The driver writes, the handle reads; the blocking handle waits on a condition variable,
//! the async handle on a `Notify`. Validity is checked against the suspend-aware clock by the
//! reader too, so a handle reports expiry on time even while its driver is stuck in a slow
//! request, or has just woken from a suspend. Waits with a deadline wake at least every second
//! to re-read that clock.

use crate::clock::{nap_until, Stamp};
use sets3lock::{ETag, Event, LostReason, NotAcquired, OwnerId, ReleaseOutcome};
use std::sync::{Condvar, Mutex, MutexGuard};

/// Where a lock stands, as its handle sees it.
#[derive(Clone, Debug)]
pub(crate) enum Phase {
    Acquiring,
    Held,
    Releasing,
    Ended(End),
}

/// How a hold or an acquisition ended.
#[derive(Clone, Debug)]
pub(crate) enum End {
    NotAcquired(NotAcquired),
    Cancelled,
    Failed(sets3lock::Error),
    Lost(LostReason),
    Expired,
    Released(ReleaseOutcome),
}

#[derive(Clone, Debug)]
pub(crate) struct Snapshot {
    pub(crate) phase: Phase,
    pub(crate) owner: Option<OwnerId>,
    pub(crate) etag: Option<ETag>,
    pub(crate) valid_until: Option<Stamp>,
    /// The driver has finished: nothing more will change.
    pub(crate) finished: bool,
}

impl Snapshot {
    /// How long the hold stays valid after `now`, if it is held and has a lease.
    pub(crate) fn remaining(&self, now: Stamp) -> Option<std::time::Duration> {
        let until = matches!(self.phase, Phase::Held)
            .then_some(self.valid_until)
            .flatten()?;
        Some(until.since(now))
    }

    /// Whether the hold is valid at `now`.
    pub(crate) fn is_held(&self, now: Stamp) -> bool {
        matches!(self.phase, Phase::Held) && self.valid_until.is_none_or(|v| now < v)
    }
}

/// Marks the shared state finished when dropped: at the end of a driver, even by a panic.
pub(crate) struct FinishOnDrop(pub(crate) std::sync::Arc<Shared>);

impl Drop for FinishOnDrop {
    fn drop(&mut self) {
        self.0.finish();
    }
}

#[derive(Debug)]
pub(crate) struct Shared {
    snapshot: Mutex<Snapshot>,
    changed: Condvar,
    notify: tokio::sync::Notify,
}

impl Shared {
    pub(crate) fn new() -> Shared {
        Shared {
            snapshot: Mutex::new(Snapshot {
                phase: Phase::Acquiring,
                owner: None,
                etag: None,
                valid_until: None,
                finished: false,
            }),
            changed: Condvar::new(),
            notify: tokio::sync::Notify::new(),
        }
    }

    pub(crate) fn get(&self) -> Snapshot {
        self.lock().clone()
    }

    fn lock(&self) -> MutexGuard<'_, Snapshot> {
        // A poisoned lock only means a panic elsewhere while holding it; the data is a plain
        // snapshot and still usable.
        self.snapshot.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Applies a core event; `to_stamp` converts the core's instants to the drivers' clock.
    pub(crate) fn apply(&self, event: &Event, to_stamp: impl Fn(sets3lock::Instant) -> Stamp) {
        let mut s = self.lock();
        match event {
            Event::Acquired {
                owner,
                etag,
                valid_until,
                ..
            } => {
                s.phase = Phase::Held;
                s.owner = Some(*owner);
                s.etag = Some(etag.clone());
                s.valid_until = valid_until.map(&to_stamp);
            }
            Event::Renewed { etag, valid_until } => {
                s.etag = Some(etag.clone());
                s.valid_until = valid_until.map(&to_stamp);
            }
            Event::NotAcquired { reason } => {
                s.phase = Phase::Ended(End::NotAcquired(reason.clone()))
            }
            Event::Cancelled => s.phase = Phase::Ended(End::Cancelled),
            Event::Failed { error } => s.phase = Phase::Ended(End::Failed(error.clone())),
            Event::Lost { reason } => s.phase = Phase::Ended(End::Lost(reason.clone())),
            Event::Expired => s.phase = Phase::Ended(End::Expired),
            Event::Released { outcome } => s.phase = Phase::Ended(End::Released(*outcome)),
            _ => return,
        }
        drop(s);
        self.wake();
    }

    pub(crate) fn set_releasing(&self) {
        let mut s = self.lock();
        if matches!(s.phase, Phase::Held) {
            s.phase = Phase::Releasing;
        }
    }

    pub(crate) fn finish(&self) {
        self.lock().finished = true;
        self.wake();
    }

    fn wake(&self) {
        self.changed.notify_all();
        self.notify.notify_waiters();
    }

    /// Blocks until `done` holds for the snapshot, or until `deadline` (then returns it as is).
    pub(crate) fn wait_blocking(
        &self,
        done: impl Fn(&Snapshot) -> bool,
        deadline: Option<Stamp>,
    ) -> Snapshot {
        let mut s = self.lock();
        loop {
            if done(&s) || s.finished {
                return s.clone();
            }
            match deadline {
                None => s = self.changed.wait(s).unwrap_or_else(|e| e.into_inner()),
                Some(d) => {
                    if Stamp::now() >= d {
                        return s.clone();
                    }
                    s = self
                        .changed
                        .wait_timeout(s, nap_until(d))
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
            }
        }
    }

    /// Waits until `done` holds for the snapshot, or until `deadline`.
    pub(crate) async fn wait_async(
        &self,
        done: impl Fn(&Snapshot) -> bool,
        deadline: Option<Stamp>,
    ) -> Snapshot {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let s = self.get();
            if done(&s) || s.finished {
                return s;
            }
            match deadline {
                None => notified.await,
                Some(d) => {
                    if Stamp::now() >= d {
                        return s;
                    }
                    let _ = tokio::time::timeout(nap_until(d), notified).await;
                }
            }
        }
    }
}
