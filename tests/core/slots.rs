//! The semaphore's slot choice: the try-once pass, the wait on every slot, keeping the first
//! slot won and giving back any other; and, over random outcomes, exactly one final step and
//! no slot kept but the one won.

use proptest::prelude::*;
use sets3lock_proto::{SlotChoice, SlotOutcome, SlotStep};
use std::collections::BTreeSet;

#[test]
fn the_pass_goes_round_from_the_start_then_waits_on_every_slot() {
    let (mut c, steps) = SlotChoice::new(3, 2, false);
    assert_eq!(
        steps,
        vec![SlotStep::Acquire {
            slot: 2,
            try_once: true
        }]
    );
    assert_eq!(
        c.settled(2, SlotOutcome::Busy),
        vec![SlotStep::Acquire {
            slot: 0,
            try_once: true
        }]
    );
    assert_eq!(
        c.settled(0, SlotOutcome::Busy),
        vec![SlotStep::Acquire {
            slot: 1,
            try_once: true
        }]
    );
    let all = c.settled(1, SlotOutcome::Busy);
    assert_eq!(
        all,
        (0..3)
            .map(|slot| SlotStep::Acquire {
                slot,
                try_once: false
            })
            .collect::<Vec<_>>()
    );
    assert!(!c.is_over());
    assert_eq!(c.settled(0, SlotOutcome::TimedOut), vec![]);
    assert_eq!(
        c.settled(2, SlotOutcome::Acquired),
        vec![SlotStep::Won { slot: 2 }, SlotStep::Cancel { slot: 1 }]
    );
    assert_eq!(c.won(), Some(2));
    // The cancelled slot was won before the cancel reached it: given back.
    assert_eq!(
        c.settled(1, SlotOutcome::Acquired),
        vec![SlotStep::Release { slot: 1 }]
    );
    assert_eq!(c.won(), Some(2));
}

#[test]
fn try_once_on_a_full_semaphore_is_all_busy_after_one_pass() {
    let (mut c, _) = SlotChoice::new(2, 0, true);
    assert_eq!(
        c.settled(0, SlotOutcome::Busy),
        vec![SlotStep::Acquire {
            slot: 1,
            try_once: true
        }]
    );
    assert_eq!(c.settled(1, SlotOutcome::Busy), vec![SlotStep::AllBusy]);
    assert!(c.is_over());
    assert_eq!(c.won(), None);
}

#[test]
fn a_failure_ends_it_and_cancels_the_other_waits() {
    let (mut c, _) = SlotChoice::new(2, 0, false);
    c.settled(0, SlotOutcome::Busy);
    c.settled(1, SlotOutcome::Busy);
    assert_eq!(
        c.settled(1, SlotOutcome::Failed),
        vec![SlotStep::Failed { slot: 1 }, SlotStep::Cancel { slot: 0 }]
    );
    assert!(c.is_over());
}

#[test]
fn every_wait_running_out_is_a_timeout_and_strays_are_ignored() {
    let (mut c, _) = SlotChoice::new(2, 5, false);
    assert_eq!(
        c.settled(0, SlotOutcome::Busy),
        vec![],
        "slot 0 is not being tried"
    );
    c.settled(1, SlotOutcome::Busy);
    c.settled(0, SlotOutcome::Busy);
    assert_eq!(c.settled(1, SlotOutcome::TimedOut), vec![]);
    assert_eq!(
        c.settled(1, SlotOutcome::TimedOut),
        vec![],
        "reported twice"
    );
    assert_eq!(
        c.settled(0, SlotOutcome::TimedOut),
        vec![SlotStep::TimedOut]
    );
}

#[test]
fn one_slot_is_a_lock_tried_once_then_waited_for() {
    let (mut c, steps) = SlotChoice::new(1, 7, false);
    assert_eq!(
        steps,
        vec![SlotStep::Acquire {
            slot: 0,
            try_once: true
        }]
    );
    assert_eq!(
        c.settled(0, SlotOutcome::Busy),
        vec![SlotStep::Acquire {
            slot: 0,
            try_once: false
        }]
    );
    assert_eq!(
        c.settled(0, SlotOutcome::Acquired),
        vec![SlotStep::Won { slot: 0 }]
    );
}

proptest! {
    /// A driver that carries out every step, fed random outcomes in a random order: one final
    /// step, never two slots kept, every slot won but the kept one given back, nothing started
    /// twice at once.
    #[test]
    fn one_final_step_and_only_the_kept_slot_stays_won(
        slots in 1u32..6,
        start in 0u32..10,
        try_once in any::<bool>(),
        outcomes in proptest::collection::vec((0u32..6, 0u8..4, any::<prop::sample::Index>()), 0..60),
    ) {
        let (mut c, first) = SlotChoice::new(slots, start, try_once);
        let mut running: BTreeSet<u32> = BTreeSet::new();
        let mut won: BTreeSet<u32> = BTreeSet::new();
        let mut finals = Vec::new();
        let mut steps = first;
        let mut outcomes = outcomes.into_iter();
        loop {
            for step in steps.drain(..) {
                match step {
                    SlotStep::Acquire { slot, .. } => {
                        prop_assert!(slot < slots);
                        prop_assert!(running.insert(slot), "slot {} started twice", slot);
                    }
                    SlotStep::Cancel { slot } => prop_assert!(running.contains(&slot)),
                    SlotStep::Release { slot } => prop_assert!(won.remove(&slot)),
                    f => finals.push(f),
                }
            }
            // The next outcome: for one of the running slots (or a stray).
            let Some((stray, kind, pick)) = outcomes.next() else { break };
            let slot = if running.is_empty() || kind == 3 && stray >= slots {
                stray
            } else {
                let list: Vec<u32> = running.iter().copied().collect();
                list[pick.index(list.len())]
            };
            let outcome = [SlotOutcome::Acquired, SlotOutcome::Busy, SlotOutcome::TimedOut, SlotOutcome::Failed][usize::from(kind)];
            if running.remove(&slot) && outcome == SlotOutcome::Acquired {
                won.insert(slot);
            }
            steps = c.settled(slot, outcome);
        }
        prop_assert!(finals.len() <= 1, "{:?}", finals);
        if let Some(SlotStep::Won { slot }) = finals.first() {
            prop_assert_eq!(c.won(), Some(*slot));
            prop_assert!(won.contains(slot));
        }
        // Every slot still counted won is the kept one.
        let kept: BTreeSet<u32> = c.won().into_iter().collect();
        prop_assert!(won.is_subset(&kept), "won {:?}, kept {:?}", won, kept);
        if !running.is_empty() && !c.is_over() {
            prop_assert!(finals.is_empty());
        }
    }
}

#[test]
fn the_final_steps_are_the_four_that_end_the_acquisition() {
    let finals = [
        SlotStep::Won { slot: 0 },
        SlotStep::AllBusy,
        SlotStep::TimedOut,
        SlotStep::Failed { slot: 1 },
    ];
    let not_final = [
        SlotStep::Acquire {
            slot: 0,
            try_once: true,
        },
        SlotStep::Cancel { slot: 0 },
        SlotStep::Release { slot: 0 },
    ];
    assert!(finals.iter().all(SlotStep::is_final));
    assert!(!not_final.iter().any(SlotStep::is_final));
}

#[test]
fn a_slot_won_after_a_failure_ended_it_is_given_back() {
    // Slot 1 fails for good, which ends the acquisition and cancels slot 0's wait; slot 0 then
    // reports a win (its cancel came too late): given back, and nothing is kept.
    let (mut c, _) = SlotChoice::new(2, 0, false);
    c.settled(0, SlotOutcome::Busy);
    c.settled(1, SlotOutcome::Busy);
    assert_eq!(
        c.settled(1, SlotOutcome::Failed),
        vec![SlotStep::Failed { slot: 1 }, SlotStep::Cancel { slot: 0 }]
    );
    assert_eq!(
        c.settled(0, SlotOutcome::Acquired),
        vec![SlotStep::Release { slot: 0 }]
    );
    assert_eq!(c.won(), None);
}
