//! The proof: random schedules of several processes, faults and clock drift, checked against
//! the safety and liveness properties of docs/PROTOCOL.md ("Properties").
//!
//! `SIM_CASES` sets the number of schedules per property (default 2000).

use core::time::Duration;
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestRunner};
use sets3lock::Wait;
use sets3lock_mock::{
    Exit, Fault, MissingKeyIfMatch, ProcessPlan, Round, Semantics, Sim, SimConfig, Violation,
};

const DRIFT_BOUND_PPM: i32 = 10_000;

fn ms(range: core::ops::Range<u64>) -> impl Strategy<Value = Duration> {
    range.prop_map(Duration::from_millis)
}

fn fault() -> impl Strategy<Value = Fault> {
    prop_oneof![
        6 => (ms(0..300), ms(0..300)).prop_map(|(to_server, to_client)| Fault::Deliver { to_server, to_client }),
        1 => ms(0..4000).prop_map(|to_server| Fault::Deliver { to_server, to_client: Duration::from_millis(5) }),
        2 => proptest::option::of(ms(0..6000)).prop_map(|applied_after| Fault::Lose { applied_after }),
        1 => ms(0..300).prop_map(|latency| Fault::Conflict { latency }),
        1 => (ms(0..300), any::<bool>()).prop_map(|(latency, applied)| Fault::ServerError { latency, applied }),
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

fn plan() -> impl Strategy<Value = ProcessPlan> {
    (
        -DRIFT_BOUND_PPM..=DRIFT_BOUND_PPM,
        0u64..1_000_000,
        proptest::collection::vec(round(), 1..4),
    )
        .prop_map(|(drift_ppm, offset, rounds)| ProcessPlan {
            drift_ppm,
            clock_offset: Duration::from_secs(offset),
            rounds,
        })
}

#[derive(Clone, Debug)]
struct Schedule {
    plans: Vec<ProcessPlan>,
    faults: Vec<Fault>,
    seed: u64,
    seaweed: bool,
}

impl Schedule {
    /// How big a counterexample is: rounds plus faults.
    fn size(&self) -> usize {
        self.faults.len() + self.plans.iter().map(|p| p.rounds.len()).sum::<usize>()
    }

    fn run(&self) -> sets3lock_mock::Report {
        let mut cfg = SimConfig::default();
        cfg.lock.max_drift_ppm = DRIFT_BOUND_PPM as u32;
        if self.seaweed {
            cfg.semantics = Semantics {
                missing_key_if_match: MissingKeyIfMatch::PreconditionFailed,
                ..Semantics::default()
            };
        }
        Sim::new(cfg, self.plans.clone(), self.faults.clone(), self.seed)
            .expect("the default config is valid")
            .run()
    }
}

fn schedule() -> impl Strategy<Value = Schedule> {
    (
        proptest::collection::vec(plan(), 3..=4),
        proptest::collection::vec(fault(), 0..60),
        any::<u64>(),
        any::<bool>(),
    )
        .prop_map(|(plans, faults, seed, seaweed)| Schedule {
            plans,
            faults,
            seed,
            seaweed,
        })
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
    let mut runner = TestRunner::new(ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let result = runner.run(&schedule(), |s| {
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
fn liveness_every_waiter_eventually_acquires() {
    check("liveness", |v| matches!(v, Violation::Stuck { .. }));
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
