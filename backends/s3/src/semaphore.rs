//! At most N holders of a named resource: N slot keys, each an ordinary lock.

use crate::clock::Stamp;
use crate::held::Held;
use crate::locker::Locker;
use crate::mode::Mode;
use crate::state::Shared;
use crate::{Error, S3Options};
use sets3lock::{LockUrl, Wait};
use std::sync::Arc;

/// The most slots a semaphore may have: each waiter drives one core per slot.
pub const MAX_SLOTS: u32 = 100;

/// A counting semaphore on S3: at most `slots` holders of `s3://bucket/name` at once.
///
/// Slot `i` is the ordinary lock `s3://bucket/name/slot-i` (lease, renewal, takeover of a
/// crashed holder, fencing: all as for one lock), so "at most N holders" is the lock's own
/// mutual exclusion, N times. **Everyone using a semaphore must give it the same number of
/// slots**: a process told 5 would use slots 3 and 4 that one told 3 never looks at.
///
/// How a slot is taken: first one try-once pass over the slots, in an order that starts at a
/// random slot (waiters arriving together spread over the free slots instead of all racing
/// for slot 0): with a slot free this costs one `PUT` per busy slot passed, plus a `GET` each.
/// If every slot is held, the waiter then waits on all of them at once, one core per slot,
/// each polling its slot at the single lock's cadence ([`sets3lock::Config::poll`], full
/// jitter: waiters do not poll in lockstep) and taking it over when its holder goes stale; the
/// first slot won is kept and the other waits are cancelled (a slot won at the same moment is
/// released at once). So a freed slot is seen within the same bound as a freed lock, for N
/// times the polls of one waiter on one lock (mostly `304`s).
///
/// Generic over how it waits: [`tokio::Semaphore`](crate::tokio::Semaphore) and
/// [`blocking::Semaphore`](crate::blocking::Semaphore). The handle is an ordinary [`Held`]
/// whose [`slot`](Held::slot) says which slot it holds.
#[derive(Debug)]
pub struct Semaphore<M: Mode> {
    name: LockUrl,
    slots: Vec<Locker<M>>,
}

impl<M: Mode> Semaphore<M> {
    /// A semaphore of `slots` slots (1 to [`MAX_SLOTS`]) named by `url` (`s3://bucket/name`).
    pub fn new(url: &str, slots: u32, options: S3Options) -> Result<Self, Error> {
        let name = LockUrl::parse(url)?;
        if !(1..=MAX_SLOTS).contains(&slots) {
            return Err(Error::Slots { slots });
        }
        let slots = (0..slots)
            .map(|i| Locker::new(&slot_url(&name, i), options.clone()))
            .collect::<Result<_, _>>()?;
        Ok(Semaphore { name, slots })
    }

    /// The semaphore's name.
    pub fn url(&self) -> &LockUrl {
        &self.name
    }

    /// How many slots it has.
    pub fn slots(&self) -> u32 {
        u32::try_from(self.slots.len()).unwrap_or(u32::MAX)
    }

    /// How many S3 requests this semaphore's slots have sent so far.
    pub fn requests(&self) -> u64 {
        self.slots.iter().map(Locker::requests).sum()
    }

    /// Takes a slot (see the type's docs for how).
    pub(crate) async fn acquire_as(&self, wait: Wait) -> Result<Held<M>, Error> {
        let first = self.slots.first().ok_or(Error::Slots { slots: 0 })?;
        let deadline = match wait {
            Wait::Timeout(d) => Some(Stamp::now().plus(d)),
            Wait::No | Wait::Forever => None,
        };
        // One check covers every slot: they share the endpoint and the bucket.
        first.check_store(wait).await?;
        let n = self.slots.len();
        let start = random_below(n)?;
        for i in (0..n).map(|k| (start + k) % n) {
            match self.slots[i].acquire_checked(Wait::No).await {
                Ok(held) => return Ok(held.in_slot(i)),
                Err(Error::Busy { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        let wait = match (wait, deadline) {
            (Wait::No, _) => {
                return Err(Error::AllSlotsBusy {
                    slots: self.slots(),
                })
            }
            (_, Some(d)) => Wait::Timeout(d.since(Stamp::now())),
            (w, None) => w,
        };
        self.wait_for_any(wait).await
    }

    /// Waits on every slot at once; keeps the first won.
    async fn wait_for_any(&self, wait: Wait) -> Result<Held<M>, Error> {
        let bell = Arc::new(Shared::new());
        let mut claims = Vec::with_capacity(self.slots.len());
        for slot in &self.slots {
            claims.push(slot.start_ringing(wait, Some(bell.clone()))?);
        }
        let decided = |_: &crate::state::Snapshot| {
            claims.iter().any(|c| c.shared().is_holding())
                || claims.iter().all(|c| c.shared().is_decided())
        };
        M::wait(&bell, decided, None).await;
        let won = claims.iter().position(|c| c.shared().is_holding());
        let mut kept = None;
        let mut errors = Vec::new();
        for (i, claim) in claims.into_iter().enumerate() {
            if Some(i) == won {
                kept = Some((i, claim));
            } else if claim.shared().is_decided() && !claim.shared().is_holding() {
                errors.push(claim.shared().get().acquired().err());
            }
            // Any other: dropped, which cancels its wait (or releases a slot won just now).
        }
        match kept {
            Some((i, claim)) => Ok(self.slots[i].acquired(claim).await?.in_slot(i)),
            None => Err(worst(errors.into_iter().flatten())),
        }
    }

    /// Waits until every driver this semaphore started has finished.
    pub(crate) async fn settle(&self) {
        for slot in &self.slots {
            slot.settle().await;
        }
    }
}

/// `s3://bucket/name/slot-i`.
pub(crate) fn slot_url(name: &LockUrl, i: u32) -> String {
    format!("{name}/slot-{i}")
}

/// The error that says most: a failure over a timeout.
fn worst(errors: impl Iterator<Item = Error>) -> Error {
    let mut timed_out = None;
    for e in errors {
        match e {
            Error::TimedOut { .. } | Error::Busy { .. } | Error::Cancelled => {
                timed_out.get_or_insert(Error::TimedOut { holder: None });
            }
            other => return other,
        }
    }
    timed_out.unwrap_or(Error::DriverGone)
}

/// A random index below `n` (`n` > 0).
fn random_below(n: usize) -> Result<usize, Error> {
    let mut b = [0u8; 8];
    getrandom::fill(&mut b).map_err(Error::NoRandomness)?;
    Ok((u64::from_le_bytes(b) % n as u64) as usize)
}
