//! What a lock's handle sees of its driver, and the one thing it tells the driver.
//!
//! The driver publishes where the lock stands (from the core's events); the handle reads it
//! and may ask for a release. Each mode waits on it its own way: a thread on the condition
//! variable, a task on the `Notify`; both are woken on every change. Validity is checked
//! against the suspend-aware clock by the reader too, so a handle reports expiry on time even
//! while its driver is stuck in a slow request, or has just woken from a suspend.

use crate::driver::clock::Stamp;
use crate::Error;
use sets3lock_proto::{ETag, Event, LostReason, NotAcquired, OwnerId, ReleaseOutcome};
use std::sync::{Condvar, Mutex, MutexGuard};

/// A hold as the latest confirmed write left it.
#[derive(Clone, Debug)]
pub(crate) struct Hold {
    pub(crate) owner: OwnerId,
    pub(crate) etag: ETag,
    /// `None` with a zero lease.
    pub(crate) valid_until: Option<Stamp>,
    /// The grant's fencing token, when the key is fenced.
    pub(crate) token: Option<u64>,
}

impl Hold {
    fn is_valid_at(&self, now: Stamp) -> bool {
        self.valid_until.is_none_or(|v| now < v)
    }
}

/// Where a lock stands, as its handle sees it.
#[derive(Clone, Debug)]
pub(crate) enum Standing {
    Acquiring,
    Holding(Hold),
    /// Over, and the hold it ended (`None`: it ended while acquiring).
    Ended {
        how: Ending,
        hold: Option<Hold>,
    },
}

/// How an acquisition or a hold ended.
#[derive(Clone, Debug)]
pub(crate) enum Ending {
    NotAcquired(NotAcquired),
    Cancelled,
    Failed(sets3lock_proto::Error),
    Lost(LostReason),
    Expired,
    Released(ReleaseOutcome),
    /// The handle let go of the hold without releasing it (`Held::detach`): the lock object
    /// stays, its lease running.
    Detached,
    /// A final event this driver does not know (a newer core): the operation failed.
    Unknown(Box<Event>),
}

/// How a hold ended without being released: stop relying on the lock.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Loss {
    /// Another writer replaced the object, or it was deleted.
    Lost(LostReason),
    /// The lease ran out before a renewal got through.
    Expired,
    /// The background driver stopped (its runtime shut down): treat as lost.
    DriverStopped,
}

/// What the handle and the driver see of each other. (`pub` only for the sealed `Mode` trait
/// to name it: the module is private.)
#[derive(Clone, Debug)]
pub struct Snapshot {
    pub(crate) standing: Standing,
    /// The handle asked for a release (or, while acquiring, a cancellation).
    pub(crate) release_asked: bool,
    /// The handle asked to let go of the hold without releasing it.
    pub(crate) detach_asked: bool,
    /// The driver has finished: nothing more will change.
    pub(crate) finished: bool,
}

impl Snapshot {
    /// The hold, while held and not being released.
    fn live_hold(&self) -> Option<&Hold> {
        match &self.standing {
            Standing::Holding(h) if !self.release_asked && !self.detach_asked => Some(h),
            _ => None,
        }
    }

    /// The latest hold, if it got that far (it stays after the hold ends).
    pub(crate) fn hold(&self) -> Option<&Hold> {
        self.standing.hold()
    }

    /// The end of validity of the hold under way (`None` with a zero lease, or without one).
    pub(crate) fn valid_until(&self) -> Option<Stamp> {
        self.live_hold().and_then(|h| h.valid_until)
    }

    /// How long the hold stays valid after `now`, if it is held and has a lease.
    pub(crate) fn remaining(&self, now: Stamp) -> Option<std::time::Duration> {
        Some(self.valid_until()?.since(now))
    }

    /// Whether the hold is valid at `now`.
    pub(crate) fn is_held(&self, now: Stamp) -> bool {
        self.live_hold().is_some_and(|h| h.is_valid_at(now))
    }

    /// The loss this snapshot shows at `now`, if any.
    pub(crate) fn loss(&self, now: Stamp) -> Option<Loss> {
        match &self.standing {
            Standing::Ended {
                how: Ending::Lost(r),
                ..
            } => Some(Loss::Lost(r.clone())),
            Standing::Ended {
                how: Ending::Expired,
                ..
            } => Some(Loss::Expired),
            Standing::Ended { .. } => Some(Loss::DriverStopped),
            _ if self.live_hold().is_some_and(|h| !h.is_valid_at(now)) => Some(Loss::Expired),
            _ if self.finished => Some(Loss::DriverStopped),
            Standing::Acquiring | Standing::Holding(_) => None,
        }
    }

    /// What an acquisition came to, once it is no longer under way.
    pub(crate) fn acquired(&self) -> Result<Hold, Error> {
        match &self.standing {
            Standing::Holding(h) => Ok(h.clone()),
            Standing::Ended { how, .. } => Err(how.error()),
            Standing::Acquiring => Err(Error::DriverGone),
        }
    }

    /// What a release came to, once the hold has ended.
    pub(crate) fn released(&self) -> Result<ReleaseOutcome, Error> {
        match &self.standing {
            Standing::Ended {
                how: Ending::Released(outcome),
                ..
            } => Ok(*outcome),
            Standing::Ended { how, .. } => Err(how.error()),
            Standing::Acquiring | Standing::Holding(_) => Err(Error::DriverGone),
        }
    }
}

impl Standing {
    /// Where the lock stands after `event`; `None` if the event does not move it.
    fn after(
        &self,
        event: &Event,
        to_stamp: impl Fn(sets3lock_proto::Instant) -> Stamp,
    ) -> Option<Standing> {
        let hold =
            |owner, etag: &ETag, valid_until: &Option<sets3lock_proto::Instant>, token| Hold {
                owner,
                etag: etag.clone(),
                valid_until: valid_until.map(&to_stamp),
                token,
            };
        if let Event::Renewed { etag, valid_until } = event {
            // While held, or while a release waits for the renewal in flight.
            let Standing::Holding(h) = self else {
                return None;
            };
            return Some(Standing::Holding(hold(h.owner, etag, valid_until, h.token)));
        }
        if !event.is_final() {
            return None;
        }
        let how = match event {
            Event::Acquired {
                owner,
                etag,
                valid_until,
                token,
                ..
            } => return Some(Standing::Holding(hold(*owner, etag, valid_until, *token))),
            Event::NotAcquired { reason } => Ending::NotAcquired(reason.clone()),
            Event::Cancelled => Ending::Cancelled,
            Event::Failed { error } => Ending::Failed(error.clone()),
            Event::Lost { reason } => Ending::Lost(reason.clone()),
            Event::Expired => Ending::Expired,
            // A detach's parked record: the hold stays, let go of.
            Event::Released {
                outcome: ReleaseOutcome::Parked,
            } => Ending::Detached,
            Event::Released { outcome } => Ending::Released(*outcome),
            // Final, but unknown to this driver: ending the operation as a failure is safe;
            // waiting on as if nothing happened is not.
            other => Ending::Unknown(Box::new(other.clone())),
        };
        Some(Standing::Ended {
            how,
            hold: self.hold().cloned(),
        })
    }

    fn hold(&self) -> Option<&Hold> {
        match self {
            Standing::Holding(h) => Some(h),
            Standing::Ended { hold, .. } => hold.as_ref(),
            Standing::Acquiring => None,
        }
    }
}

impl Ending {
    /// The error an operation that ended this way reports.
    fn error(&self) -> Error {
        match self {
            Ending::NotAcquired(NotAcquired::Busy { holder, etag }) => Error::Busy {
                holder: Box::new(holder.clone()),
                etag: etag.clone(),
            },
            Ending::NotAcquired(NotAcquired::TimedOut { holder }) => Error::TimedOut {
                holder: holder.clone().map(Box::new),
            },
            Ending::NotAcquired(NotAcquired::InUse { holder, etag }) => Error::HoldInUse {
                holder: Box::new(holder.clone()),
                etag: etag.clone(),
            },
            Ending::NotAcquired(NotAcquired::Ended { ended }) => {
                Error::HoldEnded(Box::new(ended.clone()))
            }
            Ending::NotAcquired(reason) => Error::UnknownEvent(Box::new(Event::NotAcquired {
                reason: reason.clone(),
            })),
            Ending::Cancelled => Error::Cancelled,
            Ending::Failed(e) => Error::Store(e.clone()),
            Ending::Lost(reason) => Error::AlreadyLost(Box::new(reason.clone())),
            Ending::Expired => Error::AlreadyExpired,
            Ending::Unknown(event) => Error::UnknownEvent(event.clone()),
            Ending::Released(_) | Ending::Detached => Error::DriverGone,
        }
    }
}

/// The drivers a locker started and has not seen finish: what its `shutdown` waits for.
#[derive(Debug, Default)]
pub(crate) struct Drivers(Mutex<Vec<std::sync::Arc<Shared>>>);

impl Drivers {
    /// Remembers a driver, forgetting finished ones now and then (at 64, 128, 256, ...
    /// entries: amortized, however many locks a client holds).
    pub(crate) fn track(&self, shared: std::sync::Arc<Shared>) {
        let mut drivers = self.list();
        if drivers.len() >= 64 && drivers.len().is_power_of_two() {
            drivers.retain(|d| !d.is_finished());
        }
        drivers.push(shared);
    }

    /// Waits until every driver tracked so far has finished.
    pub(crate) async fn settle<M: crate::generic::Mode>(&self) {
        let drivers = std::mem::take(&mut *self.list());
        for shared in drivers {
            M::wait(&shared, |_| false, None).await;
        }
    }

    fn list(&self) -> MutexGuard<'_, Vec<std::sync::Arc<Shared>>> {
        // Poisoned only by a panic while pushing: the list is still a list.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// How many drivers of this process have not finished (see [`drivers_running`]).
static RUNNING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How many lock drivers in this process have not finished: one per lock being acquired,
/// held or released, and per cleanup of a late write after a handle was dropped. A process
/// about to exit can wait for 0 after releasing its locks, so that nothing of its own is
/// left in the store.
///
/// ```
/// // Nothing was acquired in this process.
/// assert_eq!(sets3lock::drivers_running(), 0);
/// ```
pub fn drivers_running() -> usize {
    RUNNING.load(std::sync::atomic::Ordering::SeqCst)
}

/// Marks the shared state finished when dropped: at the end of a driver, even by a panic.
/// Counted in [`drivers_running`] from its making to its drop.
pub(crate) struct FinishOnDrop(std::sync::Arc<Shared>);

impl FinishOnDrop {
    /// The guard of a driver about to be made.
    pub(crate) fn new(shared: std::sync::Arc<Shared>) -> FinishOnDrop {
        RUNNING.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        FinishOnDrop(shared)
    }
}

impl Drop for FinishOnDrop {
    fn drop(&mut self) {
        self.0.finish();
        RUNNING.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// The state one driver and its handle share. (`pub` as `Snapshot` is.)
#[derive(Debug)]
pub struct Shared {
    snapshot: Mutex<Snapshot>,
    /// Woken on every change, for threads.
    pub(crate) changed: Condvar,
    /// Woken on every change, for tasks (on any runtime).
    pub(crate) signal: crate::driver::signal::Signal,
    /// Rung on every change too: a semaphore waits on one bell for all its slots.
    bell: Option<std::sync::Arc<Shared>>,
}

impl Shared {
    pub(crate) fn new() -> Shared {
        Shared::ringing(None)
    }

    /// A shared state that also wakes `bell`'s waiters on every change.
    pub(crate) fn ringing(bell: Option<std::sync::Arc<Shared>>) -> Shared {
        Shared {
            bell,
            snapshot: Mutex::new(Snapshot {
                standing: Standing::Acquiring,
                release_asked: false,
                detach_asked: false,
                finished: false,
            }),
            changed: Condvar::new(),
            signal: crate::driver::signal::Signal::default(),
        }
    }

    /// Whether the acquisition is over: held, or ended.
    pub(crate) fn is_decided(&self) -> bool {
        !matches!(self.lock().standing, Standing::Acquiring)
    }

    pub(crate) fn get(&self) -> Snapshot {
        self.lock().clone()
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Snapshot> {
        // A poisoned lock only means a panic elsewhere while holding it; the data is a plain
        // snapshot and still usable.
        self.snapshot.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Applies a core event; `to_stamp` converts the core's instants to the drivers' clock.
    pub(crate) fn apply(
        &self,
        event: &Event,
        to_stamp: impl Fn(sets3lock_proto::Instant) -> Stamp,
    ) {
        let mut s = self.lock();
        if let Some(next) = s.standing.after(event, to_stamp) {
            s.standing = next;
            drop(s);
            self.wake();
        }
    }

    /// Asks the driver to let go of the hold without releasing it.
    pub(crate) fn ask_detach(&self) {
        self.lock().detach_asked = true;
        self.wake();
    }

    /// The driver let go of the hold (see [`Ending::Detached`]).
    pub(crate) fn detached(&self) {
        let mut s = self.lock();
        let hold = s.standing.hold().cloned();
        s.standing = Standing::Ended {
            how: Ending::Detached,
            hold,
        };
        drop(s);
        self.wake();
    }

    /// The handle's usual request: release the hold, or cancel the acquisition.
    pub(crate) fn ask_release(&self) {
        self.lock().release_asked = true;
        self.wake();
    }

    pub(crate) fn is_finished(&self) -> bool {
        self.lock().finished
    }

    pub(crate) fn finish(&self) {
        self.lock().finished = true;
        self.wake();
    }

    fn wake(&self) {
        self.changed.notify_all();
        self.signal.notify_all();
        if let Some(bell) = &self.bell {
            // Through the bell's lock: a thread between reading the slots and waiting on the
            // bell holds it, so this ring cannot fall in between and be lost.
            drop(bell.lock());
            bell.wake();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::time::Duration;
    use sets3lock_proto::Instant;

    /// The drivers' clock at the core's origin: a fixed reading.
    fn origin() -> Stamp {
        static ORIGIN: std::sync::OnceLock<Stamp> = std::sync::OnceLock::new();
        *ORIGIN.get_or_init(Stamp::now)
    }

    fn stamp(t: Instant) -> Stamp {
        origin().plus(t.since_origin())
    }

    fn acquired(valid_for: Option<Duration>) -> Event {
        Event::Acquired {
            owner: OwnerId::from_u128(7),
            etag: ETag::parse("e1").expect("etag"),
            valid_until: valid_for.map(|d| Instant::ZERO + d),
            took_over: None,
            token: None,
        }
    }

    #[test]
    fn a_hold_keeps_its_last_write_after_it_ends() {
        let shared = Shared::new();
        shared.apply(&acquired(Some(Duration::from_secs(60))), stamp);
        let renewed = Event::Renewed {
            etag: ETag::parse("e2").expect("etag"),
            valid_until: Some(Instant::ZERO + Duration::from_secs(80)),
        };
        shared.apply(&renewed, stamp);
        let held = shared.get();
        assert!(held.is_held(origin()));
        assert_eq!(held.remaining(origin()), Some(Duration::from_secs(80)));
        shared.apply(&Event::Expired, stamp);
        let ended = shared.get();
        assert_eq!(ended.hold().map(|h| h.etag.as_str()), Some("e2"));
        assert_eq!(ended.loss(origin()), Some(Loss::Expired));
        assert!(matches!(ended.released(), Err(Error::AlreadyExpired)));
    }

    #[test]
    fn non_final_events_do_not_end_an_acquisition() {
        let shared = Shared::new();
        let delayed = Event::RenewalDelayed {
            setback: sets3lock_proto::Setback::LostRace,
        };
        shared.apply(&delayed, stamp);
        assert!(matches!(shared.get().standing, Standing::Acquiring));
        shared.apply(&Event::Cancelled, stamp);
        assert!(matches!(shared.get().acquired(), Err(Error::Cancelled)));
    }

    #[test]
    fn a_driver_that_stopped_while_holding_is_a_loss() {
        let shared = Shared::new();
        shared.apply(&acquired(None), stamp);
        assert_eq!(shared.get().loss(origin()), None);
        shared.finish();
        assert_eq!(shared.get().loss(origin()), Some(Loss::DriverStopped));
    }

    #[test]
    fn a_release_under_way_is_not_held_nor_lost() {
        let shared = Shared::new();
        shared.apply(&acquired(Some(Duration::from_secs(60))), stamp);
        shared.ask_release();
        let s = shared.get();
        assert!(!s.is_held(origin()));
        assert_eq!(s.remaining(origin()), None);
        assert_eq!(s.loss(origin()), None);
    }
}
