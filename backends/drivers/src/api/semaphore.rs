//! At most N holders of a named resource: N slot keys, each an ordinary lock.

use crate::api::held::{Claim, Held};
use crate::api::locks::Locks;
use crate::driver::clock::Stamp;
use crate::driver::mode::Mode;
use crate::driver::state::Shared;
use crate::{Error, Options};
use sets3lock_proto::{LockUrl, SlotChoice, SlotOutcome, SlotStep, Wait};
use std::sync::Arc;

/// The most slots a semaphore may have: each waiter drives one core per slot.
pub const MAX_SLOTS: u32 = 100;

/// A counting semaphore on any store: at most `slots` holders of `s3://bucket/name` (or
/// `az://`, `gs://`) at once.
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
/// each polling its slot at the single lock's cadence ([`sets3lock_proto::Config::poll`], full
/// jitter: waiters do not poll in lockstep) and taking it over when its holder goes stale; the
/// first slot won is kept and the other waits are cancelled (a slot won at the same moment is
/// released at once). So a freed slot is seen within the same bound as a freed lock, for N
/// times the polls of one waiter on one lock (mostly `304`s); starting the wait costs a `PUT`
/// and a `GET` per slot. All the slots' locks share one client and one driver ([`Locks`]).
///
/// Generic over how it waits: [`tokio::Semaphore`](crate::Semaphore) and
/// [`blocking::Semaphore`](crate::blocking::Semaphore). The handle is an ordinary [`Held`]
/// whose [`slot`](Held::slot) says which slot it holds.
#[derive(Debug)]
pub struct Semaphore<M: Mode> {
    name: LockUrl,
    slots: u32,
    /// The slots' locks: one client and one driver for all of them.
    locks: Locks<M>,
}

impl<M: Mode> Semaphore<M> {
    /// A semaphore of `slots` slots (1 to [`MAX_SLOTS`]) named by `url` (`s3://bucket/name`;
    /// a trailing `/` names the same semaphore).
    pub fn new(url: &str, slots: u32, options: Options) -> Result<Self, Error> {
        let name = LockUrl::parse(url.trim_end_matches('/'))?;
        if !(1..=MAX_SLOTS).contains(&slots) {
            return Err(Error::Slots { slots });
        }
        let locks = Locks::new(url, options)?;
        Ok(Semaphore { name, slots, locks })
    }

    /// The semaphore's name.
    pub fn url(&self) -> &LockUrl {
        &self.name
    }

    /// How many slots it has.
    pub fn slots(&self) -> u32 {
        self.slots
    }

    /// How many store requests this semaphore's slots have sent so far.
    pub fn requests(&self) -> u64 {
        self.locks.requests()
    }

    /// The key of slot `i`.
    fn slot_key(&self, i: usize) -> String {
        format!("{}/slot-{i}", self.name.key())
    }

    /// Takes a slot, as [`SlotChoice`] decides (see the type's docs), and measures the
    /// acquisition once (feature `metrics`; the slots' drivers do not).
    pub(crate) async fn acquire_as(&self, wait: Wait) -> Result<Held<M>, Error> {
        let started = std::time::Instant::now();
        let mut contended = false;
        let result = self.take_slot(wait, &mut contended).await;
        let outcome = match &result {
            Ok(_) => "acquired",
            Err(Error::AllSlotsBusy { .. } | Error::Busy { .. }) => "busy",
            Err(Error::TimedOut { .. }) => "timed_out",
            Err(Error::Cancelled) => "cancelled",
            Err(_) => "error",
        };
        let options = self.locks.options();
        let name = options.metrics_name.clone();
        crate::driver::meter::acquisition(
            &name.unwrap_or_else(|| self.name.to_string()),
            options.lock.fenced,
            outcome,
            contended || matches!(outcome, "busy" | "timed_out"),
            started.elapsed(),
        );
        result
    }

    /// Takes a slot; `contended` is set when a slot was found held on the way.
    async fn take_slot(&self, wait: Wait, contended: &mut bool) -> Result<Held<M>, Error> {
        let deadline = match wait {
            Wait::Timeout(d) => Some(Stamp::now().plus(d)),
            Wait::No | Wait::Forever => None,
        };
        // One check covers every slot: they share the endpoint and the bucket.
        self.locks.check_store(&self.slot_key(0), wait).await?;
        let (mut choice, mut steps) =
            SlotChoice::new(self.slots(), random_u32()?, wait.is_try_once());
        let bell = Arc::new(Shared::new());
        // Each slot's acquisition under way, and whether its end was reported to `choice`.
        let mut claims: Vec<Option<(Claim<M>, LockUrl, bool)>> =
            (0..self.slots).map(|_| None).collect();
        loop {
            for step in steps.drain(..) {
                let i = step_slot(&step);
                match step {
                    SlotStep::Acquire { try_once, .. } => {
                        if deadline.is_some_and(|d| Stamp::now() >= d) {
                            return Err(Error::TimedOut { holder: None });
                        }
                        let wait = match (try_once, deadline) {
                            (true, _) => Wait::No,
                            (false, Some(d)) => Wait::Timeout(d.since(Stamp::now())),
                            (false, None) => wait,
                        };
                        let key = self.slot_key(i);
                        let (claim, url) = self.locks.start(&key, wait, Some(bell.clone()))?;
                        claims[i] = Some((claim, url, false));
                    }
                    // Dropped: the driver cancels the acquisition, or releases the slot.
                    SlotStep::Cancel { .. } | SlotStep::Release { .. } => drop(claims[i].take()),
                    SlotStep::Won { .. } => {
                        let (claim, url, _) = claims[i].take().ok_or(Error::DriverGone)?;
                        // Every other claim is dropped on the way out: cancelled, or given
                        // back if won meanwhile.
                        return Ok(self.locks.acquired(claim, url).await?.in_slot(i));
                    }
                    SlotStep::AllBusy => {
                        return Err(Error::AllSlotsBusy {
                            slots: self.slots(),
                        })
                    }
                    SlotStep::TimedOut => return Err(Error::TimedOut { holder: None }),
                    SlotStep::Failed { .. } => {
                        let (claim, ..) = claims[i].take().ok_or(Error::DriverGone)?;
                        let seen = claim.shared().get();
                        return Err(seen.acquired().err().unwrap_or(Error::DriverGone));
                    }
                }
            }
            // Until an acquisition under way has ended; then tell `choice` how.
            let ended = |_: &crate::driver::state::Snapshot| {
                claims
                    .iter()
                    .flatten()
                    .any(|(c, _, reported)| !reported && over(c))
            };
            // The deadline bounds the try-once pass too (its tries have none of their own): at
            // the deadline the acquisitions still under way are dropped, which cancels them.
            M::wait(&bell, ended, deadline).await;
            if deadline.is_some_and(|d| Stamp::now() >= d) && !choice.is_over() {
                let decided = claims.iter().flatten().any(|(c, _, r)| !r && over(c));
                if !decided {
                    return Err(Error::TimedOut { holder: None });
                }
            }
            for (i, entry) in claims.iter_mut().enumerate() {
                let Some((claim, _, reported)) = entry else {
                    continue;
                };
                if *reported || !over(claim) {
                    continue;
                }
                *reported = true;
                let outcome = outcome(&claim.shared().get());
                *contended |= matches!(outcome, SlotOutcome::Busy);
                steps.extend(choice.settled(i as u32, outcome));
            }
        }
    }

    /// Waits until every driver this semaphore started has finished.
    pub(crate) async fn settle(&self) {
        self.locks.settle().await;
    }
}

/// Whether a slot's acquisition is over: decided, or its driver gone (which then reads as a
/// failure).
fn over<M: Mode>(claim: &Claim<M>) -> bool {
    claim.shared().is_decided() || claim.shared().is_finished()
}

/// Where the try-once pass starts: at random, so that waiters arriving together spread out.
fn random_u32() -> Result<u32, Error> {
    let mut b = [0u8; 4];
    getrandom::fill(&mut b).map_err(Error::no_randomness)?;
    Ok(u32::from_le_bytes(b))
}

/// The slot a step is about (0 for the steps about none).
fn step_slot(step: &SlotStep) -> usize {
    match *step {
        SlotStep::Acquire { slot, .. }
        | SlotStep::Cancel { slot }
        | SlotStep::Release { slot }
        | SlotStep::Won { slot }
        | SlotStep::Failed { slot } => slot as usize,
        _ => 0,
    }
}

/// How a slot's acquisition ended, from its driver's state.
fn outcome(seen: &crate::driver::state::Snapshot) -> SlotOutcome {
    match seen.acquired() {
        Ok(_) => SlotOutcome::Acquired,
        // Won, then lost or expired before it was looked at: not ours any more, like a busy
        // slot (the others may still be won).
        Err(
            Error::Busy { .. } | Error::Cancelled | Error::AlreadyLost(_) | Error::AlreadyExpired,
        ) => SlotOutcome::Busy,
        Err(Error::TimedOut { .. }) => SlotOutcome::TimedOut,
        Err(_) => SlotOutcome::Failed,
    }
}
