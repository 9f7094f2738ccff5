//! One simulated process: a core, the clock it reads, and how far through its plan it is.

use super::tape::{Tape, Taped};
use super::{ProcessPlan, Round};
use crate::DriftClock;
use core::time::Duration;
use sets3lock_proto::{Config, ConfigError, ETag, Lock, OwnerId, RequestId, Resume, SlotChoice};
use std::collections::{BTreeMap, BTreeSet};

/// Where a process is in its plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stage {
    /// Waiting to start the current round (or for its core to finish cleaning up).
    BeforeRound,
    /// Asked its core to acquire; waiting for the final event.
    Acquiring,
    /// Acquired; holding until the plan says to exit.
    Holding,
    /// Asked its core to release; waiting for the final event.
    Releasing,
    /// Every round done. Its core is still driven: writes of ours may still need cleaning up.
    Finished,
    /// Dead: nothing more from it.
    Crashed,
}

pub(super) struct Process {
    /// One core per slot: one for a lock, N for a semaphore of N slots.
    pub(super) locks: Vec<Taped>,
    /// The slot of the round's hold (0 for a lock).
    pub(super) slot: usize,
    /// A semaphore's acquisition: which slots to try, wait on, keep and give back.
    pub(super) choice: Option<SlotChoice>,
    /// A semaphore's acquisitions to start on each slot once its core is idle (still cleaning
    /// up after an earlier try): `Some(try_once)`.
    pub(super) pending: Vec<Option<bool>>,
    /// Since when (real time) it has held a slot that is not the one it keeps.
    pub(super) extra_since: Option<Duration>,
    /// When (by its clock) the round's acquisition started, and how long it may wait: what a
    /// semaphore's waits on its slots count from.
    pub(super) round_started: sets3lock_proto::Instant,
    pub(super) round_wait: sets3lock_proto::Wait,
    pub(super) clock: DriftClock,
    pub(super) plan: ProcessPlan,
    /// The index of the current round in the plan.
    pub(super) round: usize,
    pub(super) stage: Stage,
    pub(super) acquired_this_round: bool,
    /// The current hold's owner id and token, when it is fenced.
    pub(super) hold: Option<(OwnerId, u64)>,
    /// The current hold's owner id (from its `Acquired` to the round's end).
    pub(super) hold_owner: Option<OwnerId>,
    /// Real time until which the process is frozen.
    pub(super) paused_until: Duration,
    /// Every owner id its core has written: the objects its release and cleanup may remove.
    pub(super) owners: BTreeSet<OwnerId>,
    /// The current hold (and its release) has been unimpeded so far: every request of it was
    /// delivered and answered in time, the process was not frozen for long, and nobody
    /// touched the bucket behind its back. Such a hold must not be lost, and its release
    /// must end quickly with the object removed (or freed).
    pub(super) unimpeded: bool,
    /// A renewal of the current hold was lost (`Some`), and is to be ridden out: every
    /// later request of the hold must come back within this round trip.
    pub(super) forgiven: Option<Duration>,
    /// The current hold was renewed after its lost renewal (counted in the report).
    pub(super) rode_out: bool,
    /// The current hold's stop point (`Config::stop_before` ahead of its validity's end, on
    /// its clock), when one is set, and whether the hold began with room to renew before it
    /// (then every unimpeded renewal must land before it).
    pub(super) stop_at: Option<sets3lock_proto::Instant>,
    pub(super) stop_checked: bool,
    /// Requests sent since the release was asked for.
    pub(super) release_requests: u32,
    /// A request its core sent already holding, before the simulation saw the `Acquired`
    /// event (the first renewal, when it was due at once), was impeded.
    pub(super) impeded_before_the_event: bool,
    /// When (by its clock) each of its writes still on the way was sent, by slot and
    /// request id.
    pub(super) write_sent:
        std::collections::BTreeMap<(usize, sets3lock_proto::RequestId), sets3lock_proto::Instant>,
    /// The send time of its latest write that the server applied, by slot.
    pub(super) latest_applied_write: Vec<Option<sets3lock_proto::Instant>>,
    /// Generations of the timer and of the plan's next step: a scheduled wake-up whose
    /// generation is no longer current has been superseded.
    pub(super) timer_gen: u64,
    pub(super) step_gen: u64,
    /// The round's adoption of a handle, from its start until it ends (`Acquired`, or the
    /// round's end).
    pub(super) adopting: Option<Adoption>,
    /// The round started by adopting a handle (it waits for nothing).
    pub(super) adopted_this_round: bool,
    /// Every version of the lock object this process wrote that the server applied, by slot
    /// and ETag: the writer id it carries.
    pub(super) own_writes: BTreeMap<(usize, ETag), Option<u64>>,
    /// The writer id of the current hold of each slot (from its `Acquired`).
    pub(super) writer: Vec<Option<Option<u64>>>,
    /// The last request sent on each slot: the one its core waits for, unless it let go.
    pub(super) last_request: Vec<Option<RequestId>>,
    /// By slot: the highest fencing token it has seen on the key (in a record its core was
    /// handed, or a grant it reported), over all its rounds.
    pub(super) seen_token: Vec<Option<u64>>,
    /// What each of its writes still on the way writes, by slot and request id.
    pub(super) written: BTreeMap<(usize, RequestId), super::Written>,
}

/// A handle being continued.
#[derive(Clone, Copy, Debug)]
pub(super) struct Adoption {
    pub(super) token: Option<u64>,
    pub(super) then: Resume,
    /// The hold had ended when the adoption began: no live record of it was there.
    pub(super) ended: bool,
    /// The writer id of its writes (from the first it sent).
    pub(super) writer: Option<Option<u64>>,
}

impl Process {
    /// Process number `index` of a simulation seeded with `seed`, with `slots` cores: each
    /// core gets a seed of its own, so owner ids and jitter differ between processes, slots
    /// and runs.
    pub(super) fn new(
        config: &Config,
        plan: ProcessPlan,
        seed: u64,
        index: usize,
        slots: usize,
        record: bool,
    ) -> Result<Process, ConfigError> {
        let config = Config {
            fenced: plan.fenced.unwrap_or(config.fenced),
            ..config.clone()
        };
        let locks = (0..slots)
            .map(|slot| {
                let mut core_seed = [0u8; 32];
                core_seed[..8].copy_from_slice(&seed.to_le_bytes());
                core_seed[8..16].copy_from_slice(&(index as u64).to_le_bytes());
                // Slot 0's seed is a lock's: a simulation of locks runs as it always has.
                core_seed[16..24].copy_from_slice(&(slot as u64).to_le_bytes());
                let tape = record.then(|| Tape {
                    process: index,
                    slot,
                    config: config.clone(),
                    seed: core_seed,
                    steps: Vec::new(),
                });
                Lock::new(config.clone(), core_seed).map(|lock| Taped::new(lock, tape))
            })
            .collect::<Result<_, _>>()?;
        Ok(Process {
            locks,
            slot: 0,
            choice: None,
            pending: vec![None; slots],
            extra_since: None,
            round_started: sets3lock_proto::Instant::ZERO,
            round_wait: sets3lock_proto::Wait::No,
            clock: DriftClock::new(plan.clock_offset, plan.drift_ppm),
            plan,
            round: 0,
            stage: Stage::BeforeRound,
            acquired_this_round: false,
            hold: None,
            hold_owner: None,
            paused_until: Duration::ZERO,
            owners: BTreeSet::new(),
            unimpeded: false,
            release_requests: 0,
            impeded_before_the_event: false,
            forgiven: None,
            rode_out: false,
            stop_at: None,
            stop_checked: false,
            write_sent: std::collections::BTreeMap::new(),
            latest_applied_write: vec![None; slots],
            timer_gen: 0,
            step_gen: 0,
            adopting: None,
            adopted_this_round: false,
            own_writes: BTreeMap::new(),
            writer: vec![None; slots],
            last_request: vec![None; slots],
            seen_token: vec![None; slots],
            written: BTreeMap::new(),
        })
    }

    /// The current round; `None` once the plan is done.
    pub(super) fn next_round(&self) -> Option<&Round> {
        self.plan.rounds.get(self.round)
    }

    /// The round in progress. Only called between a round's start and its final event: the
    /// core ends each operation with exactly one final event, so there is one.
    pub(super) fn round(&self) -> &Round {
        &self.plan.rounds[self.round]
    }

    /// Whether the process, alive, considers itself holding slot `slot`'s lock, valid, at
    /// real time `now` (a semaphore's process may, for a moment, hold a slot it is giving
    /// back).
    pub(super) fn claims_slot(&self, now: Duration, slot: usize) -> bool {
        self.stage != Stage::Crashed && self.locks[slot].is_held(self.clock.local(now))
    }

    /// The owner id of the hold slot `slot`'s core is in (valid or not), unless crashed.
    pub(super) fn holds(&self, slot: usize) -> Option<OwnerId> {
        if self.stage == Stage::Crashed {
            return None;
        }
        self.locks[slot].holding().map(|(owner, _)| owner)
    }

    /// Whether every core is idle.
    pub(super) fn is_idle(&self) -> bool {
        self.locks.iter().all(|lock| lock.is_idle())
    }

    /// Supersedes any scheduled step; returns the generation of the next one.
    pub(super) fn next_step_gen(&mut self) -> u64 {
        self.step_gen += 1;
        self.step_gen
    }

    /// Supersedes any scheduled timer; returns the generation of the next one.
    pub(super) fn next_timer_gen(&mut self) -> u64 {
        self.timer_gen += 1;
        self.timer_gen
    }
}
