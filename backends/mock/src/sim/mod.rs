//! A deterministic simulation: several processes using the core, one mock bucket, one
//! timeline.
//!
//! [`plan`] says what the processes do, [`timeline`] orders what happens, this module drives
//! each process's core and carries its requests through [`Fault`]s to the bucket, and
//! [`check`] judges the properties on what it sees, into a [`Report`].

pub mod check;
mod plan;
mod process;
mod report;
mod timeline;

pub use check::Violation;
pub use plan::{Exit, ProcessPlan, Round, SimConfig, Tamper};
pub use report::Report;

use crate::fault::Timing;
use crate::{Fault, MockS3};
use core::time::Duration;
use process::{Process, Stage};
use sets3lock::{Ambiguity, ConfigError, ETag, Event, Holder, Instant, OwnerId, Request, Response};
use std::collections::BTreeMap;
use timeline::{Timeline, What};

const BUCKET: &str = "sim-bucket";
const KEY: &str = "lock";
/// A run goes on after a violation, so that every property is judged on every schedule, but
/// stops once this many are recorded.
const MAX_VIOLATIONS: usize = 64;
/// More happenings than any schedule needs (they number in the thousands): past this the run
/// stops with [`Violation::Spinning`].
const MAX_HANDLED: usize = 2_000_000;
/// More happenings at one instant than any schedule has (a handful): time has stopped.
const MAX_AT_ONCE: usize = 10_000;
/// How soon a process that finished a round checks again whether its core is idle.
const IDLE_RECHECK: Duration = Duration::from_millis(10);

/// N processes, each driving a core, against one [`MockS3`] on a virtual timeline.
///
/// Each process drives its core as the [`Lock`](sets3lock::Lock) docs require: it drains
/// requests and events after every input, answers every request exactly once (a timeout
/// answers [`Ambiguity::Timeout`]), sleeps until [`poll_timeout`](sets3lock::Lock::poll_timeout),
/// and keeps driving a core that is not idle: it starts its next round only once the core is
/// idle, and goes on driving after its last. Only a [`Exit::Crash`] abandons a core.
///
/// ```
/// use core::time::Duration;
/// use sets3lock::{Event, Wait};
/// use sets3lock_mock::{Exit, ProcessPlan, Round, Sim, SimConfig};
///
/// let round = Round { start_after: Duration::ZERO, wait: Wait::Forever,
///     hold: Duration::from_secs(1), pause: None, exit: Exit::Release };
/// let plans = (0..3).map(|i| ProcessPlan { drift_ppm: 0, clock_offset: Duration::from_secs(i),
///     rounds: vec![round.clone(); 2], fenced: None }).collect();
/// let report = Sim::new(SimConfig::default(), plans, vec![], 1)?.run();
/// assert!(report.violations.is_empty(), "{:?}", report.violations);
/// assert_eq!(report.count(|e| matches!(e, Event::Acquired { .. })), 6);
/// # Ok::<(), sets3lock::ConfigError>(())
/// ```
pub struct Sim {
    cfg: SimConfig,
    s3: MockS3,
    processes: Vec<Process>,
    faults: std::vec::IntoIter<Fault>,
    timeline: Timeline,
    now: Duration,
    report: Report,
    /// Fenced mode: each grant's number, in the real-time order of the granting writes, by
    /// owner id; and the largest token granted.
    grants: BTreeMap<OwnerId, usize>,
    highest_token: Option<u64>,
    /// A resource fenced by the token, written by every holder in fenced mode.
    resource: check::Resource,
}

impl Sim {
    /// A simulation of `plans` against an empty lock key, with `faults` applied to the
    /// requests in the order they are sent. `seed` seeds the processes' cores (owner ids,
    /// jitter). Fails if the core refuses `cfg.lock`.
    pub fn new(
        cfg: SimConfig,
        plans: Vec<ProcessPlan>,
        faults: Vec<Fault>,
        seed: u64,
    ) -> Result<Sim, ConfigError> {
        let mut s3 = MockS3::with_semantics(cfg.semantics);
        s3.create_bucket(BUCKET);
        let processes = plans
            .into_iter()
            .enumerate()
            .map(|(i, plan)| Process::new(&cfg.lock, plan, seed, i))
            .collect::<Result<_, _>>()?;
        let mut sim = Sim {
            cfg,
            s3,
            processes,
            faults: faults.into_iter(),
            timeline: Timeline::default(),
            now: Duration::ZERO,
            report: Report::default(),
            grants: BTreeMap::new(),
            highest_token: None,
            resource: check::Resource::default(),
        };
        for p in 0..sim.processes.len() {
            sim.start_round_later(p);
        }
        Ok(sim)
    }

    /// Does something to the bucket at real time `at`.
    pub fn tamper(&mut self, at: Duration, tamper: Tamper) {
        self.timeline.push(at, What::Tamper(tamper));
    }

    /// The mock S3 (to inspect the object at the end).
    pub fn s3(&self) -> &MockS3 {
        &self.s3
    }

    /// Runs to the end: every plan finished and nothing in flight, 64 violations, or the
    /// horizon.
    pub fn run(mut self) -> Report {
        let (mut handled, mut at_once) = (0usize, 0usize);
        while let Some((at, what)) = self.timeline.pop() {
            if at > self.cfg.horizon {
                break;
            }
            handled += 1;
            at_once = if at == self.now { at_once + 1 } else { 0 };
            if handled > MAX_HANDLED || at_once > MAX_AT_ONCE {
                // A core that never lets time move on (requests answered at once, timers
                // that fire at once): a finding, not a hang.
                self.record(Some(Violation::Spinning { at }));
                return self.finish();
            }
            self.now = at;
            self.handle(what);
            let claims = self.processes.iter().map(|p| p.claims_the_lock(at));
            let violation = check::two_holders(at, claims);
            self.record(violation);
            if self.report.violations.len() >= MAX_VIOLATIONS {
                return self.finish();
            }
        }
        for i in 0..self.processes.len() {
            let p = &self.processes[i];
            let done = matches!(p.stage, Stage::Finished | Stage::Crashed);
            let violation = check::unfinished(i, p.round, done);
            self.record(violation);
        }
        self.finish()
    }

    fn finish(mut self) -> Report {
        self.report.end = self.now;
        self.report.resource_writes = (self.resource.accepted, self.resource.refused);
        self.report
    }

    fn record(&mut self, violation: Option<Violation>) {
        self.report.violations.extend(violation);
    }

    fn handle(&mut self, what: What) {
        if let Some(p) = what.process() {
            if self.processes[p].stage == Stage::Crashed {
                return;
            }
            let until = self.processes[p].paused_until;
            if until > self.now {
                // A frozen process handles nothing; everything waits for it to thaw.
                return self.timeline.push(until, what);
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
            What::Act {
                process,
                owner,
                token,
            } => self.act(process, owner, token),
            What::Tamper(tamper) => {
                // Behind every holder's back: no hold is unimpeded from here on.
                for process in &mut self.processes {
                    process.unimpeded = false;
                }
                match tamper {
                    Tamper::Delete => self.s3.force(BUCKET, KEY, None),
                    Tamper::Overwrite(body) => self.s3.force(BUCKET, KEY, Some(body)),
                }
            }
        }
    }

    /// Process `p`'s clock, now.
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
        let fault = self.faults.next().unwrap_or(Fault::Deliver {
            to_server: self.cfg.latency,
            to_client: self.cfg.latency,
        });
        let (timeout, lease) = (self.cfg.request_timeout, self.cfg.lock.lease);
        let unimpeding = check::unimpeding(&fault, timeout, lease);
        let local = self.local(p);
        let process = &mut self.processes[p];
        if request.intent.body().is_some() {
            process.write_sent.insert(request.id, local);
        }
        match process.stage {
            Stage::Holding | Stage::Releasing => {
                process.unimpeded &= unimpeding;
                if process.stage == Stage::Releasing {
                    process.release_requests += 1;
                }
            }
            // A renewal sent with the acquisition's last reply, before its event is handled.
            Stage::Acquiring if process.lock.is_held(local) => {
                process.impeded_before_the_event |= !unimpeding;
            }
            _ => {}
        }
        let timing = fault.timing(self.now, self.cfg.request_timeout);
        // Answers that do not depend on the server's reply are queued now; the others when
        // the server applies the request.
        match timing {
            Timing::TimedOut { gives_up, .. } => self.timeline.push(
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
            } => self.timeline.push(
                answered,
                What::Answer {
                    process: p,
                    id: request.id,
                    response: error.response(request.intent.kind()),
                },
            ),
            Timing::Answered { .. } | Timing::Failed { .. } => {}
        }
        if let Some(at) = timing.applied() {
            self.timeline.push(
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
        let after = self.s3.object(BUCKET, KEY);
        let process = &mut self.processes[p];
        if let Some(sent) = process.write_sent.remove(&request.id) {
            if after.is_some() && after != before.as_ref() {
                process.latest_applied_write =
                    Some(process.latest_applied_write.map_or(sent, |l| l.max(sent)));
            }
        }
        let foreign = check::foreign_write(
            self.now,
            p,
            &request,
            &self.processes[p].owners,
            before.as_ref(),
            after,
        );
        let (tokens, grant) = check::tokens(
            self.now,
            p,
            &request,
            before.as_ref(),
            after,
            self.highest_token,
        );
        self.record(foreign);
        self.record(tokens);
        if let Some((owner, token)) = grant {
            self.highest_token = Some(self.highest_token.map_or(token, |h| h.max(token)));
            let number = self.grants.len();
            self.grants.insert(owner, number);
        }
        let (at, response) = match timing {
            Timing::Answered { answered, .. } => (answered, served),
            Timing::Failed {
                error, answered, ..
            } => (answered, error.response(request.intent.kind())),
            Timing::TimedOut { .. } => return,
        };
        self.timeline.push(
            at,
            What::Answer {
                process: p,
                id: request.id,
                response,
            },
        );
    }

    // ---- the processes' drivers and plans --------------------------------------------------

    /// Sends what the core wants sent and handles its events until it has nothing more, then
    /// arms its timer.
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
        let gen = process.next_timer_gen();
        if let Some(t) = process.lock.poll_timeout() {
            let at = process.clock.real_at(t).max(self.now);
            self.timeline.push(at, What::Timer { process: p, gen });
        }
    }

    fn on_event(&mut self, p: usize, event: Event) {
        self.report.events.push((self.now, p, event.clone()));
        let process = &self.processes[p];
        if let Event::Acquired { valid_until, .. } | Event::Renewed { valid_until, .. } = &event {
            let violation = check::validity_not_from_send(
                self.now,
                p,
                *valid_until,
                process.latest_applied_write,
                self.cfg.lock.validity(),
            );
            self.record(violation);
        }
        let process = &self.processes[p];
        let violation = match (&event, process.stage) {
            (Event::Lost { .. } | Event::Expired, Stage::Holding) => {
                check::spurious_loss(self.now, p, process.unimpeded)
            }
            (Event::Released { outcome }, Stage::Releasing) => check::slow_or_failed_release(
                self.now,
                p,
                process.unimpeded,
                Some(*outcome),
                process.release_requests,
            ),
            (Event::Failed { .. } | Event::Lost { .. } | Event::Expired, Stage::Releasing) => {
                check::slow_or_failed_release(
                    self.now,
                    p,
                    process.unimpeded,
                    None,
                    process.release_requests,
                )
            }
            _ => None,
        };
        self.record(violation);
        if !event.is_final() {
            return;
        }
        match event {
            Event::Acquired {
                etag,
                owner,
                token,
                valid_until,
                ..
            } => self.hold(p, &etag, owner, token, valid_until),
            // The acquisition, the hold or the release ended: so does the round.
            _ => self.end_round(p),
        }
    }

    /// Process `p` acquired: hold for the round's time (by its clock), frozen first if the
    /// plan says so. With a token it writes to the fenced resource at once, and again when
    /// it thaws from the pause, still believing it holds the lock (it checked before).
    fn hold(
        &mut self,
        p: usize,
        etag: &ETag,
        owner: OwnerId,
        token: Option<u64>,
        valid_until: Option<Instant>,
    ) {
        let current = self.s3.object(BUCKET, KEY);
        let violation = check::acquired_without_own_write(self.now, p, current, etag, owner);
        self.record(violation);
        if let Some(token) = token {
            self.act(p, owner, token);
        }
        let lease = self.cfg.lock.lease;
        let local = self.local(p);
        let process = &mut self.processes[p];
        process.stage = Stage::Holding;
        process.acquired_this_round = true;
        // Unimpeded from here: with a third of a lease of validity left at least (a slow
        // acquisition may leave less, and its first renewal may not make it), a freeze that
        // leaves a quarter of a lease of validity to renew in (an unimpeded renewal takes at
        // most that), and a first renewal in time.
        let left = valid_until.map(|v| v.saturating_duration_since(local));
        let pause = process.round().pause.unwrap_or_default();
        process.unimpeded = left.is_none_or(|l| l >= lease / 3 && pause + lease / 4 < l)
            && !std::mem::take(&mut process.impeded_before_the_event);
        process.release_requests = 0;
        process.hold = token.map(|t| (owner, t));
        let (pause, hold) = (process.round().pause, process.round().hold);
        if let Some(pause) = pause {
            process.paused_until = self.now + pause;
            if let Some(token) = token {
                let thawed = What::Act {
                    process: p,
                    owner,
                    token,
                };
                self.timeline.push(process.paused_until, thawed);
            }
        }
        let exit_local = process.clock.local(self.now) + hold;
        let at = process.clock.real_at(exit_local).max(process.paused_until);
        let gen = process.next_step_gen();
        self.timeline.push(at, What::Step { process: p, gen });
    }

    /// Process `p` writes to the fenced resource with the token of its grant.
    fn act(&mut self, p: usize, owner: OwnerId, token: u64) {
        if let Some(&grant) = self.grants.get(&owner) {
            let violation = self.resource.write(self.now, p, token, grant);
            self.record(violation);
        }
    }

    fn end_round(&mut self, p: usize) {
        let process = &self.processes[p];
        let wait = process.round().wait;
        let violation = check::waited_in_vain(p, process.round, wait, process.acquired_this_round);
        self.record(violation);
        let process = &mut self.processes[p];
        process.round += 1;
        process.acquired_this_round = false;
        process.next_step_gen();
        if process.round >= process.plan.rounds.len() {
            process.stage = Stage::Finished;
        } else {
            process.stage = Stage::BeforeRound;
            self.start_round_later(p);
        }
    }

    fn start_round_later(&mut self, p: usize) {
        let process = &mut self.processes[p];
        let Some(round) = process.next_round() else {
            process.stage = Stage::Finished;
            return;
        };
        let at = self.now + round.start_after;
        let gen = process.next_step_gen();
        self.timeline.push(at, What::Step { process: p, gen });
    }

    /// The plan's next step for process `p`: start a round, or exit a hold.
    fn step(&mut self, p: usize) {
        let now = self.local(p);
        let process = &mut self.processes[p];
        match process.stage {
            Stage::BeforeRound => {
                if !process.lock.is_idle() {
                    // Still cleaning up after the last round: try again shortly.
                    let gen = process.next_step_gen();
                    return self
                        .timeline
                        .push(self.now + IDLE_RECHECK, What::Step { process: p, gen });
                }
                let wait = process.round().wait;
                let unix_ms = u64::try_from(now.since_origin().as_millis()).unwrap_or(0);
                if process.lock.acquire(now, unix_ms, wait).is_ok() {
                    process.stage = Stage::Acquiring;
                }
                self.pump(p);
            }
            Stage::Holding => match process.round().exit {
                Exit::Release => {
                    // A last write to the resource while it believes it holds the lock.
                    if let (Some((owner, token)), true) = (process.hold, process.lock.is_held(now))
                    {
                        self.act(p, owner, token);
                    }
                    let process = &mut self.processes[p];
                    if process.lock.release(now).is_ok() {
                        process.stage = Stage::Releasing;
                    }
                    self.pump(p);
                }
                Exit::Crash => process.stage = Stage::Crashed,
            },
            Stage::Acquiring | Stage::Releasing | Stage::Finished | Stage::Crashed => {}
        }
    }
}
