//! The proof: random schedules of several processes, faults and clock drift, checked against
//! the safety and liveness properties of docs/PROTOCOL.md ("Properties").
//!
//! `SIM_CASES` sets the number of schedules per property (default 2000).

use core::time::Duration;
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestRunner};
use sets3lock_mock::{
    Dialect, Exit, Fault, MissingKeyIfMatch, ProcessPlan, Round, Sim, SimConfig, Start, Tamper,
    Violation,
};
use sets3lock_proto::{ConditionalDelete, ReleaseOutcome, Resume, Wait};

const DRIFT_BOUND_PPM: i32 = 10_000;
/// The store's clock at real time zero, in schedules with one (Unix milliseconds).
const EPOCH_MS: u64 = 1_796_205_600_000;

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

/// The driver's request timeout: the 2 s the fault mix is shaped around in most schedules,
/// else anything from a tenth of a second to a minute (well past any lease here: the core's
/// request-time bound must keep holds alive whatever the driver's own limit).
fn request_timeout() -> impl Strategy<Value = Duration> {
    prop_oneof![
        3 => Just(Duration::from_secs(2)),
        1 => ms(100..2000),
        1 => ms(2000..60_000),
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
            start: Start::Acquire,
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
    /// How long a driver waits for a reply (the core shortens a hold's requests to a renewal
    /// interval at most): the request-time bound the schedules explore.
    request_timeout: Duration,
    /// A stop point as the command sets it (`Config::stop_before`, its default
    /// `--kill-after`: half of validity less a renewal interval).
    stop_point: bool,
    /// `Some(n)`: the processes share a semaphore of `n` slots instead of one lock.
    slots: Option<u32>,
    /// The store keeps a clock (replies carry `Date` and `Last-Modified`).
    store_clock: bool,
    /// `Config::hold_at_least`, if any.
    hold_at_least: Option<Duration>,
    /// What is done to the lock object behind the processes' backs, and when (real time).
    tampers: Vec<(Duration, Tamper)>,
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
        cfg.request_timeout = self.request_timeout;
        if self.stop_point {
            let room = cfg.lock.validity() - cfg.lock.renew_interval();
            cfg.lock.stop_before = room / 2;
        }
        if self.seaweed {
            cfg.semantics.missing_key_if_match = MissingKeyIfMatch::PreconditionFailed;
        }
        (cfg.semantics.dialect, cfg.semantics.not_modified) = self.store;
        cfg.slots = self.slots;
        cfg.store_clock = self.store_clock.then_some(EPOCH_MS);
        if let Some(d) = self.hold_at_least {
            cfg.lock.hold_at_least = d;
        }
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
        let mut sim = Sim::new(cfg, plans, self.faults.clone(), self.seed)
            .expect("the default config is valid");
        for (at, tamper) in &self.tampers {
            sim.tamper(*at, tamper.clone());
        }
        sim.run()
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
    schedules_of(
        proptest::collection::vec(plan(), clients),
        modes,
        slots,
        Just(false),
    )
}

/// [`schedules`] of the processes `plans` draws, with a store clock when `store_clock` says.
fn schedules_of(
    plans: impl Strategy<Value = Vec<ProcessPlan>>,
    modes: impl Strategy<Value = Mode>,
    slots: impl Strategy<Value = Option<u32>>,
    store_clock: impl Strategy<Value = bool>,
) -> impl Strategy<Value = Schedule> {
    (
        plans,
        proptest::collection::vec(fault(), 0..60),
        any::<u64>(),
        any::<bool>(),
        proptest::bool::weighted(0.4),
        modes,
        slots,
        store(),
        store_clock,
        (request_timeout(), any::<bool>()),
    )
        .prop_map(
            |(
                plans,
                faults,
                seed,
                seaweed,
                short_lease,
                mode,
                slots,
                store,
                store_clock,
                (request_timeout, stop_point),
            )| {
                Schedule {
                    plans,
                    faults,
                    seed,
                    seaweed,
                    store,
                    mode,
                    short_lease,
                    request_timeout,
                    stop_point,
                    slots,
                    store_clock,
                    hold_at_least: None,
                    tampers: Vec::new(),
                }
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
    check_cases(schedules, cases(), name, property);
}

/// [`check_on`] with `cases` schedules.
fn check_cases(
    schedules: impl Strategy<Value = Schedule>,
    cases: u32,
    name: &str,
    property: impl Fn(&Violation) -> bool,
) {
    let mut runner = TestRunner::new(ProptestConfig {
        cases,
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
                | Violation::TokenAtOrBelowSeen { .. }
                | Violation::TokenChanged { .. }
                | Violation::FencedObjectDeleted { .. }
        )
    });
}

/// A Go sets3lock record (no token): what that tool writes over a key it takes over.
const GO_RECORD: &str =
    r#"{"id":"6f9619ff-8b86-d011-b42d-00c04fc964ff","created_at":"2026-11-30T10:00:00Z"}"#;

/// Fenced schedules in which the lock object is removed (or overwritten by the Go tool, with
/// no token) behind the clients' backs, one to three times in the first minute: an operator's
/// `aws s3 rm`, a lifecycle rule, a bucket emptied by hand.
fn removal_schedule() -> impl Strategy<Value = Schedule> {
    let modes = prop_oneof![
        2 => Just(Mode::Fenced(ConditionalDelete::Honored)),
        1 => Just(Mode::Fenced(ConditionalDelete::NotImplemented)),
    ];
    let tamper = prop_oneof![
        3 => Just(Tamper::Delete),
        1 => Just(Tamper::Overwrite(bytes::Bytes::from_static(GO_RECORD.as_bytes()))),
    ];
    (
        schedules(3..=4, modes, Just(None)),
        proptest::collection::vec((ms(0..60_000), tamper), 1..4),
    )
        .prop_map(|(s, tampers)| Schedule { tampers, ..s })
}

/// Removing the lock object behind the clients' backs is outside the protocol: a holder may
/// then run beside a newcomer until its next renewal fails, and a client that never saw the
/// key grants token 1 again. What still holds: no client ever grants a token at or below one
/// it has seen (in a record it read, or its own grant), whatever the record it writes over
/// says; between removals, tokens increase over grants and renewals keep them; no client
/// deletes a fenced object or writes over another's.
#[test]
fn fenced_tokens_never_go_back_for_a_client_that_saw_them_after_the_object_is_removed() {
    check_on(removal_schedule(), "tokens after a removal", |v| {
        matches!(
            v,
            Violation::TokenAtOrBelowSeen { .. }
                | Violation::TokenNotIncreasing { .. }
                | Violation::TokenChanged { .. }
                | Violation::FencedObjectDeleted { .. }
                | Violation::ForeignWrite { .. }
        )
    });
}

/// The removal schedules reach what the property is about: a grant right after a removal
/// that a client's memory numbered above 1 (without it, it would have written 1), and a grant
/// right after a removal by a client that had seen nothing, which starts again at 1 (what a
/// resource then sees: a lower token, which it refuses).
#[test]
fn removal_schedules_reach_every_path() {
    use proptest::strategy::ValueTree;
    let mut runner = TestRunner::deterministic();
    let (mut remembered, mut restarted, mut removals) = (0, 0, 0);
    for _ in 0..300 {
        let s = removal_schedule()
            .new_tree(&mut runner)
            .expect("a schedule")
            .current();
        let report = s.run();
        for (at, _) in &s.tampers {
            // The first grant after this removal, before any later one.
            let next = s.tampers.iter().map(|(t, _)| *t).filter(|t| t > at).min();
            let first = report.events.iter().find_map(|(t, _, e)| match e {
                sets3lock_proto::Event::Acquired {
                    token: Some(token), ..
                } if t > at && next.is_none_or(|n| *t < n) => Some(token),
                _ => None,
            });
            removals += 1;
            match first {
                Some(&1) => restarted += 1,
                Some(_) => remembered += 1,
                None => {}
            }
        }
    }
    eprintln!("{removals} removals: first grant after it numbered from memory {remembered}, from 1 {restarted}");
    assert!(
        remembered >= 20,
        "only {remembered} grants numbered from a client's memory"
    );
    assert!(
        restarted >= 5,
        "only {restarted} grants starting again at 1"
    );
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

/// Where the lock's user stops relying on a hold ahead of its validity's end (the command's
/// `--kill-after`), an unimpeded hold, one lost renewal ridden out included, is renewed before
/// that point: the program is never stopped for a store that answers.
#[test]
fn availability_an_unimpeded_hold_is_renewed_before_its_user_stops() {
    check("renewed before the stop point", |v| {
        matches!(v, Violation::RenewedPastStopPoint { .. })
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
    use sets3lock_proto::Event;
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
    use sets3lock_proto::Event;
    let hold = |start_ms, hold_s, wait| Round {
        start_after: Duration::from_millis(start_ms),
        start: Start::Acquire,
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
    use sets3lock_proto::{Event, Purpose};
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
                        outcome: sets3lock_proto::ReleaseOutcome::Freed
                    }
                )
            }),
        );
        add("resource writes accepted", r.resource_writes.0);
        add("stale resource writes refused", r.resource_writes.1);
        add("lost renewals ridden out", r.ridden_out);
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
        "lost renewals ridden out",
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
    use sets3lock_proto::{Error, Event};
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

// ---- holds handed between processes -------------------------------------------------------

/// A round of a schedule with handles: it acquires, or adopts a handle from the pool (the
/// newest mostly, an older one sometimes, whose hold has often ended), to hold it or to
/// release it; and it ends by detaching (handing the hold on), releasing or crashing. Some
/// rounds start after a lease or more, when a detached hold has run out and may be taken over.
fn handoff_round() -> impl Strategy<Value = Round> {
    let adopt = (
        prop_oneof![3 => Just(0usize), 1 => 1usize..4],
        prop_oneof![3 => Just(Resume::Hold), 1 => Just(Resume::Release)],
    )
        .prop_map(|(handle, then)| Start::Adopt { handle, then });
    (
        prop_oneof![3 => ms(0..3000), 1 => ms(3000..30_000)],
        prop_oneof![2 => Just(Start::Acquire), 3 => adopt],
        prop_oneof![
            2 => Just(Wait::Forever),
            1 => Just(Wait::No),
            1 => ms(0..20_000).prop_map(Wait::Timeout),
        ],
        prop_oneof![3 => ms(0..6000), 1 => ms(6000..30_000)],
        prop_oneof![6 => Just(None), 1 => ms(0..15_000).prop_map(Some)],
        prop_oneof![
            3 => Just(Exit::Detach),
            2 => Just(Exit::Release),
            1 => Just(Exit::Crash),
        ],
    )
        .prop_map(|(start_after, start, wait, hold, pause, exit)| Round {
            start_after,
            start,
            wait,
            hold,
            pause,
            exit,
        })
}

fn handoff_plan() -> impl Strategy<Value = ProcessPlan> {
    (
        -DRIFT_BOUND_PPM..=DRIFT_BOUND_PPM,
        0u64..1_000_000,
        proptest::collection::vec(handoff_round(), 2..6),
        any::<bool>(),
    )
        .prop_map(|(drift_ppm, offset, rounds, fenced)| ProcessPlan {
            drift_ppm,
            clock_offset: Duration::from_secs(offset),
            rounds,
            fenced: Some(fenced),
        })
}

/// Schedules of 3 or 4 processes handing holds between them, with every fault of the main
/// schedules, on every store's API, in every mode; the store keeps a clock in 3 of 4 (so that
/// adopting a hold past its lease is refused by its age).
fn handoff_schedule() -> impl Strategy<Value = Schedule> {
    let modes = prop_oneof![
        2 => Just(Mode::Presence),
        1 => Just(Mode::Fenced(ConditionalDelete::Honored)),
        1 => Just(Mode::Fenced(ConditionalDelete::NotImplemented)),
        1 => Just(Mode::Mixed),
    ];
    schedules_of(
        proptest::collection::vec(handoff_plan(), 3..=4),
        modes,
        Just(None),
        proptest::bool::weighted(0.75),
    )
}

/// A quarter of `SIM_CASES` (500 by default): these schedules have more rounds.
fn handoff_cases() -> u32 {
    (cases() / 4).max(1)
}

/// Holds handed between processes (acquired, detached, adopted to hold or to release, used
/// after a takeover, used by two processes at once) keep every property: holds with different
/// owner ids never overlap (property 1 by owner); while any process believes it holds a hold,
/// the object is a live record of that hold; acquired and renewed stand on the process's own
/// applied write (writer id included); a holder that reads a version it did not write lets
/// go at once (so a process whose writer id is no longer the record's learns `Lost` at its
/// next renewal); a handle whose hold had ended writes nothing and ends `Ended`; an adopted
/// fenced hold keeps its grant's token, and grants' tokens only grow; no foreign writes;
/// validity from the send; no spurious loss, bounded release, liveness.
#[test]
fn holds_handed_between_processes_keep_every_property() {
    check_cases(
        handoff_schedule(),
        handoff_cases(),
        "every property with handles",
        |_| true,
    );
}

/// What happened in a report, for the path counts.
fn handoff_paths(r: &sets3lock_mock::Report, totals: &mut std::collections::BTreeMap<&str, usize>) {
    use sets3lock_proto::{Event, HoldEnded, LostReason, NotAcquired};
    let mut add = |k, n: usize| *totals.entry(k).or_default() += n;
    let count = |f: &dyn Fn(Resume, bool, &Event) -> bool| {
        r.adoptions
            .iter()
            .filter(|(_, _, then, ended, e)| f(*then, *ended, e))
            .count()
    };
    add(
        "adopted and held",
        count(&|then, _, e| then == Resume::Hold && matches!(e, Event::Acquired { .. })),
    );
    add(
        "released from a handle",
        count(&|then, _, e| then == Resume::Release && matches!(e, Event::Released { .. })),
    );
    let ended = |e: &Event, f: fn(&HoldEnded) -> bool| matches!(e, Event::NotAcquired { reason: NotAcquired::Ended { ended } } if f(ended));
    add(
        "a handle after a takeover: TakenOver",
        count(&|_, was_ended, e| {
            was_ended && ended(e, |h| matches!(h, HoldEnded::TakenOver { .. }))
        }),
    );
    add(
        "a handle after a release: Gone or Released",
        count(&|_, _, e| {
            ended(e, |h| {
                matches!(h, HoldEnded::Gone | HoldEnded::Released { .. })
            })
        }),
    );
    add(
        "a handle past its lease by the store's clock: Expired",
        count(&|_, _, e| ended(e, |h| matches!(h, HoldEnded::Expired { .. }))),
    );
    add(
        "one hold claimed by two processes",
        usize::from(r.shared_claims > 0),
    );
    // A process that lost its hold to another writer of the same hold.
    let mut holds = std::collections::BTreeMap::new();
    let mut superseded = 0;
    for (_, p, e) in &r.events {
        match e {
            Event::Acquired { owner, .. } => {
                holds.insert(*p, *owner);
            }
            Event::Lost {
                reason: LostReason::Overwritten { holder: Some(h) },
            } if h.owner().is_some() && h.owner() == holds.get(p).copied() => superseded += 1,
            _ => {}
        }
    }
    add("lost to another writer of its hold", superseded);
    let released = |f: fn(&ReleaseOutcome) -> bool| {
        r.events
            .iter()
            .filter(|(_, _, e)| matches!(e, Event::Released { outcome } if f(outcome)))
            .count()
    };
    add(
        "released from a handle whose record was not parked: Resting",
        count(&|then, _, e| {
            then == Resume::Release
                && matches!(
                    e,
                    Event::Released {
                        outcome: ReleaseOutcome::Resting
                    }
                )
        }),
    );
    add(
        "a release that found another process of its hold: HeldElsewhere",
        released(|o| *o == ReleaseOutcome::HeldElsewhere),
    );
    add(
        "detached and parked: Parked",
        released(|o| *o == ReleaseOutcome::Parked),
    );
    add(
        "fenced adoptions",
        count(&|_, _, e| matches!(e, Event::Acquired { token: Some(_), .. })),
    );
}

/// The schedules with handles reach what they are for: adoptions that hold and that release,
/// handles used after a takeover (refused, `TakenOver`), after a release, and past their lease
/// by the store's clock; one hold claimed by two processes at once, and the earlier of them
/// losing it to the later; fenced adoptions.
#[test]
fn handoff_schedules_reach_every_path() {
    use proptest::strategy::ValueTree;
    let mut runner = TestRunner::deterministic();
    let mut totals = std::collections::BTreeMap::<&str, usize>::new();
    for _ in 0..300 {
        let s = handoff_schedule()
            .new_tree(&mut runner)
            .expect("tree")
            .current();
        handoff_paths(&s.run(), &mut totals);
    }
    eprintln!("{totals:#?}");
    for (key, at_least) in [
        ("adopted and held", 100),
        ("released from a handle", 20),
        ("a handle after a takeover: TakenOver", 5),
        ("a handle after a release: Gone or Released", 20),
        ("a handle past its lease by the store's clock: Expired", 5),
        ("one hold claimed by two processes", 10),
        ("lost to another writer of its hold", 10),
        ("fenced adoptions", 20),
        (
            "released from a handle whose record was not parked: Resting",
            10,
        ),
        (
            "a release that found another process of its hold: HeldElsewhere",
            10,
        ),
        ("detached and parked: Parked", 50),
    ] {
        assert!(
            totals.get(key).copied().unwrap_or(0) >= at_least,
            "{key}: fewer than {at_least}: {totals:#?}"
        );
    }
}

// ---- at most one acquisition per period ----------------------------------------------------

/// `Config::hold_at_least` in the hold-at-least schedules.
const PERIOD: Duration = Duration::from_secs(30);

/// A round of the hold-at-least schedules: mostly try-once runs started at any time (a cron
/// job), some waiters; held for less than the period mostly, or for longer; released.
fn periodic_round() -> impl Strategy<Value = Round> {
    (
        ms(0..45_000),
        prop_oneof![
            4 => Just(Wait::No),
            1 => Just(Wait::Forever),
            1 => ms(0..40_000).prop_map(Wait::Timeout),
        ],
        prop_oneof![4 => ms(0..10_000), 1 => ms(30_000..40_000)],
    )
        .prop_map(|(start_after, wait, hold)| Round {
            start_after,
            start: Start::Acquire,
            wait,
            hold,
            pause: None,
            exit: Exit::Release,
        })
}

/// Schedules of 3 to 5 processes under `hold_at_least` (30 s, leases of 10 s or 4 s) on a
/// store with a clock, with the main schedules' faults, drift within the bound, every store's
/// API, presence and fenced mode.
fn periodic_schedule() -> impl Strategy<Value = Schedule> {
    let plan = (
        -DRIFT_BOUND_PPM..=DRIFT_BOUND_PPM,
        0u64..1_000_000,
        proptest::collection::vec(periodic_round(), 1..5),
    )
        .prop_map(|(drift_ppm, offset, rounds)| ProcessPlan {
            drift_ppm,
            clock_offset: Duration::from_secs(offset),
            rounds,
            fenced: None,
        });
    let modes = prop_oneof![
        1 => Just(Mode::Presence),
        1 => Just(Mode::Fenced(ConditionalDelete::Honored)),
    ];
    schedules_of(
        proptest::collection::vec(plan, 3..=5),
        modes,
        Just(None),
        Just(true),
    )
    .prop_map(|s| Schedule {
        hold_at_least: Some(PERIOD),
        ..s
    })
}

/// Successive grants on the key, in real time, after a hold released within the period (or
/// after it): `(landed, next landed)`. Holds that crashed, expired, were lost or failed to
/// release leave no resting record: only their lease protects the period (docs/PROTOCOL.md,
/// "What it does not cover"), and they are left out.
fn periods(r: &sets3lock_mock::Report) -> Vec<(Duration, Duration)> {
    use sets3lock_proto::{Event, ReleaseOutcome};
    // Each hold's owner and when its process heard `Acquired`, until its final event.
    let mut holding = std::collections::BTreeMap::new();
    // The grants that released holds stood on: the last of the owner's grants that landed
    // before its process heard `Acquired` (an acquisition whose first landed write was taken
    // over unseen lands again, with the same owner id, as a grant of its own).
    let mut released = std::collections::BTreeSet::new();
    for (t, p, e) in &r.events {
        match e {
            Event::Acquired { owner, .. } => {
                holding.insert(*p, (*owner, *t));
            }
            Event::Released {
                outcome: ReleaseOutcome::Resting | ReleaseOutcome::Deleted | ReleaseOutcome::Freed,
            } => {
                if let Some((owner, at)) = holding.remove(p) {
                    let grant = r
                        .grants
                        .iter()
                        .rposition(|(g, _, o)| *o == owner && *g <= at);
                    released.extend(grant);
                }
            }
            e if e.is_final() => {
                holding.remove(p);
            }
            _ => {}
        }
    }
    r.grants
        .windows(2)
        .enumerate()
        .filter(|(i, _)| released.contains(i))
        .map(|(_, w)| (w[0].0, w[1].0))
        .collect()
}

/// At most one acquisition per period: under `hold_at_least` D, a grant after a hold that was
/// released lands at least D after that hold's grant, in real time, whether it is a waiter's
/// or a try-once run's that started at any time and read the resting record's age on the
/// store's clock; with every fault, drift within the bound, and every other property.
#[test]
fn hold_at_least_lets_at_most_one_acquisition_in_per_period() {
    let mut runner = TestRunner::new(ProptestConfig {
        cases: handoff_cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let result = runner.run(&periodic_schedule(), |s| {
        let report = s.run();
        if let Some(v) = report.violations.first() {
            return Err(TestCaseError::fail(format!("broken: {v:?}")));
        }
        if let Some((a, b)) = periods(&report).into_iter().find(|(a, b)| *b - *a < PERIOD) {
            return Err(TestCaseError::fail(format!(
                "two grants {:?} apart (at {a:?} and {b:?}), within the period {PERIOD:?}",
                b - a
            )));
        }
        Ok(())
    });
    if let Err(proptest::test_runner::TestError::Fail(reason, s)) = result {
        let report = s.run();
        panic!("{reason}\n{s:#?}\n{}", report.timeline());
    }
}

/// The hold-at-least schedules reach what they are for: holds left resting, try-once runs
/// refused during the rest, and grants soon after the period (so that the bound is tight,
/// not met by accident).
#[test]
fn hold_at_least_schedules_reach_every_path() {
    use proptest::strategy::ValueTree;
    use sets3lock_proto::{Event, NotAcquired, ReleaseOutcome};
    let mut runner = TestRunner::deterministic();
    let (mut resting, mut refused, mut soon_after, mut gaps) = (0, 0, 0, 0);
    for _ in 0..150 {
        let s = periodic_schedule()
            .new_tree(&mut runner)
            .expect("tree")
            .current();
        let r = s.run();
        resting += r.count(|e| {
            matches!(
                e,
                Event::Released {
                    outcome: ReleaseOutcome::Resting
                }
            )
        });
        refused += r.count(|e| {
            matches!(
                e,
                Event::NotAcquired {
                    reason: NotAcquired::Busy { .. }
                }
            )
        });
        let p = periods(&r);
        gaps += p.len();
        soon_after += p
            .iter()
            .filter(|(a, b)| *b - *a < PERIOD + Duration::from_secs(3))
            .count();
    }
    eprintln!("{resting} resting releases, {refused} refused, {gaps} periods, {soon_after} grants within 3 s after the period");
    assert!(resting > 50 && refused > 50 && gaps > 50 && soon_after > 10);
}

// ---- hand-offs, step by step, under every single fault --------------------------------------

/// A round of the hand-off scenarios, starting `start_after_ms` after the previous one.
fn step(start_after_ms: u64, start: Start, hold_ms: u64, exit: Exit) -> Round {
    Round {
        start_after: Duration::from_millis(start_after_ms),
        start,
        wait: Wait::Forever,
        hold: Duration::from_millis(hold_ms),
        pause: None,
        exit,
    }
}

const ADOPT: Start = Start::Adopt {
    handle: 0,
    then: Resume::Hold,
};
const RELEASE_HANDLE: Start = Start::Adopt {
    handle: 0,
    then: Resume::Release,
};

/// Runs `plans` (no drift, a store clock) with `faults`, fenced or not: the report, failing on
/// any violation.
fn scenario(plans: &[Vec<Round>], faults: Vec<Fault>, fenced: bool) -> sets3lock_mock::Report {
    let mut cfg = SimConfig {
        store_clock: Some(EPOCH_MS),
        horizon: Duration::from_secs(600),
        ..SimConfig::default()
    };
    cfg.lock.fenced = fenced;
    let plans = plans
        .iter()
        .map(|rounds| ProcessPlan {
            drift_ppm: 0,
            clock_offset: Duration::ZERO,
            rounds: rounds.clone(),
            fenced: None,
        })
        .collect();
    let report = Sim::new(cfg, plans, faults.clone(), 3)
        .expect("valid")
        .run();
    assert!(
        report.violations.is_empty(),
        "{:?} with faults {faults:?}:\n{}",
        report.violations,
        report.timeline()
    );
    report
}

/// Every single fault, on every request of a fault-free run of `plans` in turn (and two
/// requests more): each fault kind of the main schedules, once. Every property must hold on
/// each; `each` looks at the reports too.
fn under_every_single_fault(
    plans: &[Vec<Round>],
    fenced: bool,
    mut each: impl FnMut(&sets3lock_mock::Report),
) -> usize {
    let ms = Duration::from_millis;
    let fine = Fault::Deliver {
        to_server: ms(5),
        to_client: ms(5),
    };
    let kinds = [
        Fault::Lose {
            applied_after: None,
        },
        Fault::Lose {
            applied_after: Some(ms(5)),
        },
        Fault::Lose {
            applied_after: Some(ms(4000)),
        },
        Fault::Deliver {
            to_server: ms(1990),
            to_client: ms(5),
        },
        Fault::Deliver {
            to_server: ms(5),
            to_client: ms(2500),
        },
        Fault::Conflict { latency: ms(10) },
        Fault::Refused { latency: ms(1) },
        Fault::ServerError {
            latency: ms(20),
            applied: true,
        },
        Fault::ServerError {
            latency: ms(20),
            applied: false,
        },
    ];
    let requests = scenario(plans, vec![], fenced).requests.len();
    let mut runs = 0;
    for at in 0..requests + 2 {
        for kind in kinds {
            let mut faults = vec![fine; at];
            faults.push(kind);
            each(&scenario(plans, faults, fenced));
            runs += 1;
        }
    }
    runs
}

/// The owner id of process `p`'s first `Acquired`.
fn first_owner(r: &sets3lock_mock::Report, p: usize) -> Option<sets3lock_proto::OwnerId> {
    r.events.iter().find_map(|(_, q, e)| match e {
        sets3lock_proto::Event::Acquired { owner, .. } if *q == p => Some(*owner),
        _ => None,
    })
}

/// A hold handed through three processes: the first acquires and lets go; the second
/// continues it, renews it for 15 s and lets go; the third releases it from the handle. The
/// same hold (owner id, token) throughout, the object gone at the end; and under every single
/// fault, every property.
#[test]
fn a_hold_handed_through_three_processes_keeps_every_property_under_every_single_fault() {
    use sets3lock_proto::{Event, ReleaseOutcome};
    let plans = [
        vec![step(0, Start::Acquire, 2000, Exit::Detach)],
        vec![step(3000, ADOPT, 15_000, Exit::Detach)],
        vec![step(21_000, RELEASE_HANDLE, 0, Exit::Release)],
    ];
    for fenced in [false, true] {
        let r = scenario(&plans, vec![], fenced);
        let owner = first_owner(&r, 0).expect("acquired");
        assert_eq!(first_owner(&r, 1), Some(owner), "the same hold");
        let renewed = r
            .events
            .iter()
            .filter(|(_, p, e)| *p == 1 && matches!(e, Event::Renewed { .. }))
            .count();
        assert!(renewed >= 3, "renewed {renewed} times:\n{}", r.timeline());
        let released = if fenced {
            ReleaseOutcome::Freed
        } else {
            ReleaseOutcome::Deleted
        };
        assert!(
            r.events
                .iter()
                .any(|(_, p, e)| *p == 2 && *e == Event::Released { outcome: released }),
            "{}",
            r.timeline()
        );
        if fenced {
            assert!(r
                .events
                .iter()
                .filter(|(_, p, _)| *p < 2)
                .all(|(_, _, e)| !matches!(e, Event::Acquired { token, .. } if *token != Some(1))));
        }
        let runs = under_every_single_fault(&plans, fenced, |_| {});
        assert!(runs > 50, "{runs}");
    }
}

/// A handle used after its hold was taken over: the first process acquires and lets go; a
/// waiter takes the hold over once its lease has run out; then the handle is used to hold
/// and to release. Both end `Ended { TakenOver }` naming the waiter's hold, and send only
/// reads (the simulation fails any write of an adoption of an ended hold); the waiter keeps
/// its hold. Under every single fault, every property.
#[test]
fn a_handle_used_after_a_takeover_is_refused_and_writes_nothing_under_every_single_fault() {
    use sets3lock_proto::{Event, HoldEnded, NotAcquired, Purpose};
    let plans = [
        vec![step(0, Start::Acquire, 1000, Exit::Detach)],
        vec![step(500, Start::Acquire, 30_000, Exit::Release)],
        vec![
            step(20_000, ADOPT, 0, Exit::Release),
            step(0, RELEASE_HANDLE, 0, Exit::Release),
        ],
    ];
    let r = scenario(&plans, vec![], false);
    let waiter = first_owner(&r, 1).expect("the waiter took over");
    assert_eq!(r.adoptions.len(), 2, "{:?}", r.adoptions);
    for (_, p, _, ended, e) in &r.adoptions {
        assert_eq!(*p, 2);
        assert!(*ended, "the hold had ended");
        assert!(
            matches!(e, Event::NotAcquired { reason: NotAcquired::Ended { ended: HoldEnded::TakenOver { holder } } }
                if holder.owner() == Some(waiter)),
            "{e:?}"
        );
    }
    assert!(
        r.requests
            .iter()
            .filter(|(_, p, _)| *p == 2)
            .all(|(_, _, purpose)| *purpose == Purpose::Resolve),
        "only reads: {:?}",
        r.requests
    );
    let mut refused = 0;
    under_every_single_fault(&plans, false, |r| {
        refused += r
            .adoptions
            .iter()
            .filter(|(_, _, _, ended, _)| *ended)
            .count();
    });
    assert!(refused > 100, "{refused}");
}

/// One handle used by two processes at once: both continue the hold as soon as it is let go
/// of, and a third continues it while they hold it. At times two processes claim it (one hold
/// in two places, as documented); each time the earlier writer learns `Lost` at its next
/// renewal and the later keeps the hold; no other hold gets in meanwhile. Under every single
/// fault, every property (the simulation judges the hold's own properties at every step).
#[test]
fn one_handle_used_by_two_processes_at_once_keeps_every_property_under_every_single_fault() {
    use sets3lock_proto::{Event, LostReason};
    let plans = [
        vec![step(0, Start::Acquire, 1000, Exit::Detach)],
        vec![step(2000, ADOPT, 12_000, Exit::Release)],
        vec![step(2000, ADOPT, 12_000, Exit::Release)],
        vec![step(6000, ADOPT, 12_000, Exit::Release)],
        // A waiter all along: it gets in only once the hold is released.
        vec![step(1500, Start::Acquire, 1000, Exit::Release)],
    ];
    let r = scenario(&plans, vec![], false);
    let owner = first_owner(&r, 0).expect("acquired");
    assert!(r.shared_claims > 0, "two processes claimed it at once");
    let lost: Vec<usize> = r
        .events
        .iter()
        .filter(|(_, _, e)| {
            matches!(e, Event::Lost { reason: LostReason::Overwritten { holder: Some(h) } } if h.owner() == Some(owner))
        })
        .map(|(_, p, _)| *p)
        .collect();
    assert_eq!(
        lost.len(),
        2,
        "two of the three lost it to a later writer: {lost:?}\n{}",
        r.timeline()
    );
    assert!(
        first_owner(&r, 4).is_some_and(|o| o != owner),
        "the waiter got in after"
    );
    let mut shared = 0;
    under_every_single_fault(&plans, false, |r| {
        shared += usize::from(r.shared_claims > 0)
    });
    assert!(shared > 100, "{shared}");
}
