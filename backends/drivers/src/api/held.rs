//! The handle of a held lock: the part of both drivers' handles that does not wait.

use crate::driver::clock::Stamp;
use crate::driver::mode::Mode;
use crate::driver::state::{Ending, Hold, Loss, Shared, Standing};
use crate::Error;
use sets3lock_proto::{ETag, Handle, LockUrl, LostReason, OwnerId, ReleaseOutcome};
use std::marker::PhantomData;
use std::sync::Arc;

/// A held lock, renewed in the background until it is released or dropped.
///
/// Generic over how it waits: [`tokio::Held`](crate::Held) (async `lost` and
/// `release`) and [`blocking::Held`](crate::blocking::Held) (blocking `wait_lost` and
/// `release`). What dropping it does is the mode's: see those.
#[derive(Debug)]
pub struct Held<M: Mode> {
    /// The hold as acquired: the owner never changes; the ETag and the validity move on with
    /// every renewal (read them from the shared state).
    acquired: Hold,
    url: LockUrl,
    /// How long a confirmed write keeps the hold valid (`None` with a zero lease).
    validity: Option<std::time::Duration>,
    /// The slot, when this is a semaphore's.
    slot: Option<u32>,
    /// The lease renewals write: what the hold's [`Handle`] names.
    lease: std::time::Duration,
    claim: Claim<M>,
}

/// How a hold is doing, for a readiness probe or a leader's health check
/// ([`Held::health`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Health {
    /// Renewals are landing on time (or the lease is zero: nothing to renew).
    Renewing,
    /// Less than half the validity is left: at least one renewal did not land when due (the
    /// store is slow, failing or unreachable). The hold is still valid for `remaining`, and
    /// ends then unless a renewal lands first: stop taking on new work.
    Behind {
        /// How long the hold stays valid if no renewal lands.
        remaining: std::time::Duration,
    },
    /// The hold has ended: lost, expired or released.
    Ended,
}

impl<M: Mode> Held<M> {
    pub(crate) fn new(
        acquired: Hold,
        url: LockUrl,
        lock: &sets3lock_proto::Config,
        claim: Claim<M>,
    ) -> Held<M> {
        let lease = lock.lease;
        let validity = (!lease.is_zero()).then(|| lock.validity());
        Held {
            acquired,
            url,
            validity,
            slot: None,
            lease,
            claim,
        }
    }

    /// Waits for the acquisition `claim` (of the lock at `url`, with the settings `lock`) to
    /// end: the handle, or why not.
    pub(crate) async fn when_acquired(
        claim: Claim<M>,
        url: LockUrl,
        lock: &sets3lock_proto::Config,
    ) -> Result<Held<M>, Error> {
        let over = |s: &crate::driver::state::Snapshot| !matches!(s.standing, Standing::Acquiring);
        let hold = M::wait(claim.shared(), over, None).await.acquired()?;
        Ok(Held::new(hold, url, lock, claim))
    }

    /// The same hold, as slot `i` of a semaphore.
    pub(crate) fn in_slot(self, i: usize) -> Held<M> {
        Held {
            slot: u32::try_from(i).ok(),
            ..self
        }
    }

    /// Which slot this is, when the hold is a [`Semaphore`](crate::Semaphore)'s (from 0; its
    /// lock is `<name>/slot-<i>`, the [`url`](Held::url)).
    pub fn slot(&self) -> Option<u32> {
        self.slot
    }

    /// This hold's owner id (in the lock record).
    pub fn owner(&self) -> OwnerId {
        self.acquired.owner
    }

    /// The ETag of our latest confirmed write (after the hold ended: the last one).
    pub fn etag(&self) -> ETag {
        // The shared state has a hold from the acquisition on, which is before any handle.
        match self.claim.shared.get().hold() {
            Some(h) => h.etag.clone(),
            None => self.acquired.etag.clone(),
        }
    }

    /// The fencing token of this grant, when the key is fenced (`Config::fenced`, or a key
    /// that already holds a fenced record): larger than every token granted before on this
    /// key. Hand it to the resource the lock protects, and have the resource refuse any
    /// token smaller than the largest it has seen.
    pub fn token(&self) -> Option<u64> {
        self.acquired.token
    }

    /// The lock's address.
    pub fn url(&self) -> &LockUrl {
        &self.url
    }

    /// A printable name for this hold, so that another process can continue it
    /// ([`Locker::adopt`](crate::Locker), `renew_handle`, `release_handle`): the URL, the
    /// owner id, the lease and the fencing token, and no credential. It stays the same across
    /// renewals.
    ///
    /// ```no_run
    /// # fn run(held: sets3lock::blocking::Held) {
    /// let handle = held.handle();
    /// println!("{handle}"); // s3://bucket/key#sets3lock-hold:owner=…,lease_ms=…
    /// # }
    /// ```
    pub fn handle(&self) -> Handle {
        Handle {
            url: self.url.clone(),
            owner: self.acquired.owner,
            lease: self.lease,
            token: self.acquired.token,
        }
    }

    /// How long the hold stays valid unless a renewal lands first, by a clock that counts
    /// through system suspend (`None` with a zero lease, or once the hold has ended).
    pub fn remaining_validity(&self) -> Option<std::time::Duration> {
        self.claim.shared.get().remaining(Stamp::now())
    }

    /// How the hold is doing: renewing on time, behind (a renewal is late, the hold ends soon
    /// unless one lands), or ended. Cheap (no request): call it from a readiness probe.
    ///
    /// A renewal is sent every third of the lease and each confirmed one restores the whole
    /// validity, so while renewals land more than half of it is left; less means a renewal
    /// is overdue. (That margin is about a sixth of the lease with the default 1% drift
    /// bound: a renewal whose round trip takes longer than that reads as behind.)
    pub fn health(&self) -> Health {
        let snapshot = self.claim.shared.get();
        let now = Stamp::now();
        if !snapshot.is_held(now) {
            return Health::Ended;
        }
        match (snapshot.remaining(now), self.validity) {
            (Some(remaining), Some(validity)) if remaining < validity / 2 => {
                Health::Behind { remaining }
            }
            _ => Health::Renewing,
        }
    }

    /// Whether the lock is held and valid now.
    pub fn is_held(&self) -> bool {
        self.claim.shared.get().is_held(Stamp::now())
    }

    /// Waits until the hold is lost or expires (then the loss), or until `deadline` (then
    /// `None`). Wakes when the validity ends or moves (a renewal), and on every change.
    pub(crate) async fn wait_loss(&self, deadline: Option<Stamp>) -> Option<Loss> {
        wait_loss::<M>(&self.claim.shared, deadline).await
    }

    /// A watch on this hold's loss that does not borrow the handle: it can wait in one task
    /// (or thread) while another renews nothing, checks [`health`](Held::health) or
    /// releases. After a release it reports [`Loss::DriverStopped`].
    ///
    /// ```no_run
    /// # #[cfg(feature = "tokio")] mod tokio_face {
    /// # async fn run(held: sets3lock::Held) {
    /// let watch = held.loss_watch();
    /// tokio::spawn(async move { eprintln!("lost: {:?}", watch.lost().await) });
    /// held.release().await.ok();
    /// # } }
    /// ```
    pub fn loss_watch(&self) -> LossWatch<M> {
        LossWatch {
            shared: self.claim.shared.clone(),
            mode: PhantomData,
        }
    }

    /// Lets go of the hold without releasing it: the driver stops renewing it, parks the
    /// record (see [`Lock::detach`](crate::proto::Lock::detach)) and finishes, and the lock
    /// object stays, its lease running. Returns the hold's handle; an error if the hold had
    /// already ended (lost or expired), or the park found it taken over or gone. A park that
    /// failed otherwise (the store unreachable) leaves the hold as it stood, still named by
    /// the handle: a release from it then rests the lock rather than deleting it.
    pub(crate) async fn let_go(self) -> Result<Handle, Error> {
        let handle = self.handle();
        let shared = &self.claim.shared;
        shared.ask_detach();
        let ended =
            |s: &crate::driver::state::Snapshot| matches!(s.standing, Standing::Ended { .. });
        let seen = M::wait(shared, ended, None).await;
        match &seen.standing {
            Standing::Ended {
                how:
                    Ending::Detached
                    | Ending::Failed(_)
                    | Ending::Released(ReleaseOutcome::HeldElsewhere),
                ..
            } => Ok(handle),
            Standing::Ended {
                how: Ending::Released(ReleaseOutcome::TakenOver),
                ..
            } => Err(Error::AlreadyLost(Box::new(LostReason::Overwritten {
                holder: None,
            }))),
            Standing::Ended {
                how: Ending::Released(_),
                ..
            } => Err(Error::AlreadyLost(Box::new(LostReason::Deleted))),
            _ => match seen.loss(Stamp::now()) {
                Some(Loss::Lost(reason)) => Err(Error::AlreadyLost(Box::new(reason))),
                Some(Loss::Expired) => Err(Error::AlreadyExpired),
                _ => Err(Error::DriverGone),
            },
        }
    }

    /// Releases the lock: asks the driver, and waits for what the conditional delete found.
    pub(crate) async fn end(self) -> Result<ReleaseOutcome, Error> {
        let shared = &self.claim.shared;
        shared.ask_release();
        let ended =
            |s: &crate::driver::state::Snapshot| matches!(s.standing, Standing::Ended { .. });
        M::wait(shared, ended, None).await.released()
    }
}

/// Waits until the hold in `shared` is lost or expires (then the loss), or until `deadline`
/// (then `None`). Wakes when the validity ends or moves (a renewal), and on every change.
async fn wait_loss<M: Mode>(shared: &Shared, deadline: Option<Stamp>) -> Option<Loss> {
    loop {
        let seen = shared.get();
        let now = Stamp::now();
        if let Some(loss) = seen.loss(now) {
            return Some(loss);
        }
        if deadline.is_some_and(|d| now >= d) {
            return None;
        }
        let valid_until = seen.valid_until();
        let wake = match (valid_until, deadline) {
            (Some(v), Some(d)) => Some(v.min(d)),
            (v, d) => v.or(d),
        };
        let moved = move |s: &crate::driver::state::Snapshot| {
            s.valid_until() != valid_until || s.loss(Stamp::now()).is_some()
        };
        M::wait(shared, moved, wake).await;
    }
}

/// Waits for one hold's loss without borrowing its [`Held`] (from [`Held::loss_watch`]).
#[derive(Debug)]
pub struct LossWatch<M: Mode> {
    shared: Arc<Shared>,
    mode: PhantomData<M>,
}

impl<M: Mode> Clone for LossWatch<M> {
    fn clone(&self) -> Self {
        LossWatch {
            shared: self.shared.clone(),
            mode: PhantomData,
        }
    }
}

impl<M: Mode> LossWatch<M> {
    /// Waits until the hold is lost or expires (then the loss), or until `deadline` (then
    /// `None`).
    pub(crate) async fn wait(&self, deadline: Option<Stamp>) -> Option<Loss> {
        wait_loss::<M>(&self.shared, deadline).await
    }

    /// The loss, if the hold has ended (a release shows as [`Loss::DriverStopped`]).
    pub fn loss(&self) -> Option<Loss> {
        self.shared.get().loss(Stamp::now())
    }
}

/// The user's side of one driver: the acquisition's, then the handle's. Dropped, it asks the
/// driver to release (or to cancel the acquisition), then does what the mode does on drop.
#[derive(Debug)]
pub(crate) struct Claim<M: Mode> {
    shared: Arc<Shared>,
    mode: PhantomData<M>,
}

impl<M: Mode> Claim<M> {
    pub(crate) fn new(shared: Arc<Shared>) -> Claim<M> {
        Claim {
            shared,
            mode: PhantomData,
        }
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }
}

impl<M: Mode> Drop for Claim<M> {
    fn drop(&mut self) {
        self.shared.ask_release();
        M::dropped(&self.shared);
    }
}
