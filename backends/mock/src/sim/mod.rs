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
use sets3lock::{
    Ambiguity, ConfigError, ETag, Event, Holder, Instant, NotAcquired, OwnerId, Request, Response,
    SlotChoice, SlotOutcome, SlotStep, Wait,
};
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
    /// owner id; and the largest token granted, by slot.
    grants: BTreeMap<OwnerId, usize>,
    highest_token: Vec<Option<u64>>,
    /// A resource fenced by the token, written by every holder in fenced mode: one per slot.
    resource: Vec<check::Resource>,
    /// The lock keys: `lock`, or a semaphore's `lock/slot-<i>`.
    keys: Vec<String>,
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
        let keys: Vec<String> = match cfg.slots {
            None => vec![KEY.to_owned()],
            Some(n) => (0..n.max(1)).map(|i| format!("{KEY}/slot-{i}")).collect(),
        };
        let processes = plans
            .into_iter()
            .enumerate()
            .map(|(i, plan)| Process::new(&cfg.lock, plan, seed, i, keys.len()))
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
            highest_token: vec![None; keys.len()],
            resource: vec![check::Resource::default(); keys.len()],
            keys,
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
            for slot in 0..self.keys.len() {
                let claims = self.processes.iter().map(|p| p.claims_slot(at, slot));
                let violation = check::two_holders(at, claims);
                self.record(violation);
            }
            if self.cfg.slots.is_some() {
                self.check_slots(at);
            }
            if self.report.violations.len() >= MAX_VIOLATIONS {
                return self.finish();
            }
        }
        for i in 0..self.processes.len() {
            let p = &self.processes[i];
            // Done: crashed, or every round over and nothing left running (a core still
            // renewing a slot, or cleaning up, at the horizon is not done).
            let done = p.stage == Stage::Crashed || (p.stage == Stage::Finished && p.is_idle());
            let violation = check::unfinished(i, p.round, done);
            self.record(violation);
        }
        self.finish()
    }

    /// A semaphore's properties at real time `at`: at most N processes hold a valid slot,
    /// and none holds one it does not keep for longer than a lease (and a request).
    fn check_slots(&mut self, at: Duration) {
        let slots = self.keys.len();
        let grace = self.cfg.lock.lease + self.cfg.request_timeout;
        let mut inside = 0;
        let mut violations = Vec::new();
        for (i, p) in self.processes.iter_mut().enumerate() {
            let keeps = matches!(p.stage, Stage::Holding | Stage::Releasing).then_some(p.slot);
            let claims: Vec<usize> = (0..slots).filter(|&s| p.claims_slot(at, s)).collect();
            inside += usize::from(!claims.is_empty());
            if claims.iter().any(|&s| Some(s) != keeps) {
                let since = *p.extra_since.get_or_insert(at);
                violations.extend(check::slot_kept(at, i, Some(since), grace));
            } else {
                p.extra_since = None;
            }
        }
        self.report.most_inside = self.report.most_inside.max(inside);
        violations.extend(check::too_many_holders(at, inside, slots));
        for v in violations {
            self.record(Some(v));
        }
    }

    fn finish(mut self) -> Report {
        self.report.end = self.now;
        self.report.resource_writes = self
            .resource
            .iter()
            .fold((0, 0), |(a, r), x| (a + x.accepted, r + x.refused));
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
                slot,
                request,
                timing,
            } => self.apply(process, slot, request, timing),
            What::Answer {
                process,
                slot,
                id,
                response,
            } => {
                let now = self.local(process);
                self.processes[process].locks[slot].handle_response(id, response, now);
                self.pump(process);
            }
            What::Timer { process, gen } => {
                if gen == self.processes[process].timer_gen {
                    let now = self.local(process);
                    for lock in &mut self.processes[process].locks {
                        if lock.poll_timeout().is_some_and(|t| t <= now) {
                            lock.handle_timeout(now);
                        }
                    }
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
                slot,
                owner,
                token,
            } => self.act(process, slot, owner, token),
            What::Tamper(tamper) => {
                // Behind every holder's back: no hold is unimpeded from here on.
                for process in &mut self.processes {
                    process.unimpeded = false;
                }
                match tamper {
                    Tamper::Delete => self.s3.force(BUCKET, &self.keys[0], None),
                    Tamper::Overwrite(body) => self.s3.force(BUCKET, &self.keys[0], Some(body)),
                }
            }
        }
    }

    /// Process `p`'s clock, now.
    fn local(&self, p: usize) -> Instant {
        self.processes[p].clock.local(self.now)
    }

    // ---- the network -----------------------------------------------------------------------

    fn send(&mut self, p: usize, slot: usize, request: Request) {
        self.report.requests.push((self.now, p, request.purpose));
        self.note(p, || {
            format!("  (slot {slot}: {} {})", request.purpose, request.id)
        });
        if self.cfg.slots.is_some() {
            let process = &self.processes[p];
            let held = match process.stage {
                Stage::Holding | Stage::Releasing => Some(process.slot),
                _ => None,
            };
            let violation = check::kept_waiting(self.now, p, slot, held, request.purpose);
            self.record(violation);
        }
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
            process.write_sent.insert((slot, request.id), local);
        }
        // Only the requests of the round's slot are its hold's (a semaphore's other slots
        // send cancellations and cleanups beside it); while acquiring, the slot about to be
        // won is not known yet: a renewal sent before the win is counted as for a lock.
        let stage = if slot == process.slot || process.stage == Stage::Acquiring {
            process.stage
        } else {
            Stage::BeforeRound
        };
        match stage {
            Stage::Holding | Stage::Releasing => {
                process.unimpeded &= unimpeding;
                if process.stage == Stage::Releasing {
                    process.release_requests += 1;
                }
            }
            // A renewal sent with the acquisition's last reply, before its event is handled.
            Stage::Acquiring if process.locks[slot].is_held(local) => {
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
                    slot,
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
                    slot,
                    id: request.id,
                    response: error.response(request.intent.kind(), self.cfg.semantics.dialect),
                },
            ),
            Timing::Answered { .. } | Timing::Failed { .. } => {}
        }
        if let Some(at) = timing.applied() {
            self.timeline.push(
                at,
                What::Apply {
                    process: p,
                    slot,
                    request,
                    timing,
                },
            );
        }
    }

    fn apply(&mut self, p: usize, slot: usize, request: Request, timing: Timing) {
        let key = &self.keys[slot];
        let before = self.s3.object(BUCKET, key).cloned();
        let served = self.s3.respond(BUCKET, key, &request.intent);
        let after = self.s3.object(BUCKET, key);
        let process = &mut self.processes[p];
        if let Some(sent) = process.write_sent.remove(&(slot, request.id)) {
            if after.is_some() && after != before.as_ref() {
                let latest = &mut process.latest_applied_write[slot];
                *latest = Some(latest.map_or(sent, |l| l.max(sent)));
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
            self.highest_token[slot],
        );
        self.record(foreign);
        self.record(tokens);
        if let Some((owner, token)) = grant {
            let highest = &mut self.highest_token[slot];
            *highest = Some(highest.map_or(token, |h| h.max(token)));
            let number = self.grants.len();
            self.grants.insert(owner, number);
        }
        let (at, response) = match timing {
            Timing::Answered { answered, .. } => (answered, served),
            Timing::Failed {
                error, answered, ..
            } => (
                answered,
                error.response(request.intent.kind(), self.cfg.semantics.dialect),
            ),
            Timing::TimedOut { .. } => return,
        };
        self.timeline.push(
            at,
            What::Answer {
                process: p,
                slot,
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
            let mut busy = self.start_pending(p);
            for slot in 0..self.keys.len() {
                while let Some(request) = self.processes[p].locks[slot].poll_request() {
                    busy = true;
                    self.send(p, slot, request);
                }
                while let Some(event) = self.processes[p].locks[slot].poll_event() {
                    busy = true;
                    self.on_event(p, slot, event);
                }
            }
            if !busy {
                break;
            }
        }
        let process = &mut self.processes[p];
        let gen = process.next_timer_gen();
        let earliest = process
            .locks
            .iter()
            .filter_map(sets3lock::Lock::poll_timeout)
            .min();
        if let Some(t) = earliest {
            let at = process.clock.real_at(t).max(self.now);
            self.timeline.push(at, What::Timer { process: p, gen });
        }
    }

    /// A semaphore's note for the timeline.
    fn note(&mut self, p: usize, what: impl FnOnce() -> String) {
        if self.cfg.slots.is_some() {
            self.report.notes.push((self.now, p, what()));
        }
    }

    fn on_event(&mut self, p: usize, slot: usize, event: Event) {
        self.report.events.push((self.now, p, event.clone()));
        self.note(p, || format!("  (slot {slot}: the event above)"));
        let process = &self.processes[p];
        if let Event::Acquired { valid_until, .. } | Event::Renewed { valid_until, .. } = &event {
            let violation = check::validity_not_from_send(
                self.now,
                p,
                *valid_until,
                process.latest_applied_write[slot],
                self.cfg.lock.validity(),
            );
            self.record(violation);
        }
        if self.cfg.slots.is_some() {
            let process = &self.processes[p];
            let acquiring = process.stage == Stage::Acquiring;
            if acquiring
                || slot != process.slot
                || process.choice.as_ref().is_some_and(|c| c.won().is_none())
            {
                return self.slot_event(p, slot, event);
            }
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

    /// Starts the semaphore's pending acquisitions whose slot's core is idle; whether any
    /// was.
    fn start_pending(&mut self, p: usize) -> bool {
        let now = self.local(p);
        let mut started = false;
        for slot in 0..self.keys.len() {
            let process = &mut self.processes[p];
            let Some(try_once) = process.pending[slot] else {
                continue;
            };
            if !process.locks[slot].is_idle() {
                continue;
            }
            process.pending[slot] = None;
            let wait = match (try_once, process.round_wait) {
                (true, _) => Wait::No,
                (false, Wait::Timeout(d)) => Wait::Timeout(
                    d.saturating_sub(now.saturating_duration_since(process.round_started)),
                ),
                (false, w) => w,
            };
            let unix_ms = u64::try_from(now.since_origin().as_millis()).unwrap_or(0);
            // An idle core does not refuse an acquisition.
            let _ = process.locks[slot].acquire(now, unix_ms, wait);
            self.note(p, || format!("  (slot {slot}: starts acquiring, {wait:?})"));
            started = true;
        }
        started
    }

    /// A semaphore's slot event outside the hold: a slot's acquisition ended (the choice
    /// decides what next), or an event of a slot being cancelled or given back.
    fn slot_event(&mut self, p: usize, slot: usize, event: Event) {
        let outcome = match &event {
            Event::Acquired { .. } => SlotOutcome::Acquired,
            Event::NotAcquired {
                reason: NotAcquired::TimedOut { .. },
            } => SlotOutcome::TimedOut,
            Event::NotAcquired { .. } | Event::Cancelled => SlotOutcome::Busy,
            Event::Failed { .. } => SlotOutcome::Failed,
            // A slot given back: its release, its loss; nothing for the choice.
            _ => return,
        };
        let Some(choice) = self.processes[p].choice.as_mut() else {
            return;
        };
        let steps = choice.settled(slot as u32, outcome);
        self.slot_steps(p, steps, Some(&event));
    }

    /// Carries out a semaphore's steps; `event` is the slot event that led to them (a win's
    /// `Acquired`).
    fn slot_steps(&mut self, p: usize, steps: Vec<SlotStep>, event: Option<&Event>) {
        let now = self.local(p);
        for step in steps {
            self.note(p, || format!("  semaphore: {step:?}"));
            let process = &mut self.processes[p];
            match step {
                SlotStep::Acquire { slot, try_once } => {
                    // Started by `pump` once the slot's core is idle (it may still be
                    // cleaning up after an earlier try of this round).
                    process.pending[slot as usize] = Some(try_once);
                }
                SlotStep::Cancel { slot } | SlotStep::Release { slot } => {
                    // Not started yet: nothing to cancel.
                    if process.pending[slot as usize].take().is_none() {
                        let _ = process.locks[slot as usize].release(now);
                    }
                }
                SlotStep::Won { slot } => {
                    process.slot = slot as usize;
                    if let Some(Event::Acquired {
                        etag,
                        owner,
                        token,
                        valid_until,
                        ..
                    }) = event
                    {
                        let (etag, owner, token, valid_until) =
                            (etag.clone(), *owner, *token, *valid_until);
                        self.hold(p, &etag, owner, token, valid_until);
                    }
                }
                SlotStep::AllBusy | SlotStep::TimedOut | SlotStep::Failed { .. } => {
                    self.end_round(p)
                }
            }
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
        let slot = self.processes[p].slot;
        let current = self.s3.object(BUCKET, &self.keys[slot]);
        let violation = check::acquired_without_own_write(self.now, p, current, etag, owner);
        self.record(violation);
        if let Some(token) = token {
            self.act(p, slot, owner, token);
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
                    slot,
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
    fn act(&mut self, p: usize, slot: usize, owner: OwnerId, token: u64) {
        if let Some(&grant) = self.grants.get(&owner) {
            let violation = self.resource[slot].write(self.now, p, token, grant);
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
                if !process.is_idle() {
                    // Still cleaning up after the last round: try again shortly.
                    let gen = process.next_step_gen();
                    return self
                        .timeline
                        .push(self.now + IDLE_RECHECK, What::Step { process: p, gen });
                }
                let wait = process.round().wait;
                process.round_started = now;
                process.round_wait = wait;
                if let Some(slots) = self.cfg.slots {
                    // Where the try-once pass starts: a function of the run's inputs.
                    let start = (p as u32)
                        .wrapping_mul(7)
                        .wrapping_add(process.round as u32);
                    let (choice, steps) = SlotChoice::new(slots, start, wait.is_try_once());
                    process.choice = Some(choice);
                    process.slot = usize::MAX;
                    process.stage = Stage::Acquiring;
                    self.slot_steps(p, steps, None);
                    return self.pump(p);
                }
                let unix_ms = u64::try_from(now.since_origin().as_millis()).unwrap_or(0);
                if process.locks[0].acquire(now, unix_ms, wait).is_ok() {
                    process.stage = Stage::Acquiring;
                }
                self.pump(p);
            }
            Stage::Holding => match process.round().exit {
                Exit::Release => {
                    // A last write to the resource while it believes it holds the lock.
                    let slot = process.slot;
                    if let (Some((owner, token)), true) =
                        (process.hold, process.locks[slot].is_held(now))
                    {
                        self.act(p, slot, owner, token);
                    }
                    let process = &mut self.processes[p];
                    if process.locks[slot].release(now).is_ok() {
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
