//! Random schedules of holds handed between processes: acquired, detached, adopted (to hold
//! or to release), used after a takeover, used by two processes at once; with lost replies
//! (applied or not), slow replies, 503s, crashes and clock rates within ±0.9%. After every
//! step, no two holds (owners) are valid at once; a hold continued by two processes ends up
//! with one of them; an adopted fenced hold keeps its token, and grants' tokens only grow; a
//! handle whose hold has ended is refused without a write.
//!
//! A small simulator of its own (one store, one global clock, each process's clock running
//! at its own rate), so that handles can pass between processes, which the main simulator's
//! plans do not model.

use core::time::Duration;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use sets3lock_mock::MockS3;
use sets3lock_proto::{
    Ambiguity, Config, Event, Handle, Instant, Lock, LockUrl, NotAcquired, Request, Response,
    Resume, Wait,
};

const B: &str = "bucket";
const K: &str = "lock";
const EPOCH_MS: u64 = 1_796_205_600_000;
const LEASE: Duration = Duration::from_secs(6);
const TIMEOUT_MS: u64 = 1_500;

/// What a process does next, when it is idle.
#[derive(Clone, Debug)]
enum Action {
    /// Acquire, waiting or not; then hold for this long; then detach (handing the handle on)
    /// or release.
    Acquire {
        wait: bool,
        hold_ms: u64,
        detach: bool,
    },
    /// Adopt handle number `which` from the pool; then hold for this long; then detach or
    /// release (or, with `release`, release it at once).
    Adopt {
        which: usize,
        release: bool,
        hold_ms: u64,
        detach: bool,
    },
    /// Crash: the lock is dropped wherever it is.
    Crash,
    /// Do nothing for this long.
    Pause { ms: u64 },
}

/// How the network treats one request.
#[derive(Clone, Copy, Debug)]
enum Fate {
    Ok {
        ms: u64,
    },
    /// Applied, reply lost: the driver times out.
    LostAfter,
    /// Never applied: the driver times out.
    LostBefore,
    /// 503, not applied.
    Unavailable,
}

#[derive(Debug)]
enum Stage {
    Idle,
    Busy {
        until_hold_ends: Option<u64>,
        detach: bool,
    },
}

struct Proc {
    lock: Lock,
    rate: f64,
    plan: Vec<Action>,
    stage: Stage,
    /// The request on the wire: when its reply comes, and what it is.
    wire: Option<(u64, Request, Response)>,
    /// The owner and token this process holds, when `Acquired`; and an adopted hold's
    /// expected token.
    expect_token: Option<Option<u64>>,
    seed: u8,
}

impl Proc {
    fn local(&self, t: u64) -> Instant {
        Instant::ZERO + Duration::from_micros((t as f64 * 1000.0 * self.rate) as u64)
    }
    fn global(&self, i: Instant) -> u64 {
        (i.since_origin().as_micros() as f64 / 1000.0 / self.rate).ceil() as u64
    }
}

fn config() -> Config {
    Config {
        lease: LEASE,
        retry_limit: 20,
        host: "sim".into(),
        pid: 1,
        ..Config::default()
    }
}

fn url() -> LockUrl {
    format!("s3://{B}/{K}").parse().expect("valid")
}

struct World {
    s3: MockS3,
    procs: Vec<Proc>,
    handles: Vec<Handle>,
    faults: Vec<Fate>,
    next_fault: usize,
    t: u64,
    /// Every grant's token, in grant order (fenced runs).
    tokens: Vec<u64>,
    fenced: bool,
    log: Vec<String>,
}

impl World {
    fn fate(&mut self) -> Fate {
        let f = self
            .faults
            .get(self.next_fault)
            .copied()
            .unwrap_or(Fate::Ok { ms: 5 });
        self.next_fault += 1;
        f
    }

    fn send(&mut self, p: usize) {
        let t = self.t;
        let Some(req) = self.procs[p].lock.poll_request() else {
            return;
        };
        let fate = self.fate();
        self.s3.set_time(EPOCH_MS + t);
        let (at, reply) = match fate {
            Fate::Ok { ms } => {
                let r = self
                    .s3
                    .execute(B, K, &req.intent)
                    .classify(req.intent.kind());
                (t + ms, r)
            }
            Fate::LostAfter => {
                let _ = self.s3.execute(B, K, &req.intent);
                (t + TIMEOUT_MS, Response::Ambiguous(Ambiguity::Timeout))
            }
            Fate::LostBefore => (t + TIMEOUT_MS, Response::Ambiguous(Ambiguity::Timeout)),
            Fate::Unavailable => (
                t + 5,
                Response::Ambiguous(Ambiguity::Status {
                    status: 503,
                    code: None,
                }),
            ),
        };
        self.log
            .push(format!("{t} p{p} {} -> {:?}", req.intent.method(), fate));
        self.procs[p].wire = Some((at, req, reply));
    }

    fn events(&mut self, p: usize) {
        while let Some(e) = self.procs[p].lock.poll_event() {
            self.log.push(format!("{} p{p} {e:?}", self.t));
            match &e {
                Event::Acquired { token, .. } => {
                    if let Some(want) = self.procs[p].expect_token.take() {
                        assert_eq!(*token, want, "an adopted hold keeps its token");
                    } else if let Some(t) = token {
                        if let Some(last) = self.tokens.last() {
                            assert!(t > last, "tokens grow: {t} after {last}");
                        }
                        self.tokens.push(*t);
                    }
                }
                Event::NotAcquired {
                    reason: NotAcquired::Ended { .. },
                } => {
                    assert!(
                        self.procs[p].lock.poll_request().is_none(),
                        "an ended adoption sends nothing more"
                    );
                }
                _ => {}
            }
        }
    }

    /// Holds valid now, by owner: never two owners.
    fn check(&self) {
        let mut owners: Vec<sets3lock_proto::OwnerId> = self
            .procs
            .iter()
            .filter(|p| p.lock.is_held(p.local(self.t)))
            .filter_map(|p| p.lock.holding().map(|(o, _)| o))
            .collect();
        owners.sort();
        owners.dedup();
        assert!(
            owners.len() <= 1,
            "two holds at {}: {owners:?}\n{}",
            self.t,
            self.log[self.log.len().saturating_sub(40)..].join("\n")
        );
    }

    fn step_plan(&mut self, p: usize) {
        let t = self.t;
        let now = self.procs[p].local(t);
        match self.procs[p].stage {
            Stage::Busy {
                until_hold_ends: Some(end),
                detach,
            } if t >= end => {
                let proc_ = &mut self.procs[p];
                if proc_.lock.is_held(now) {
                    if detach {
                        if let Ok(h) = proc_.lock.detach(now, url()) {
                            self.handles.push(h);
                        }
                    } else {
                        let _ = proc_.lock.release(now);
                    }
                }
                proc_.stage = Stage::Idle;
            }
            Stage::Busy {
                until_hold_ends: None,
                detach,
            } => {
                let proc_ = &mut self.procs[p];
                // Waiting for the acquisition's outcome.
                if proc_.lock.is_held(now) {
                    let hold = proc_.plan.first().map_or(0, hold_of);
                    proc_.plan.remove(0);
                    proc_.stage = Stage::Busy {
                        until_hold_ends: Some(t + hold),
                        detach,
                    };
                } else if proc_.lock.is_idle() && proc_.wire.is_none() {
                    proc_.plan.remove(0);
                    proc_.stage = Stage::Idle;
                }
            }
            Stage::Idle if self.procs[p].lock.is_idle() && self.procs[p].wire.is_none() => {
                let Some(action) = self.procs[p].plan.first().cloned() else {
                    return;
                };
                match action {
                    Action::Acquire { wait, detach, .. } => {
                        self.procs[p].expect_token = None;
                        let w = if wait {
                            Wait::Timeout(Duration::from_secs(30))
                        } else {
                            Wait::No
                        };
                        let _ = self.procs[p].lock.acquire(now, EPOCH_MS + t, w);
                        self.procs[p].stage = Stage::Busy {
                            until_hold_ends: None,
                            detach,
                        };
                    }
                    Action::Adopt {
                        which,
                        release,
                        detach,
                        ..
                    } => {
                        let Some(h) = (!self.handles.is_empty())
                            .then(|| self.handles[which % self.handles.len()].clone())
                        else {
                            self.procs[p].plan.remove(0);
                            return;
                        };
                        let then = if release {
                            Resume::Release
                        } else {
                            Resume::Hold
                        };
                        self.procs[p].expect_token = (!release).then_some(h.token);
                        let _ = self.procs[p].lock.adopt(now, EPOCH_MS + t, &h, then);
                        self.procs[p].stage = Stage::Busy {
                            until_hold_ends: None,
                            detach,
                        };
                    }
                    Action::Crash => {
                        let seed = self.procs[p].seed.wrapping_add(100);
                        let cfg = Config {
                            fenced: self.fenced,
                            ..config()
                        };
                        self.procs[p].lock = Lock::new(cfg, [seed; 32]).expect("valid");
                        self.procs[p].seed = seed;
                        self.procs[p].wire = None;
                        self.procs[p].expect_token = None;
                        self.procs[p].plan.remove(0);
                    }
                    Action::Pause { ms } => {
                        self.procs[p].plan.remove(0);
                        self.procs[p].stage = Stage::Busy {
                            until_hold_ends: Some(t + ms),
                            detach: false,
                        };
                    }
                }
            }
            _ => {}
        }
    }

    fn run(&mut self, horizon: u64) {
        let mut steps = 0;
        while self.t <= horizon {
            steps += 1;
            assert!(
                steps < 200_000,
                "spinning: {:?}",
                &self.log[self.log.len().saturating_sub(20)..]
            );
            for p in 0..self.procs.len() {
                self.step_plan(p);
                self.events(p);
                if self.procs[p].wire.is_none() {
                    self.send(p);
                }
            }
            self.check();
            // The next instant anything happens.
            let mut next = horizon + 1;
            for p in &self.procs {
                if let Some((at, _, _)) = &p.wire {
                    next = next.min(*at);
                } else if let Some(w) = p.lock.poll_timeout() {
                    next = next.min(p.global(w).max(self.t));
                }
                if let Stage::Busy {
                    until_hold_ends: Some(e),
                    ..
                } = p.stage
                {
                    next = next.min(e);
                }
                if matches!(p.stage, Stage::Idle) && !p.plan.is_empty() {
                    next = next.min(self.t + 1);
                }
            }
            self.t = next.max(self.t + 1).min(horizon + 1);
            for p in 0..self.procs.len() {
                let now = self.procs[p].local(self.t);
                if let Some((at, _, _)) = &self.procs[p].wire {
                    if *at <= self.t {
                        let (_, req, reply) = self.procs[p].wire.take().expect("on the wire");
                        self.procs[p].lock.handle_response(req.id, reply, now);
                    }
                } else {
                    self.procs[p].lock.handle_timeout(now);
                }
                self.events(p);
            }
            self.check();
        }
    }
}

fn hold_of(a: &Action) -> u64 {
    match a {
        Action::Acquire { hold_ms, .. } | Action::Adopt { hold_ms, .. } => *hold_ms,
        _ => 0,
    }
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        3 => (any::<bool>(), 0u64..20_000, any::<bool>())
            .prop_map(|(wait, hold_ms, detach)| Action::Acquire { wait, hold_ms, detach }),
        4 => (0usize..4, prop::bool::weighted(0.3), 0u64..20_000, any::<bool>())
            .prop_map(|(which, release, hold_ms, detach)| Action::Adopt { which, release, hold_ms, detach }),
        1 => Just(Action::Crash),
        2 => (0u64..15_000).prop_map(|ms| Action::Pause { ms }),
    ]
}

fn fate() -> impl Strategy<Value = Fate> {
    prop_oneof![
        12 => (1u64..400).prop_map(|ms| Fate::Ok { ms }),
        1 => Just(Fate::LostAfter),
        1 => Just(Fate::LostBefore),
        1 => Just(Fate::Unavailable),
    ]
}

fn world(plans: Vec<Vec<Action>>, rates: Vec<f64>, faults: Vec<Fate>, fenced: bool) -> World {
    let mut s3 = MockS3::new();
    s3.create_bucket(B);
    s3.set_time(EPOCH_MS);
    let procs = plans
        .into_iter()
        .zip(rates)
        .enumerate()
        .map(|(i, (plan, rate))| Proc {
            lock: Lock::new(Config { fenced, ..config() }, [i as u8 + 1; 32]).expect("valid"),
            rate,
            plan,
            stage: Stage::Idle,
            wire: None,
            expect_token: None,
            seed: i as u8 + 1,
        })
        .collect();
    World {
        s3,
        procs,
        handles: Vec::new(),
        faults,
        next_fault: 0,
        t: 0,
        tokens: Vec::new(),
        fenced,
        log: Vec::new(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn holds_handed_between_processes_stay_exclusive(
        plans in prop::collection::vec(prop::collection::vec(action(), 1..6), 3),
        rates in prop::collection::vec(0.991f64..1.009, 3),
        faults in prop::collection::vec(fate(), 0..200),
        fenced in any::<bool>(),
    ) {
        let mut w = world(plans, rates, faults, fenced);
        w.run(240_000);
        // Quiet: after the plans, two leases more with no faults, so that every process of a
        // hold continued twice has renewed (the loser learns it lost at its renewal).
        w.faults.clear();
        let end = w.t + 2 * LEASE.as_millis() as u64;
        w.run(end);
        let mut owners: Vec<_> = w.procs.iter()
            .filter(|p| p.lock.is_held(p.local(w.t)))
            .filter_map(|p| p.lock.holding().map(|(o, _)| o))
            .collect();
        let n = owners.len();
        owners.dedup();
        prop_assert_eq!(owners.len(), n, "one hold in two processes after it settled: {:?}", &w.log[w.log.len().saturating_sub(30)..]);
    }
}

/// The schedules reach what they are meant to: adoptions that hold, adoptions refused
/// because the hold ended, two processes of one hold, and releases from a handle.
#[test]
fn the_schedules_reach_every_path() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let (mut held, mut ended, mut lost, mut released) = (0, 0, 0, 0);
    for _ in 0..150 {
        let plans = prop::collection::vec(prop::collection::vec(action(), 1..6), 3)
            .new_tree(&mut runner)
            .expect("plans")
            .current();
        let faults = prop::collection::vec(fate(), 0..100)
            .new_tree(&mut runner)
            .expect("faults")
            .current();
        let mut w = world(plans, vec![1.0, 1.005, 0.995], faults, false);
        w.run(240_000);
        for line in &w.log {
            held += usize::from(line.contains("Acquired") && line.contains("took_over: None"));
            ended += usize::from(line.contains("Ended"));
            lost += usize::from(line.contains("Lost"));
            released += usize::from(line.contains("Released"));
        }
    }
    assert!(
        held > 50 && ended > 10 && lost > 3 && released > 10,
        "held {held}, ended {ended}, lost {lost}, released {released}"
    );
}

/// Once a counterexample: `release HANDLE` while another process still runs under the same
/// handle used to delete the record that process keeps renewing, so a third process could
/// acquire while the first still believed it held the lock, until its next renewal. These are
/// the schedules that found it (with the drift that made it show); the record a release finds
/// not parked now makes the lock rest until that process's lease is surely over.
#[test]
fn releasing_a_handle_in_use_keeps_a_third_process_out() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    for _ in 0..150 {
        let plans = prop::collection::vec(prop::collection::vec(action(), 1..6), 3)
            .new_tree(&mut runner)
            .expect("plans")
            .current();
        let faults = prop::collection::vec(fate(), 0..100)
            .new_tree(&mut runner)
            .expect("faults")
            .current();
        world(plans, vec![1.0, 1.005, 0.995], faults, false).run(240_000);
    }
}
