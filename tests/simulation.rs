//! The proof: random schedules of several processes, faults and clock drift, checked against
//! the safety and liveness properties of docs/PROTOCOL.md ("Properties").
//!
//! `SIM_CASES` sets the number of schedules per property (default 2000).

use core::time::Duration;
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestRunner};
use sets3lock::{ConditionalDelete, Wait};
use sets3lock_mock::{
    Dialect, Exit, Fault, MissingKeyIfMatch, ProcessPlan, Round, Sim, SimConfig, Violation,
};

const DRIFT_BOUND_PPM: i32 = 10_000;

fn ms(range: core::ops::Range<u64>) -> impl Strategy<Value = Duration> {
    range.prop_map(Duration::from_millis)
}

fn fault() -> impl Strategy<Value = Fault> {
    prop_oneof![
        6 => (ms(0..300), ms(0..300)).prop_map(|(to_server, to_client)| Fault::Deliver { to_server, to_client }),
        1 => ms(0..4000).prop_map(|to_server| Fault::Deliver { to_server, to_client: Duration::from_millis(5) }),
        // Replies just before or just after the request timeout (2 s).
        2 => (ms(0..2000), ms(1900..2100)).prop_map(|(to_server, total)| Fault::Deliver {
            to_server: to_server.min(total),
            to_client: total.saturating_sub(to_server),
        }),
        2 => proptest::option::of(ms(0..6000)).prop_map(|applied_after| Fault::Lose { applied_after }),
        1 => ms(0..300).prop_map(|latency| Fault::Conflict { latency }),
        1 => ms(0..50).prop_map(|latency| Fault::Refused { latency }),
        1 => (ms(0..300), any::<bool>()).prop_map(|(latency, applied)| Fault::ServerError { latency, applied }),
        // GCS's 429 rateLimitExceeded (S3's and Azure's 503), not applied.
        1 => ms(0..300).prop_map(|latency| Fault::RateLimited { latency }),
    ]
}

/// The store a schedule runs on: its dialect, and whether it answers a conditional read of an
/// unchanged object with 304 (fake-gcs-server answers 200 with the object).
fn store() -> impl Strategy<Value = (Dialect, bool)> {
    prop_oneof![
        3 => Just((Dialect::S3, true)),
        1 => Just((Dialect::Azure, true)),
        1 => Just((Dialect::Gcs, true)),
        1 => Just((Dialect::Gcs, false)),
    ]
}

fn round() -> impl Strategy<Value = Round> {
    (
        ms(0..3000),
        prop_oneof![
            3 => Just(Wait::Forever),
            1 => Just(Wait::No),
            1 => ms(0..20_000).prop_map(Wait::Timeout),
        ],
        // Holds shorter than the lease, and holds of several leases (renewal racing takeover).
        prop_oneof![3 => ms(0..6000), 1 => ms(6000..40_000)],
        prop_oneof![4 => Just(None), 1 => ms(0..15_000).prop_map(Some)],
        prop_oneof![4 => Just(Exit::Release), 1 => Just(Exit::Crash)],
    )
        .prop_map(|(start_after, wait, hold, pause, exit)| Round {
            start_after,
            wait,
            hold,
            pause,
            exit,
        })
}

/// A process's plan; in a schedule of mixed modes, `fenced` says how it is configured.
fn plan() -> impl Strategy<Value = ProcessPlan> {
    (
        -DRIFT_BOUND_PPM..=DRIFT_BOUND_PPM,
        0u64..1_000_000,
        proptest::collection::vec(round(), 1..4),
        any::<bool>(),
    )
        .prop_map(|(drift_ppm, offset, rounds, fenced)| ProcessPlan {
            drift_ppm,
            clock_offset: Duration::from_secs(offset),
            rounds,
            fenced: Some(fenced),
        })
}

/// How the processes of a schedule are configured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Every process in presence mode (the key is deleted on release).
    Presence,
    /// Every process in fenced mode: the schedule may run on a store whose `DELETE If-Match`
    /// ignores its condition or answers 501, since fenced mode sends no DELETE.
    Fenced(ConditionalDelete),
    /// Each process as its plan says: the key decides its mode.
    Mixed,
}

#[derive(Clone, Debug)]
struct Schedule {
    plans: Vec<ProcessPlan>,
    faults: Vec<Fault>,
    seed: u64,
    /// 412 for `If-Match` on a missing key (SeaweedFS; Azurite, on the Azure dialect).
    seaweed: bool,
    /// The store's API, and whether it answers 304 to a conditional read.
    store: (Dialect, bool),
    mode: Mode,
    /// A 4 s lease with the 2 s request timeout: renewals every 1.3 s, so a renewal's reply
    /// can come after the next renewal was due.
    short_lease: bool,
    /// `Some(n)`: the processes share a semaphore of `n` slots instead of one lock.
    slots: Option<u32>,
}

impl Schedule {
    /// How big a counterexample is: rounds plus faults.
    fn size(&self) -> usize {
        self.faults.len() + self.plans.iter().map(|p| p.rounds.len()).sum::<usize>()
    }

    fn run(&self) -> sets3lock_mock::Report {
        let mut cfg = SimConfig::default();
        cfg.lock.max_drift_ppm = DRIFT_BOUND_PPM as u32;
        if self.short_lease {
            cfg.lock.lease = Duration::from_secs(4);
        }
        if self.seaweed {
            cfg.semantics.missing_key_if_match = MissingKeyIfMatch::PreconditionFailed;
        }
        (cfg.semantics.dialect, cfg.semantics.not_modified) = self.store;
        cfg.slots = self.slots;
        let mut plans = self.plans.clone();
        match self.mode {
            Mode::Presence | Mode::Fenced(_) => {
                for p in &mut plans {
                    p.fenced = Some(matches!(self.mode, Mode::Fenced(_)));
                }
            }
            Mode::Mixed => {}
        }
        if let Mode::Fenced(conditional_delete) = self.mode {
            cfg.semantics.conditional_delete = conditional_delete;
        }
        Sim::new(cfg, plans, self.faults.clone(), self.seed)
            .expect("the default config is valid")
            .run()
    }
}

/// Schedules of `clients` clients in one of `modes`, on one lock (`slots` `None`) or on a
/// semaphore: the plans, up to 59 faults, a seed, the store's answer to `If-Match` on a missing
/// key, the store's API (S3 in half of them, else Azure or GCS), and a short lease in 40% of
/// them.
fn schedules(
    clients: std::ops::RangeInclusive<usize>,
    modes: impl Strategy<Value = Mode>,
    slots: impl Strategy<Value = Option<u32>>,
) -> impl Strategy<Value = Schedule> {
    (
        proptest::collection::vec(plan(), clients),
        proptest::collection::vec(fault(), 0..60),
        any::<u64>(),
        any::<bool>(),
        proptest::bool::weighted(0.4),
        modes,
        slots,
        store(),
    )
        .prop_map(
            |(plans, faults, seed, seaweed, short_lease, mode, slots, store)| Schedule {
                plans,
                faults,
                seed,
                seaweed,
                store,
                mode,
                short_lease,
                slots,
            },
        )
}

/// Schedules of 3 or 4 clients on one lock, in every mode.
fn schedule() -> impl Strategy<Value = Schedule> {
    let modes = prop_oneof![
        2 => Just(Mode::Presence),
        1 => Just(Mode::Fenced(ConditionalDelete::Honored)),
        1 => Just(Mode::Fenced(ConditionalDelete::IgnoresIfMatch)),
        1 => Just(Mode::Fenced(ConditionalDelete::NotImplemented)),
        1 => Just(Mode::Mixed),
    ];
    schedules(3..=4, modes, Just(None))
}

/// Schedules of 3 to 6 clients sharing a semaphore of 2 or 3 slots, in presence or fenced
/// mode (fenced slots may run on stores without a conditional DELETE), with the same faults.
fn semaphore_schedule() -> impl Strategy<Value = Schedule> {
    let modes = prop_oneof![
        2 => Just(Mode::Presence),
        1 => Just(Mode::Fenced(ConditionalDelete::Honored)),
        1 => Just(Mode::Fenced(ConditionalDelete::NotImplemented)),
    ];
    schedules(3..=6, modes, (2u32..=3).prop_map(Some))
}

fn cases() -> u32 {
    std::env::var("SIM_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000)
}

/// Runs `cases()` schedules and fails, with the shrunk schedule and its size, on the first
/// that breaks `property`.
fn check(name: &str, property: impl Fn(&Violation) -> bool) {
    check_on(schedule(), name, property);
}

/// [`check`] on schedules drawn from `schedules`.
fn check_on(
    schedules: impl Strategy<Value = Schedule>,
    name: &str,
    property: impl Fn(&Violation) -> bool,
) {
    let mut runner = TestRunner::new(ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let result = runner.run(&schedules, |s| {
        let report = s.run();
        if let Some(v) = report.violations.iter().find(|v| property(v)) {
            return Err(TestCaseError::fail(format!("{name} broken: {v:?}")));
        }
        Ok(())
    });
    match result {
        Ok(()) => {}
        Err(proptest::test_runner::TestError::Fail(reason, s)) => {
            let report = s.run();
            panic!(
                "{reason}\ncounterexample size {} ({} rounds, {} faults):\n{s:#?}\n{}\nviolations: {:?}",
                s.size(),
                s.size() - s.faults.len(),
                s.faults.len(),
                report.timeline(),
                report.violations,
            );
        }
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn property_1_at_most_one_valid_holder() {
    check("mutual exclusion", |v| {
        matches!(v, Violation::TwoHolders { .. })
    });
}

#[test]
fn property_2_no_renewal_or_release_touches_another_owners_object() {
    check("no foreign writes", |v| {
        matches!(v, Violation::ForeignWrite { .. })
    });
}

#[test]
fn property_3_acquired_only_with_own_write_current() {
    check("acquired means our write", |v| {
        matches!(v, Violation::AcquiredWithoutOwnWrite { .. })
    });
}

#[test]
fn fenced_tokens_strictly_increase_over_grants_and_never_change_within_one() {
    check("fencing tokens", |v| {
        matches!(
            v,
            Violation::TokenNotIncreasing { .. }
                | Violation::TokenChanged { .. }
                | Violation::FencedObjectDeleted { .. }
        )
    });
}

#[test]
fn a_fenced_resource_never_accepts_an_older_grants_write_after_a_newer_ones() {
    check("mutual exclusion at the resource", |v| {
        matches!(v, Violation::StaleWriteAccepted { .. })
    });
}

#[test]
fn validity_is_dated_from_the_send_of_the_write_it_stands_on() {
    check("validity from the send", |v| {
        matches!(v, Violation::ValidityNotFromSend { .. })
    });
}

#[test]
fn availability_an_unimpeded_hold_is_never_lost() {
    check("no spurious loss", |v| {
        matches!(v, Violation::SpuriousLoss { .. })
    });
}

#[test]
fn availability_an_unimpeded_release_removes_the_object_at_once() {
    check("bounded release", |v| {
        matches!(v, Violation::SlowOrFailedRelease { .. })
    });
}

#[test]
fn liveness_every_waiter_eventually_acquires() {
    check("liveness", |v| {
        matches!(v, Violation::Stuck { .. } | Violation::Spinning { .. })
    });
}

/// A semaphore of N slots: never more than N processes holding a valid slot at once, at most
/// one per slot, and every property of the lock on each slot (foreign writes, our own write,
/// tokens, validity, no spurious loss, bounded release, liveness).
#[test]
fn semaphore_never_more_than_n_holders_and_every_slot_a_lock() {
    check_on(semaphore_schedule(), "the semaphore", |_| true);
}

/// The semaphore schedules reach what they are for: every slot held at once, waits on every
/// slot, the other waits cancelled after a win, a crashed holder's slot taken over. (A slot
/// won after its cancel, `SlotStep::Release`, is not reachable with this core: a cancelled
/// acquisition ends `Cancelled` and removes a write that lands; the step is there for drivers
/// that report such a win.)
#[test]
fn semaphore_schedules_reach_every_path() {
    use proptest::strategy::ValueTree;
    use sets3lock::Event;
    let mut runner = TestRunner::new(ProptestConfig {
        cases: 400,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let (mut full, mut waited, mut cancelled, mut taken_over) = (0u32, 0u32, 0u32, 0u32);
    for _ in 0..400 {
        let s = semaphore_schedule()
            .new_tree(&mut runner)
            .expect("tree")
            .current();
        let report = s.run();
        let n = s.slots.unwrap_or(1) as usize;
        let noted = |what: &str| report.notes.iter().any(|(_, _, note)| note.contains(what));
        full += u32::from(report.most_inside >= n);
        waited += u32::from(noted("try_once: false"));
        cancelled += u32::from(noted("semaphore: Cancel {"));
        taken_over += u32::from(report.events.iter().any(|(_, _, e)| {
            matches!(
                e,
                Event::Acquired {
                    took_over: Some(_),
                    ..
                }
            )
        }));
    }
    assert!(full > 100, "every slot held at once in only {full} of 400");
    assert!(waited > 100, "a wait on every slot in only {waited}");
    assert!(
        cancelled > 50,
        "the other waits cancelled after a win in only {cancelled}"
    );
    assert!(
        taken_over > 10,
        "a crashed slot taken over in only {taken_over}"
    );
}

/// A freed slot is taken by a waiter within the same bound as a freed lock: the polling cap
/// plus a few round trips. Side by side, no faults: two holders and a waiter on a semaphore of
/// two; a holder and a waiter on a lock.
#[test]
fn a_freed_slot_is_taken_as_soon_as_a_freed_lock() {
    use sets3lock::Event;
    let hold = |start_ms, hold_s, wait| Round {
        start_after: Duration::from_millis(start_ms),
        wait,
        hold: Duration::from_secs(hold_s),
        pause: None,
        exit: Exit::Release,
    };
    let plan = |round: Round| ProcessPlan {
        drift_ppm: 0,
        clock_offset: Duration::ZERO,
        rounds: vec![round],
        fenced: None,
    };
    let handoff = |slots: Option<u32>, holders: usize| {
        let cfg = SimConfig {
            slots,
            ..SimConfig::default()
        };
        let mut plans: Vec<ProcessPlan> =
            (0..holders).map(|_| plan(hold(0, 5, Wait::No))).collect();
        plans.push(plan(hold(500, 1, Wait::Forever)));
        let waiter = plans.len() - 1;
        let report = Sim::new(cfg.clone(), plans, vec![], 7)
            .expect("valid")
            .run();
        assert!(report.violations.is_empty(), "{:?}", report.violations);
        let freed = report
            .events
            .iter()
            .find(|(_, p, e)| *p == 0 && matches!(e, Event::Released { .. }))
            .map(|(t, _, _)| *t)
            .expect("released");
        let taken = report
            .events
            .iter()
            .find(|(_, p, e)| *p == waiter && matches!(e, Event::Acquired { .. }))
            .map(|(t, _, _)| *t)
            .expect("acquired");
        (
            taken.saturating_sub(freed),
            cfg.lock.poll.cap + cfg.latency * 6,
        )
    };
    let (lock_gap, bound) = handoff(None, 1);
    let (slot_gap, _) = handoff(Some(2), 2);
    assert!(lock_gap <= bound, "lock: {lock_gap:?} > {bound:?}");
    assert!(slot_gap <= bound, "slot: {slot_gap:?} > {bound:?}");
}

/// The generator must reach the interesting paths, or the properties above prove little.
#[test]
fn schedules_reach_every_path() {
    use sets3lock::{Event, Purpose};
    let mut runner = TestRunner::new(ProptestConfig {
        cases: 400,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let mut totals = std::collections::BTreeMap::<&str, usize>::new();
    for _ in 0..400 {
        let s = schedule()
            .new_tree(&mut runner)
            .map(|t| proptest::strategy::ValueTree::current(&t))
            .unwrap_or_else(|e| panic!("{e}"));
        let r = s.run();
        let mut add = |k, n| *totals.entry(k).or_default() += n;
        add(
            "acquired",
            r.count(|e| {
                matches!(
                    e,
                    Event::Acquired {
                        took_over: None,
                        ..
                    }
                )
            }),
        );
        add(
            "took over",
            r.count(|e| {
                matches!(
                    e,
                    Event::Acquired {
                        took_over: Some(_),
                        ..
                    }
                )
            }),
        );
        add("renewed", r.count(|e| matches!(e, Event::Renewed { .. })));
        add("expired", r.count(|e| matches!(e, Event::Expired)));
        add("lost", r.count(|e| matches!(e, Event::Lost { .. })));
        add("busy", r.count(|e| matches!(e, Event::NotAcquired { .. })));
        add("released", r.count(|e| matches!(e, Event::Released { .. })));
        add(
            "resolve requests",
            r.requests
                .iter()
                .filter(|(_, _, p)| *p == Purpose::Resolve)
                .count(),
        );
        add(
            "cleanup requests",
            r.requests
                .iter()
                .filter(|(_, _, p)| *p == Purpose::Cleanup)
                .count(),
        );
        add("requests", r.requests.len());
        add(
            "fenced grants",
            r.count(|e| matches!(e, Event::Acquired { token: Some(_), .. })),
        );
        add(
            "fenced takeovers",
            r.count(|e| {
                matches!(
                    e,
                    Event::Acquired {
                        token: Some(_),
                        took_over: Some(_),
                        ..
                    }
                )
            }),
        );
        add(
            "freed",
            r.count(|e| {
                matches!(
                    e,
                    Event::Released {
                        outcome: sets3lock::ReleaseOutcome::Freed
                    }
                )
            }),
        );
        add("resource writes accepted", r.resource_writes.0);
        add("stale resource writes refused", r.resource_writes.1);
    }
    eprintln!("{totals:#?}");
    for key in [
        "acquired",
        "took over",
        "renewed",
        "expired",
        "busy",
        "released",
        "resolve requests",
        "cleanup requests",
        "fenced grants",
        "fenced takeovers",
        "freed",
        "resource writes accepted",
        "stale resource writes refused",
    ] {
        assert!(totals[key] > 0, "no schedule reached {key}: {totals:?}");
    }
}

/// Against a store that ignores condition headers (Garage, s3rver), the same schedules break
/// mutual exclusion and let releases delete other owners' locks: the checks have teeth, and
/// the mock can show users what such a store does to a lock.
#[test]
fn a_store_that_ignores_conditions_breaks_the_properties() {
    let mut runner = TestRunner::deterministic();
    let (mut two_holders, mut foreign_writes) = (0, 0);
    for _ in 0..200 {
        let s = schedule()
            .new_tree(&mut runner)
            .map(|t| proptest::strategy::ValueTree::current(&t))
            .unwrap_or_else(|e| panic!("{e}"));
        let mut cfg = SimConfig::default();
        cfg.semantics.honor_conditions = false;
        let report = Sim::new(cfg, s.plans, s.faults, s.seed)
            .expect("the default config is valid")
            .run();
        two_holders += report
            .violations
            .iter()
            .any(|v| matches!(v, Violation::TwoHolders { .. })) as u32;
        foreign_writes += report
            .violations
            .iter()
            .any(|v| matches!(v, Violation::ForeignWrite { .. })) as u32;
    }
    assert!(
        two_holders > 100,
        "only {two_holders} of 200 schedules showed two holders"
    );
    assert!(
        foreign_writes > 10,
        "only {foreign_writes} of 200 schedules showed a foreign write"
    );
}

/// Presence mode needs a `DELETE If-Match` that honours its condition. On a store that
/// ignores it (MinIO CE), an expired holder's release deletes the next holder's lock: the
/// same schedules, all in presence mode, show foreign deletes and two holders. In fenced mode
/// they hold every property (the schedules above include that store).
#[test]
fn presence_mode_on_a_store_whose_delete_ignores_if_match_breaks_the_properties() {
    let mut runner = TestRunner::deterministic();
    let (mut foreign_writes, mut two_holders) = (0, 0);
    for _ in 0..300 {
        let mut s = schedule()
            .new_tree(&mut runner)
            .map(|t| proptest::strategy::ValueTree::current(&t))
            .unwrap_or_else(|e| panic!("{e}"));
        s.mode = Mode::Presence;
        let mut cfg = SimConfig::default();
        cfg.semantics.conditional_delete = ConditionalDelete::IgnoresIfMatch;
        let plans = s
            .plans
            .into_iter()
            .map(|p| ProcessPlan {
                fenced: Some(false),
                ..p
            })
            .collect();
        let report = Sim::new(cfg, plans, s.faults, s.seed)
            .expect("the default config is valid")
            .run();
        foreign_writes += report
            .violations
            .iter()
            .any(|v| matches!(v, Violation::ForeignWrite { .. })) as u32;
        two_holders += report
            .violations
            .iter()
            .any(|v| matches!(v, Violation::TwoHolders { .. })) as u32;
    }
    assert!(
        foreign_writes > 10,
        "only {foreign_writes} of 300 schedules showed a foreign delete"
    );
    eprintln!("{foreign_writes} of 300 with a foreign delete, {two_holders} with two holders");
}

/// Every property on every schedule, for long runs:
/// `SIM_CASES=1000000 cargo test --release --test simulation -- --ignored --nocapture`.
#[test]
#[ignore = "long run; see the doc comment"]
fn all_properties_long_run() {
    let started = std::time::Instant::now();
    check("any property", |_| true);
    eprintln!(
        "{} schedules, every property held, in {:.1?}",
        cases(),
        started.elapsed()
    );
}

/// The schedules run on every store's API: on each (S3; Azure; GCS; fake-gcs-server, whose
/// reads are never 304) they acquire, take over, renew and release, break no property, and no
/// reply is refused (a refusal would be a reply the store's table misreads).
#[test]
fn schedules_run_on_every_stores_api() {
    use proptest::strategy::ValueTree;
    use sets3lock::{Error, Event};
    let mut runner = TestRunner::new(ProptestConfig {
        cases: 100,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    for store in [
        (Dialect::S3, true),
        (Dialect::Azure, true),
        (Dialect::Gcs, true),
        (Dialect::Gcs, false),
    ] {
        let mut totals = std::collections::BTreeMap::<&str, usize>::new();
        for _ in 0..100 {
            let mut s = schedule().new_tree(&mut runner).expect("tree").current();
            s.store = store;
            let r = s.run();
            assert!(r.violations.is_empty(), "{store:?}: {:?}", r.violations);
            let mut add = |k, n| *totals.entry(k).or_default() += n;
            add(
                "acquired",
                r.count(|e| {
                    matches!(
                        e,
                        Event::Acquired {
                            took_over: None,
                            ..
                        }
                    )
                }),
            );
            add(
                "took over",
                r.count(|e| {
                    matches!(
                        e,
                        Event::Acquired {
                            took_over: Some(_),
                            ..
                        }
                    )
                }),
            );
            add("renewed", r.count(|e| matches!(e, Event::Renewed { .. })));
            add("released", r.count(|e| matches!(e, Event::Released { .. })));
            add(
                "refused",
                r.count(|e| {
                    matches!(e, Event::Failed { error } if !matches!(error, Error::GaveUp { .. }))
                }),
            );
        }
        eprintln!("{store:?}: {totals:?}");
        for key in ["acquired", "took over", "renewed", "released"] {
            assert!(
                totals[key] > 0,
                "{store:?}: no schedule reached {key}: {totals:?}"
            );
        }
        assert_eq!(totals["refused"], 0, "{store:?}: {totals:?}");
    }
}
