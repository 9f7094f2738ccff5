//! A deterministic simulation: several processes using the core, one mock bucket, one timeline.

use crate::fault::Timing;
use crate::{DriftClock, Fault, MockS3, Semantics};
use bytes::Bytes;
use core::cmp::Ordering;
use core::time::Duration;
use sets3lock::{
    Ambiguity, Config, Event, Holder, Instant, Lock, OwnerId, Purpose, Request, RequestId,
    Response, Wait,
};
use std::collections::{BTreeSet, BinaryHeap};

const BUCKET: &str = "sim-bucket";
const KEY: &str = "lock";
/// A run goes on after a violation, so that every property is judged on every schedule, but
/// stops once this many are recorded.
const MAX_VIOLATIONS: usize = 64;

/// Settings shared by every process of one simulation.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// The core's settings (lease, drift bound, pacing). Every process uses them.
    pub lock: Config,
    /// How long a process's driver waits for a reply before answering "timeout".
    pub request_timeout: Duration,
    /// Latency each way once the fault list is used up.
    pub latency: Duration,
    /// How the mock answers where servers differ.
    pub semantics: Semantics,
    /// Stop after this much real time; plans not finished by then fail the liveness check.
    pub horizon: Duration,
}

impl Default for SimConfig {
    /// A 10 s lease, 1% drift bound, fast polling, 2 s request timeout, 5 ms latency.
    fn default() -> SimConfig {
        SimConfig {
            lock: Config {
                lease: Duration::from_secs(10),
                max_drift_ppm: 10_000,
                poll: sets3lock::Backoff::new(Duration::from_millis(50), Duration::from_secs(1)),
                retry: sets3lock::Backoff::new(
                    Duration::from_millis(20),
                    Duration::from_millis(500),
                ),
                // Above the longest run of faults a schedule has (60): a network that heals
                // must not be given up on, or liveness could not be judged.
                retry_limit: 64,
                foreign_lease: None,
                conditional_get: true,
                host: "sim".into(),
                pid: 1,
            },
            request_timeout: Duration::from_secs(2),
            latency: Duration::from_millis(5),
            semantics: Semantics::default(),
            horizon: Duration::from_secs(3600),
        }
    }
}

/// What one process does, round after round.
#[derive(Clone, Debug)]
pub struct ProcessPlan {
    /// Its clock's rate error in parts per million (keep within the configured drift bound
    /// for the safety property to be promised).
    pub drift_ppm: i32,
    /// Its clock's reading at real time zero.
    pub clock_offset: Duration,
    /// Its rounds, in order.
    pub rounds: Vec<Round>,
}

/// One acquire / hold / end cycle.
#[derive(Clone, Debug)]
pub struct Round {
    /// Pause before acquiring (after the previous round ended).
    pub start_after: Duration,
    /// How long to wait for the lock.
    pub wait: Wait,
    /// How long to hold it once acquired (by the process's clock).
    pub hold: Duration,
    /// Freeze the whole process right after acquiring, for this long: a GC pause or a
    /// suspended VM. Its lock must expire on its own clock meanwhile.
    pub pause: Option<Duration>,
    /// How the hold ends.
    pub exit: Exit,
}

/// How a hold ends: the exit section, in the words of the mutual-exclusion literature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Release the lock.
    Release,
    /// The process dies: nothing more from it (requests in flight still land).
    Crash,
}

/// Something done to the bucket behind the processes' backs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tamper {
    /// Delete the lock object.
    Delete,
    /// Overwrite it with this body.
    Overwrite(Bytes),
}

/// A broken safety property, with when and who.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Violation {
    /// Property 1: two processes considered themselves holding a valid lock at once.
    TwoHolders {
        /// Real time.
        at: Duration,
        /// The processes.
        processes: (usize, usize),
    },
    /// Property 2: a renewal, release or cleanup replaced or removed another owner's object.
    ForeignWrite {
        /// Real time.
        at: Duration,
        /// The process.
        process: usize,
        /// What it was doing.
        purpose: Purpose,
    },
    /// Property 3: a process reported "acquired" while its write was not the current object.
    AcquiredWithoutOwnWrite {
        /// Real time.
        at: Duration,
        /// The process.
        process: usize,
    },
    /// Liveness: a process's plan did not finish by the horizon (it waited forever, or on its
    /// own lock), or a round that waits forever ended without the lock.
    Stuck {
        /// The process.
        process: usize,
        /// The round it was in.
        round: usize,
    },
}

/// What a simulation saw.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Broken properties, in order (at most 64: the run stops there).
    pub violations: Vec<Violation>,
    /// Every event each process's core emitted, with the real time.
    pub events: Vec<(Duration, usize, Event)>,
    /// Requests sent, by purpose.
    pub requests: Vec<(Duration, usize, Purpose)>,
    /// Real time at the end.
    pub end: Duration,
}

impl Report {
    /// The run as a timeline, one line per request sent and per event, for people.
    pub fn timeline(&self) -> String {
        let mut lines: Vec<(Duration, usize, String)> = self
            .events
            .iter()
            .map(|(t, p, e)| (*t, *p, format!("{e:?}")))
            .chain(
                self.requests
                    .iter()
                    .map(|(t, p, purpose)| (*t, *p, format!("sends {purpose}"))),
            )
            .collect();
        lines.sort_by_key(|(t, _, _)| *t);
        lines
            .into_iter()
            .map(|(t, p, what)| format!("{:>10.3}s process {p}: {what}\n", t.as_secs_f64()))
            .collect()
    }

    /// How many events match `f`.
    pub fn count(&self, f: impl Fn(&Event) -> bool) -> usize {
        self.events.iter().filter(|(_, _, e)| f(e)).count()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    BeforeRound,
    Acquiring,
    Holding,
    Releasing,
    Finished,
    Crashed,
}

struct Process {
    lock: Lock,
    clock: DriftClock,
    plan: ProcessPlan,
    round: usize,
    stage: Stage,
    acquired_this_round: bool,
    paused_until: Duration,
    owners: BTreeSet<OwnerId>,
    timer_gen: u64,
    step_gen: u64,
}

enum What {
    Apply {
        process: usize,
        request: Request,
        timing: Timing,
    },
    Answer {
        process: usize,
        id: RequestId,
        response: Response,
    },
    Timer {
        process: usize,
        gen: u64,
    },
    Step {
        process: usize,
        gen: u64,
    },
    Tamper(Tamper),
}

struct Entry {
    at: Duration,
    seq: u64,
    what: What,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Entry) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Entry) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    // Reversed: BinaryHeap is a max-heap, we want the earliest first.
    fn cmp(&self, other: &Entry) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// N processes, each driving a core, against one [`MockS3`] on a virtual timeline.
///
/// ```
/// use core::time::Duration;
/// use sets3lock::Wait;
/// use sets3lock_mock::{Exit, ProcessPlan, Round, Sim, SimConfig};
///
/// let round = Round { start_after: Duration::ZERO, wait: Wait::Forever,
///     hold: Duration::from_secs(1), pause: None, exit: Exit::Release };
/// let plans = (0..3).map(|i| ProcessPlan { drift_ppm: 0, clock_offset: Duration::from_secs(i),
///     rounds: vec![round.clone(); 2] }).collect();
/// let report = Sim::new(SimConfig::default(), plans, vec![], 1).run();
/// assert!(report.violations.is_empty(), "{:?}", report.violations);
/// assert_eq!(report.count(|e| matches!(e, sets3lock::Event::Acquired { .. })), 6);
/// ```
pub struct Sim {
    cfg: SimConfig,
    s3: MockS3,
    processes: Vec<Process>,
    faults: Vec<Fault>,
    next_fault: usize,
    queue: BinaryHeap<Entry>,
    seq: u64,
    now: Duration,
    report: Report,
}

impl Sim {
    /// A simulation of `plans` against an empty lock key, with `faults` applied to the
    /// requests in the order they are sent. `seed` seeds the processes' cores (owner ids,
    /// jitter).
    pub fn new(cfg: SimConfig, plans: Vec<ProcessPlan>, faults: Vec<Fault>, seed: u64) -> Sim {
        let mut s3 = MockS3::with_semantics(cfg.semantics);
        s3.create_bucket(BUCKET);
        let processes = plans
            .into_iter()
            .enumerate()
            .map(|(i, plan)| {
                let mut core_seed = [0u8; 32];
                core_seed[..8].copy_from_slice(&seed.to_le_bytes());
                core_seed[8..16].copy_from_slice(&(i as u64).to_le_bytes());
                let lock = Lock::new(cfg.lock.clone(), core_seed)
                    .unwrap_or_else(|e| panic!("invalid simulation config: {e}"));
                Process {
                    lock,
                    clock: DriftClock::new(plan.clock_offset, plan.drift_ppm),
                    plan,
                    round: 0,
                    stage: Stage::BeforeRound,
                    acquired_this_round: false,
                    paused_until: Duration::ZERO,
                    owners: BTreeSet::new(),
                    timer_gen: 0,
                    step_gen: 0,
                }
            })
            .collect();
        let mut sim = Sim {
            cfg,
            s3,
            processes,
            faults,
            next_fault: 0,
            queue: BinaryHeap::new(),
            seq: 0,
            now: Duration::ZERO,
            report: Report::default(),
        };
        for p in 0..sim.processes.len() {
            sim.start_round_later(p);
        }
        sim
    }

    /// Does something to the bucket at real time `at`.
    pub fn tamper(&mut self, at: Duration, tamper: Tamper) {
        self.push(at, What::Tamper(tamper));
    }

    /// The mock S3 (to inspect the object at the end).
    pub fn s3(&self) -> &MockS3 {
        &self.s3
    }

    /// Runs to the end: every plan finished and nothing in flight, 64 violations, or the
    /// horizon.
    pub fn run(mut self) -> Report {
        while let Some(entry) = self.queue.pop() {
            if entry.at > self.cfg.horizon {
                break;
            }
            self.now = entry.at;
            self.handle(entry.what);
            self.check_holders();
            if self.report.violations.len() >= MAX_VIOLATIONS {
                self.report.end = self.now;
                return self.report;
            }
        }
        for (i, p) in self.processes.iter().enumerate() {
            if !matches!(p.stage, Stage::Finished | Stage::Crashed) {
                self.report.violations.push(Violation::Stuck {
                    process: i,
                    round: p.round,
                });
            }
        }
        self.report.end = self.now;
        self.report
    }

    fn push(&mut self, at: Duration, what: What) {
        self.seq += 1;
        self.queue.push(Entry {
            at,
            seq: self.seq,
            what,
        });
    }

    fn process_of(what: &What) -> Option<usize> {
        match what {
            What::Answer { process, .. }
            | What::Timer { process, .. }
            | What::Step { process, .. } => Some(*process),
            What::Apply { .. } | What::Tamper(_) => None,
        }
    }

    fn handle(&mut self, what: What) {
        if let Some(p) = Sim::process_of(&what) {
            if self.processes[p].stage == Stage::Crashed {
                return;
            }
            let until = self.processes[p].paused_until;
            if until > self.now {
                // A frozen process handles nothing; everything waits for it to thaw.
                return self.push(until, what);
            }
        }
        match what {
            What::Apply {
                process,
                request,
                timing,
            } => self.apply(process, request, timing),
            What::Answer {
                process,
                id,
                response,
            } => {
                let now = self.local(process);
                self.processes[process]
                    .lock
                    .handle_response(id, response, now);
                self.pump(process);
            }
            What::Timer { process, gen } => {
                if gen == self.processes[process].timer_gen {
                    let now = self.local(process);
                    self.processes[process].lock.handle_timeout(now);
                    self.pump(process);
                }
            }
            What::Step { process, gen } => {
                if gen == self.processes[process].step_gen {
                    self.step(process);
                }
            }
            What::Tamper(t) => match t {
                Tamper::Delete => self.s3.force(BUCKET, KEY, None),
                Tamper::Overwrite(body) => self.s3.force(BUCKET, KEY, Some(body)),
            },
        }
    }

    fn local(&self, p: usize) -> Instant {
        self.processes[p].clock.local(self.now)
    }

    // ---- the network -----------------------------------------------------------------------

    fn send(&mut self, p: usize, request: Request) {
        self.report.requests.push((self.now, p, request.purpose));
        if let Some(body) = request.intent.body() {
            if let Holder::Sets3lock(r) = Holder::decode(body) {
                self.processes[p].owners.insert(r.owner);
            }
        }
        let fault = self
            .faults
            .get(self.next_fault)
            .copied()
            .unwrap_or(Fault::Deliver {
                to_server: self.cfg.latency,
                to_client: self.cfg.latency,
            });
        self.next_fault += 1;
        let timing = fault.timing(self.now, self.cfg.request_timeout);
        // Answers that do not depend on the server's reply are queued now; the others when
        // the server applies the request.
        match timing {
            Timing::TimedOut { gives_up, .. } => self.push(
                gives_up,
                What::Answer {
                    process: p,
                    id: request.id,
                    response: Response::Ambiguous(Ambiguity::Timeout),
                },
            ),
            Timing::Failed {
                applied: None,
                error,
                answered,
            } => self.push(
                answered,
                What::Answer {
                    process: p,
                    id: request.id,
                    response: error.reply().classify(request.intent.kind()),
                },
            ),
            Timing::Answered { .. } | Timing::Failed { .. } => {}
        }
        if let Some(at) = timing.applied() {
            self.push(
                at,
                What::Apply {
                    process: p,
                    request,
                    timing,
                },
            );
        }
    }

    fn apply(&mut self, p: usize, request: Request, timing: Timing) {
        let before = self.s3.object(BUCKET, KEY).cloned();
        let served = self.s3.respond(BUCKET, KEY, &request.intent);
        let after = self.s3.object(BUCKET, KEY).cloned();
        self.check_foreign_write(p, &request, before.as_ref(), after.as_ref());
        let (at, response) = match timing {
            Timing::Answered { answered, .. } => (answered, served),
            Timing::Failed {
                error, answered, ..
            } => (answered, error.reply().classify(request.intent.kind())),
            Timing::TimedOut { .. } => return,
        };
        self.push(
            at,
            What::Answer {
                process: p,
                id: request.id,
                response,
            },
        );
    }

    // ---- the processes' drivers and plans ----------------------------------------------------

    /// Sends what the core wants sent, handles its events, arms its timer.
    fn pump(&mut self, p: usize) {
        loop {
            let mut busy = false;
            while let Some(request) = self.processes[p].lock.poll_request() {
                busy = true;
                self.send(p, request);
            }
            while let Some(event) = self.processes[p].lock.poll_event() {
                busy = true;
                self.on_event(p, event);
            }
            if !busy {
                break;
            }
        }
        let process = &mut self.processes[p];
        process.timer_gen += 1;
        if let Some(t) = process.lock.poll_timeout() {
            let at = process.clock.real_at(t).max(self.now);
            let gen = process.timer_gen;
            self.push(at, What::Timer { process: p, gen });
        }
    }

    fn on_event(&mut self, p: usize, event: Event) {
        self.report.events.push((self.now, p, event.clone()));
        match event {
            Event::Acquired { etag, owner, .. } => {
                let current = self.s3.object(BUCKET, KEY);
                let ours = current.is_some_and(|o| {
                    o.etag == etag && Holder::decode(&o.body).owner() == Some(owner)
                });
                if !ours {
                    self.report
                        .violations
                        .push(Violation::AcquiredWithoutOwnWrite {
                            at: self.now,
                            process: p,
                        });
                }
                let process = &mut self.processes[p];
                process.stage = Stage::Holding;
                process.acquired_this_round = true;
                let round = &process.plan.rounds[process.round];
                if let Some(pause) = round.pause {
                    process.paused_until = self.now + pause;
                }
                let end_local = process.clock.local(self.now) + round.hold;
                let at = process.clock.real_at(end_local).max(process.paused_until);
                process.step_gen += 1;
                let gen = process.step_gen;
                self.push(at, What::Step { process: p, gen });
            }
            Event::NotAcquired { .. } | Event::Cancelled => self.end_round(p),
            Event::Failed { .. } if self.processes[p].stage != Stage::Holding => self.end_round(p),
            Event::Lost { .. } | Event::Expired | Event::Released { .. } => self.end_round(p),
            _ => {}
        }
    }

    fn end_round(&mut self, p: usize) {
        let process = &mut self.processes[p];
        let round = &process.plan.rounds[process.round];
        if round.wait == Wait::Forever && !process.acquired_this_round {
            self.report.violations.push(Violation::Stuck {
                process: p,
                round: process.round,
            });
        }
        process.round += 1;
        process.acquired_this_round = false;
        process.step_gen += 1;
        if process.round >= process.plan.rounds.len() {
            process.stage = Stage::Finished;
        } else {
            process.stage = Stage::BeforeRound;
            self.start_round_later(p);
        }
    }

    fn start_round_later(&mut self, p: usize) {
        let process = &mut self.processes[p];
        let Some(round) = process.plan.rounds.get(process.round) else {
            process.stage = Stage::Finished;
            return;
        };
        process.step_gen += 1;
        let gen = process.step_gen;
        let at = self.now + round.start_after;
        self.push(at, What::Step { process: p, gen });
    }

    fn step(&mut self, p: usize) {
        let now = self.local(p);
        let process = &mut self.processes[p];
        match process.stage {
            Stage::BeforeRound => {
                if !process.lock.is_idle() {
                    // Still cleaning up after the last round: try again shortly.
                    process.step_gen += 1;
                    let gen = process.step_gen;
                    return self.push(
                        self.now + Duration::from_millis(10),
                        What::Step { process: p, gen },
                    );
                }
                let wait = process.plan.rounds[process.round].wait;
                let unix_ms = u64::try_from(now.since_origin().as_millis()).unwrap_or(0);
                if process.lock.acquire(now, unix_ms, wait).is_ok() {
                    process.stage = Stage::Acquiring;
                }
                self.pump(p);
            }
            Stage::Holding => match process.plan.rounds[process.round].exit {
                Exit::Release => {
                    if process.lock.release(now).is_ok() {
                        process.stage = Stage::Releasing;
                    }
                    self.pump(p);
                }
                Exit::Crash => {
                    process.stage = Stage::Crashed;
                }
            },
            _ => {}
        }
    }

    // ---- the checks ------------------------------------------------------------------------

    /// Property 1, checked after every event: claims begin only at events, so two claims that
    /// overlap in time overlap at the later one's start.
    fn check_holders(&mut self) {
        let mut holder = None;
        for (i, p) in self.processes.iter().enumerate() {
            if p.stage != Stage::Crashed && p.lock.is_held(p.clock.local(self.now)) {
                if let Some(j) = holder {
                    self.report.violations.push(Violation::TwoHolders {
                        at: self.now,
                        processes: (j, i),
                    });
                    return;
                }
                holder = Some(i);
            }
        }
    }

    /// Property 2, checked on what the server actually did with each request: when a
    /// renewal, release or cleanup changed or removed the object, the object it replaced must
    /// have been written by the same process (for a renewal: by the same owner).
    fn check_foreign_write(
        &mut self,
        p: usize,
        request: &Request,
        before: Option<&crate::Object>,
        after: Option<&crate::Object>,
    ) {
        let Some(before) = before else { return };
        if Some(before) == after {
            return;
        }
        let replaced = Holder::decode(&before.body).owner();
        let allowed = match request.purpose {
            Purpose::Acquire | Purpose::Takeover | Purpose::Observe | Purpose::Resolve => true,
            Purpose::Renew => {
                let me = request
                    .intent
                    .body()
                    .and_then(|b| Holder::decode(b).owner());
                replaced.is_some() && replaced == me
            }
            Purpose::Release | Purpose::Cleanup => {
                replaced.is_some_and(|o| self.processes[p].owners.contains(&o))
            }
            // A purpose this check does not know yet may not replace anything.
            _ => false,
        };
        if !allowed {
            self.report.violations.push(Violation::ForeignWrite {
                at: self.now,
                process: p,
                purpose: request.purpose,
            });
        }
    }
}
