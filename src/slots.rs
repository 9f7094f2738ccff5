//! A semaphore's acquisition: which of its N slots to try, wait on, keep and give back.

use std::collections::BTreeSet;

/// The decisions of one acquisition of a counting semaphore, without the locks.
///
/// A semaphore of N slots is N ordinary locks (slot `i` is the key `<name>/slot-<i>`), each
/// run by its own [`Lock`](crate::Lock); at most N holders at once is then each lock's own
/// mutual exclusion. This state machine says what to do with those locks so that a waiter gets
/// one slot, soon, without hoarding and without polling all slots in lockstep:
///
/// 1. **A try-once pass**: slot `start`, then `start + 1`, … (mod N), each tried once
///    ([`SlotStep::Acquire`] with `try_once`), one at a time. A random `start` spreads waiters
///    arriving together over the free slots. The first slot won is kept.
/// 2. If every slot was busy and the acquisition may wait: **wait on every slot at once**,
///    each lock waiting its own way (polling its holder with jitter, taking over a stale one),
///    so a freed slot is seen within the same bound as a freed lock.
/// 3. The first slot won is kept ([`SlotStep::Won`]); every other wait is cancelled
///    ([`SlotStep::Cancel`]); a slot won after that (its acquisition ended before the cancel
///    reached it) is given back at once ([`SlotStep::Release`]).
///
/// The driver reports each slot's acquisition outcome with [`SlotChoice::settled`] and carries
/// out the steps it gets back; a step ending the acquisition ([`SlotStep::is_final`]) comes
/// exactly once.
///
/// ```
/// use sets3lock_proto::{SlotChoice, SlotOutcome, SlotStep};
/// let (mut choice, steps) = SlotChoice::new(3, 1, false);
/// assert_eq!(steps, vec![SlotStep::Acquire { slot: 1, try_once: true }]);
/// let steps = choice.settled(1, SlotOutcome::Busy);
/// assert_eq!(steps, vec![SlotStep::Acquire { slot: 2, try_once: true }]);
/// let steps = choice.settled(2, SlotOutcome::Acquired);
/// assert_eq!(steps, vec![SlotStep::Won { slot: 2 }]);
/// ```
#[derive(Clone, Debug)]
pub struct SlotChoice {
    slots: u32,
    start: u32,
    try_once: bool,
    phase: Phase,
    /// Slots whose acquisition was started and has not been reported.
    running: BTreeSet<u32>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Phase {
    /// Trying the `k`-th slot of the pass.
    Trying(u32),
    /// Waiting on these slots.
    Waiting(BTreeSet<u32>),
    /// The acquisition has ended; the slot kept, if any.
    Over(Option<u32>),
}

/// How one slot's acquisition ended, as its lock reported it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotOutcome {
    /// The slot's lock was acquired.
    Acquired,
    /// Held by someone else (a try-once acquisition), or cancelled.
    Busy,
    /// The wait ran out.
    TimedOut,
    /// It failed for good (the store refused, or kept failing): the semaphore's acquisition
    /// fails with this slot's error.
    Failed,
}

/// What the driver does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotStep {
    /// Start acquiring this slot's lock: once (`try_once`), or waiting as the semaphore's
    /// acquisition may.
    Acquire {
        /// The slot.
        slot: u32,
        /// Try once rather than wait.
        try_once: bool,
    },
    /// Cancel this slot's acquisition (it may still end with the slot won: report it).
    Cancel {
        /// The slot.
        slot: u32,
    },
    /// Release this slot's lock: it was won after another slot was kept.
    Release {
        /// The slot.
        slot: u32,
    },
    /// Final: the acquisition holds this slot.
    Won {
        /// The slot.
        slot: u32,
    },
    /// Final: a try-once acquisition found every slot held.
    AllBusy,
    /// Final: the wait ran out on every slot.
    TimedOut,
    /// Final: this slot's acquisition failed for good (report its error).
    Failed {
        /// The slot.
        slot: u32,
    },
}

impl SlotStep {
    /// Whether this step ends the semaphore's acquisition.
    ///
    /// ```
    /// assert!(sets3lock_proto::SlotStep::AllBusy.is_final());
    /// ```
    pub fn is_final(&self) -> bool {
        matches!(
            self,
            SlotStep::Won { .. } | SlotStep::AllBusy | SlotStep::TimedOut | SlotStep::Failed { .. }
        )
    }
}

impl SlotChoice {
    /// An acquisition of one of `slots` slots (at least 1), whose try-once pass starts at
    /// `start` (taken mod `slots`: draw it at random); `try_once` if it must not wait. Returns
    /// the first steps.
    pub fn new(slots: u32, start: u32, try_once: bool) -> (SlotChoice, Vec<SlotStep>) {
        let slots = slots.max(1);
        let start = start % slots;
        let choice = SlotChoice {
            slots,
            start,
            try_once,
            phase: Phase::Trying(0),
            running: BTreeSet::from([start]),
        };
        let first = SlotStep::Acquire {
            slot: start,
            try_once: true,
        };
        (choice, vec![first])
    }

    /// Whether the acquisition has ended (a final step was given).
    pub fn is_over(&self) -> bool {
        matches!(self.phase, Phase::Over(_))
    }

    /// The slot kept, once won.
    pub fn won(&self) -> Option<u32> {
        match self.phase {
            Phase::Over(slot) => slot,
            _ => None,
        }
    }

    /// Slot `slot`'s acquisition ended with `outcome`: what to do now. Outcomes of slots not
    /// started, or reported twice, are ignored (no steps).
    pub fn settled(&mut self, slot: u32, outcome: SlotOutcome) -> Vec<SlotStep> {
        if !self.running.remove(&slot) {
            return Vec::new();
        }
        let steps = self.decide(slot, outcome);
        for step in &steps {
            if let SlotStep::Acquire { slot, .. } = step {
                self.running.insert(*slot);
            }
        }
        steps
    }

    fn decide(&mut self, slot: u32, outcome: SlotOutcome) -> Vec<SlotStep> {
        match &mut self.phase {
            Phase::Trying(k) => match outcome {
                SlotOutcome::Acquired => self.win(slot, BTreeSet::new()),
                SlotOutcome::Failed => self.fail(slot, BTreeSet::new()),
                SlotOutcome::Busy | SlotOutcome::TimedOut => {
                    *k += 1;
                    if *k < self.slots {
                        let next = (self.start + *k) % self.slots;
                        return vec![SlotStep::Acquire {
                            slot: next,
                            try_once: true,
                        }];
                    }
                    if self.try_once {
                        self.phase = Phase::Over(None);
                        return vec![SlotStep::AllBusy];
                    }
                    let all: BTreeSet<u32> = (0..self.slots).collect();
                    let steps = all
                        .iter()
                        .map(|&slot| SlotStep::Acquire {
                            slot,
                            try_once: false,
                        })
                        .collect();
                    self.phase = Phase::Waiting(all);
                    steps
                }
            },
            Phase::Waiting(pending) => {
                pending.remove(&slot);
                let others = std::mem::take(pending);
                match outcome {
                    SlotOutcome::Acquired => self.win(slot, others),
                    SlotOutcome::Failed => self.fail(slot, others),
                    SlotOutcome::Busy | SlotOutcome::TimedOut if others.is_empty() => {
                        self.phase = Phase::Over(None);
                        vec![SlotStep::TimedOut]
                    }
                    SlotOutcome::Busy | SlotOutcome::TimedOut => {
                        self.phase = Phase::Waiting(others);
                        Vec::new()
                    }
                }
            }
            // Won after another was kept, or after the end (the kept slot's own outcome was
            // reported before it ended the acquisition): give it back.
            Phase::Over(_) => match outcome {
                SlotOutcome::Acquired => vec![SlotStep::Release { slot }],
                _ => Vec::new(),
            },
        }
    }

    fn win(&mut self, slot: u32, others: BTreeSet<u32>) -> Vec<SlotStep> {
        self.phase = Phase::Over(Some(slot));
        let mut steps = vec![SlotStep::Won { slot }];
        steps.extend(others.into_iter().map(|slot| SlotStep::Cancel { slot }));
        steps
    }

    fn fail(&mut self, slot: u32, others: BTreeSet<u32>) -> Vec<SlotStep> {
        self.phase = Phase::Over(None);
        let mut steps = vec![SlotStep::Failed { slot }];
        steps.extend(others.into_iter().map(|slot| SlotStep::Cancel { slot }));
        steps
    }
}
