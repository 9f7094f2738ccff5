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
mod tape;
mod timeline;

pub use check::Violation;
pub use plan::{Exit, ProcessPlan, Round, SimConfig, Start, Tamper};
pub use report::Report;
pub use tape::{Input, Step, Tape};

use crate::fault::Timing;
use crate::{Fault, MockS3};
use core::time::Duration;
use process::{Adoption, Process, Stage};
use sets3lock_proto::{
    Ambiguity, ConfigError, ETag, Event, Handle, Holder, Instant, NotAcquired, OwnerId, Request,
    Response, Resume, SlotChoice, SlotOutcome, SlotStep, Wait,
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
/// Each process drives its core as the [`Lock`](sets3lock_proto::Lock) docs require: it drains
/// requests and events after every input, answers every request exactly once (a timeout
/// answers [`Ambiguity::Timeout`]), sleeps until [`poll_timeout`](sets3lock_proto::Lock::poll_timeout),
/// and keeps driving a core that is not idle: it starts its next round only once the core is
/// idle, and goes on driving after its last. Only a [`Exit::Crash`] abandons a core.
///
/// Holds can pass between processes: a round that ends with [`Exit::Detach`] puts its
/// hold's [`Handle`] in a pool, and a round that starts with [`Start::Adopt`] continues one
/// from it (to hold or to release), possibly long after its hold ended, possibly while
/// another process still runs under it.
///
/// ```
/// use core::time::Duration;
/// use sets3lock_proto::{Event, Wait};
/// use sets3lock_mock::{Exit, ProcessPlan, Round, Sim, SimConfig, Start};
///
/// let round = Round { start_after: Duration::ZERO, start: Start::Acquire, wait: Wait::Forever,
///     hold: Duration::from_secs(1), pause: None, exit: Exit::Release };
/// let plans = (0..3).map(|i| ProcessPlan { drift_ppm: 0, clock_offset: Duration::from_secs(i),
///     rounds: vec![round.clone(); 2], fenced: None }).collect();
/// let report = Sim::new(SimConfig::default(), plans, vec![], 1)?.run();
/// assert!(report.violations.is_empty(), "{:?}", report.violations);
/// assert_eq!(report.count(|e| matches!(e, Event::Acquired { .. })), 6);
/// # Ok::<(), sets3lock_proto::ConfigError>(())
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
    /// Fenced mode: each grant's token, by owner id.
    grant_tokens: BTreeMap<OwnerId, u64>,
    /// Handles of holds let go of (`Exit::Detach`), oldest first.
    handles: Vec<Handle>,
    /// Someone changed the bucket behind the processes' backs: a holder's record may be gone.
    tampered: bool,
    /// By slot: the lock object's version last looked at, and the hold it is a live record
    /// of (owner id and token), if any.
    live: Vec<Option<(ETag, Option<HoldId>)>>,
}

/// A hold, as the checks name it: its owner id and fencing token.
type HoldId = (OwnerId, Option<u64>);

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
            .map(|(i, plan)| Process::new(&cfg.lock, plan, seed, i, keys.len(), cfg.record))
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
            live: vec![None; keys.len()],
            keys,
            grant_tokens: BTreeMap::new(),
            handles: Vec::new(),
            tampered: false,
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
                self.check_claims(at, slot);
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

    /// Who claims slot `slot`'s lock at real time `at`: never two holds (owner ids) at once,
    /// and every claim stands on a live record of its hold, whoever of the hold wrote it.
    fn check_claims(&mut self, at: Duration, slot: usize) {
        let claim = |p: &Process| {
            let lock = &p.locks[slot];
            let owner = lock.holding().map(|(o, _)| o)?;
            p.claims_slot(at, slot).then(|| (owner, lock.token()))
        };
        let claimants = self.processes.iter().filter(|p| claim(p).is_some()).count();
        if claimants == 0 {
            return;
        }
        let claims: Vec<Option<(OwnerId, Option<u64>)>> =
            self.processes.iter().map(claim).collect();
        let violation = check::two_holds(at, claims.iter().map(|c| c.map(|(o, _)| o)));
        let shared = claimants > 1 && violation.is_none();
        self.record(violation);
        self.report.shared_claims += usize::from(shared);
        if self.tampered {
            return;
        }
        // The object's live hold, decoded once per version.
        let current = self.s3.object(BUCKET, &self.keys[slot]);
        let etag = current.map(|o| o.etag.clone());
        let live = match &self.live[slot] {
            Some((e, live)) if Some(e) == etag.as_ref() => *live,
            _ => {
                let live = check::hold_of(current);
                self.live[slot] = etag.map(|e| (e, live));
                live
            }
        };
        let violations: Vec<Violation> = claims
            .iter()
            .enumerate()
            .filter_map(|(i, c)| check::held_without_record(at, i, (*c)?, live))
            .collect();
        for v in violations {
            self.record(Some(v));
        }
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
        for process in self.processes {
            self.report
                .tapes
                .extend(process.locks.into_iter().filter_map(tape::Taped::into_tape));
        }
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
                let p = &self.processes[process];
                // A holder's read of the lock object (what its core waits for): if the version
                // is not one it wrote, it must let go.
                let read =
                    match &response {
                        Response::Object { etag, .. }
                            if p.stage == Stage::Holding
                                && slot == p.slot
                                && p.last_request[slot] == Some(id) =>
                        {
                            Some(p.writer[slot].is_some_and(|w| {
                                p.own_writes.get(&(slot, etag.clone())) == Some(&w)
                            }))
                        }
                        _ => None,
                    };
                let seen = &mut self.processes[process].seen_token[slot];
                *seen = check::higher(*seen, check::token_in(&response));
                self.processes[process].locks[slot].handle_response(id, response, now);
                if let Some(own) = read {
                    let still = self.processes[process].locks[slot].is_held(now);
                    let violation = check::ignored_another_write(self.now, process, own, still);
                    self.record(violation);
                }
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
                self.tampered = true;
                // Tokens may start again from what the bucket now holds: the grants after it
                // are judged among themselves (and each against what its process saw).
                self.highest_token[0] = match &tamper {
                    Tamper::Delete => None,
                    Tamper::Overwrite(body) => Holder::decode(body).fence().map(|f| f.token),
                };
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
        let seen = self.processes[p].seen_token[slot];
        let violation = check::token_at_or_below_seen(self.now, p, &request, seen);
        self.record(violation);
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
            let holder = Holder::decode(body);
            let free = holder.is_free();
            if let Holder::Sets3lock(r) = holder {
                let process = &mut self.processes[p];
                process.owners.insert(r.owner);
                let written = Written {
                    owner: r.owner,
                    writer: r.writer,
                    live: !free && !r.cooldown,
                };
                process.written.insert((slot, request.id), written);
                if let Some(a) = &mut process.adopting {
                    a.writer.get_or_insert(r.writer);
                }
            }
        }
        self.processes[p].last_request[slot] = Some(request.id);
        if let Some(a) = self.processes[p].adopting {
            let wrote = !matches!(request.intent, sets3lock_proto::Intent::Get { .. });
            let violation = check::ended_hold_continued(self.now, p, a.ended, wrote, false);
            self.record(violation);
        }
        let fault = self.faults.next().unwrap_or(Fault::Deliver {
            to_server: self.cfg.latency,
            to_client: self.cfg.latency,
        });
        let lease = self.cfg.lock.lease;
        let local = self.local(p);
        // The driver waits as long as the core allows: a hold's request a renewal interval
        // at most (the request-time bound of docs/PROTOCOL.md).
        let limit = self.processes[p].locks[slot].request_limit(self.cfg.request_timeout, local);
        let unimpeding = check::unimpeding(&fault, limit, lease);
        // (Ridden out when its retry lands before the stop point, if there is one.)
        let left = self.processes[p].locks[slot].valid_until().map(|v| {
            v.saturating_duration_since(local)
                .saturating_sub(self.cfg.lock.stop_before)
        });
        let timeout = self.cfg.request_timeout;
        let ride_out = left.and_then(|left| check::ride_out_budget(&self.cfg.lock, left, timeout));
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
                // One lost renewal in a hold that was otherwise quick is ridden out, where
                // the lease leaves room for it; the requests after it must be quick.
                let quick = process
                    .forgiven
                    .is_none_or(|budget| check::within(&fault, budget.min(limit)));
                let forgive = process.stage == Stage::Holding
                    && process.forgiven.is_none()
                    && process.round().pause.is_none()
                    && check::lost_and_given_up(&fault, limit);
                match ride_out.filter(|_| forgive) {
                    Some(budget) => process.forgiven = Some(budget),
                    None => process.unimpeded &= unimpeding && quick,
                }
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
        let timing = fault.timing(self.now, limit);
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
        if let Some(base) = self.cfg.store_clock {
            let ms = u64::try_from(self.now.as_millis()).unwrap_or(u64::MAX / 2);
            self.s3.set_time(base.saturating_add(ms));
        }
        let key = &self.keys[slot];
        let before = self.s3.object(BUCKET, key).cloned();
        let served = self.s3.respond(BUCKET, key, &request.intent);
        let after = self.s3.object(BUCKET, key).cloned();
        let after = after.as_ref();
        let changed = after != before.as_ref();
        let process = &mut self.processes[p];
        if let Some(sent) = process.write_sent.remove(&(slot, request.id)) {
            if after.is_some() && changed {
                let latest = &mut process.latest_applied_write[slot];
                *latest = Some(latest.map_or(sent, |l| l.max(sent)));
            }
        }
        let written = process.written.remove(&(slot, request.id));
        if changed {
            self.changed(p, slot, &request, before.as_ref(), after, written);
        }
        let foreign = check::foreign_write(
            self.now,
            p,
            &request,
            &self.processes[p].owners,
            before.as_ref(),
            after,
        );
        let judge = if self.tampered {
            check::tokens_after_removal
        } else {
            check::tokens
        };
        let (tokens, grant) = judge(
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
            self.grant_tokens.insert(owner, token);
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

    /// Process `p`'s `request` changed slot `slot`'s object from `before` to `after`.
    fn changed(
        &mut self,
        p: usize,
        slot: usize,
        request: &Request,
        before: Option<&crate::Object>,
        after: Option<&crate::Object>,
        written: Option<Written>,
    ) {
        // What the request wrote, if it wrote a record (the object is then its body).
        let new = after.and(written);
        if let (Some(a), Some(w)) = (after, &new) {
            self.processes[p]
                .own_writes
                .insert((slot, a.etag.clone()), w.writer);
        }
        // Another process of the same hold wrote over (or removed) a holder's record: that
        // holder is no longer the record's writer and will rightly lose the lock.
        // (A holder, or one releasing: its release will find the record gone.)
        let hold_of = |q: &Process| {
            q.holds(slot).or(q
                .hold_owner
                .filter(|_| q.stage == Stage::Releasing && q.slot == slot))
        };
        let others_hold = self
            .processes
            .iter()
            .enumerate()
            .any(|(q, other)| q != p && hold_of(other).is_some());
        let old = others_hold
            .then(|| before.and_then(|b| Holder::decode(&b.body).owner()))
            .flatten();
        if let Some(old) = old {
            let same_hold = new.as_ref().is_none_or(|n| n.owner == old);
            for (q, process) in self.processes.iter_mut().enumerate() {
                if q != p && same_hold && hold_of(process) == Some(old) {
                    process.unimpeded = false;
                }
            }
        }
        // A grant: an acquisition's write of a new owner's live record.
        if let Some(w) = &new {
            let grant = matches!(
                request.purpose,
                sets3lock_proto::Purpose::Acquire | sets3lock_proto::Purpose::Takeover
            ) && w.live;
            // Not a write over this owner's own live record (a renewal-like rewrite): an
            // acquisition whose first landed write was taken over unseen can land again later
            // with the same owner id, and that is a grant of its own.
            let over_own = before.is_some_and(|b| {
                let h = Holder::decode(&b.body);
                matches!(&h, Holder::Sets3lock(r) if r.owner == w.owner && !r.cooldown)
                    && !h.is_free()
            });
            if grant && !over_own {
                self.report.grants.push((self.now, p, w.owner));
            }
        }
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
            .filter_map(|lock| lock.poll_timeout())
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
        if let Event::Acquired { token, .. } = &event {
            let seen = &mut self.processes[p].seen_token[slot];
            *seen = check::higher(*seen, *token);
        }
        self.own_write(p, slot, &event);
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
        let local = self.local(p);
        let stop_before = self.cfg.lock.stop_before;
        let process = &mut self.processes[p];
        if let (Event::Renewed { valid_until, .. }, Stage::Holding) = (&event, process.stage) {
            let violation = check::renewed_past_stop_point(
                self.now,
                p,
                process.stop_checked && process.unimpeded,
                local,
                process.stop_at,
            );
            process.stop_at = stop_point(*valid_until, stop_before);
            self.record(violation);
        }
        let process = &mut self.processes[p];
        if matches!(event, Event::Renewed { .. })
            && process.stage == Stage::Holding
            && process.unimpeded
            && process.forgiven.is_some()
            && !std::mem::replace(&mut process.rode_out, true)
        {
            self.report.ridden_out += 1;
        }
        let process = &self.processes[p];
        let violation = match (&event, process.stage) {
            (Event::Lost { .. } | Event::Expired, Stage::Holding) => {
                check::spurious_loss(self.now, p, process.unimpeded)
            }
            (Event::Released { outcome }, Stage::Releasing) => check::slow_or_failed_release(
                self.now,
                p,
                // (A renewal lost and ridden out may have landed: its release may need more.)
                process.unimpeded && process.forgiven.is_none(),
                Some(*outcome),
                process.release_requests,
            ),
            (Event::Failed { .. } | Event::Lost { .. } | Event::Expired, Stage::Releasing) => {
                check::slow_or_failed_release(
                    self.now,
                    p,
                    process.unimpeded && process.forgiven.is_none(),
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
        if let Some(a) = self.processes[p].adopting.take() {
            // A handle's hold continued (or released), or found ended.
            self.report
                .adoptions
                .push((self.now, p, a.then, a.ended, event.clone()));
            let continued = matches!(event, Event::Acquired { .. } | Event::Released { .. });
            let violation = check::ended_hold_continued(self.now, p, a.ended, false, continued);
            self.record(violation);
            if let Event::Acquired { owner, token, .. } = &event {
                let granted = self.grant_tokens.get(owner).copied();
                let violation = check::adopted_token_changed(self.now, p, *token, granted);
                self.record(violation);
                let violation = check::adopted_token_changed(self.now, p, *token, a.token);
                self.record(violation);
            }
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

    /// Property 3 at the writer's grain: an `Acquired` or `Renewed` of process `p` on slot
    /// `slot` stands on a version it wrote, as the writer of its hold (the acquirer writes no
    /// writer id, an adopter its own), and the server applied.
    fn own_write(&mut self, p: usize, slot: usize, event: &Event) {
        let process = &mut self.processes[p];
        let (etag, writer) = match event {
            Event::Acquired { etag, .. } => {
                let writer = match &process.adopting {
                    Some(a) => a.writer,
                    None => Some(None),
                };
                process.writer[slot] = writer;
                (etag, writer)
            }
            Event::Renewed { etag, .. } => (etag, process.writer[slot]),
            _ => return,
        };
        let writer_of = process.own_writes.get(&(slot, etag.clone())).copied();
        let violation = match writer {
            Some(w) => check::not_own_write(self.now, p, writer_of, w),
            // An adoption that wrote nothing stands on nobody's write of its own.
            None => Some(Violation::NotOwnWrite {
                at: self.now,
                process: p,
            }),
        };
        self.record(violation);
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
        let violation = if self.processes[p].adopted_this_round {
            // Another process continuing the same hold may have written over our write
            // before its reply reached us: then the object is that process's record of the
            // hold, or the resting record of a release from the handle (which keeps everyone
            // else out until our lease is surely over), and we learn at our next renewal.
            // (That the write was ours and landed is `NotOwnWrite`'s to judge.)
            (check::hold_of(current) != Some((owner, token))).then_some(
                Violation::AcquiredWithoutOwnWrite {
                    at: self.now,
                    process: p,
                },
            )
        } else {
            check::acquired_without_own_write(self.now, p, current, etag, owner)
        };
        // Superseded before it knew: its hold will rightly be lost.
        let superseded = current.is_none_or(|o| &o.etag != etag);
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
            && !std::mem::take(&mut process.impeded_before_the_event)
            && !superseded;
        process.release_requests = 0;
        (process.forgiven, process.rode_out) = (None, false);
        process.stop_at = stop_point(valid_until, self.cfg.lock.stop_before);
        // Room to renew before the stop point: a renewal interval at least, and no freeze.
        process.stop_checked = process.unimpeded
            && pause.is_zero()
            && left
                .is_some_and(|l| l >= self.cfg.lock.stop_before + self.cfg.lock.renew_interval());
        process.hold = token.map(|t| (owner, t));
        process.hold_owner = Some(owner);
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
        // An adoption waits for nothing: only an acquisition that waits forever must get in.
        let wait = match process.adopted_this_round {
            true => Wait::No,
            false => process.round().wait,
        };
        let violation = check::waited_in_vain(p, process.round, wait, process.acquired_this_round);
        self.record(violation);
        let process = &mut self.processes[p];
        process.round += 1;
        process.acquired_this_round = false;
        process.adopted_this_round = false;
        process.adopting = None;
        process.hold_owner = None;
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
                if let Start::Adopt { handle, then } = process.round().start {
                    if let Some(handle) = self.pick(handle) {
                        return self.adopt(p, handle, then);
                    }
                }
                let process = &mut self.processes[p];
                let unix_ms = u64::try_from(now.since_origin().as_millis()).unwrap_or(0);
                if process.locks[0].acquire(now, unix_ms, wait).is_ok() {
                    process.stage = Stage::Acquiring;
                }
                self.pump(p);
            }
            Stage::Holding => {
                let slot = process.slot;
                let mut exit = process.round().exit;
                if self.cfg.slots.is_some() && exit == Exit::Detach {
                    // Handles are a lock's: a semaphore's process releases.
                    exit = Exit::Release;
                }
                if exit == Exit::Crash {
                    self.processes[p].stage = Stage::Crashed;
                    return;
                }
                // A last write to the resource while it believes it holds the lock.
                let process = &self.processes[p];
                if let (Some((owner, token)), true) =
                    (process.hold, process.locks[slot].is_held(now))
                {
                    self.act(p, slot, owner, token);
                }
                let process = &mut self.processes[p];
                if exit == Exit::Release {
                    if process.locks[slot].release(now).is_ok() {
                        process.stage = Stage::Releasing;
                    }
                } else if let Ok(handle) = process.locks[slot].detach(now, lock_url()) {
                    // Let go: the hold is the handle's now. The round is over once the core
                    // has parked the record (its `Released { Parked }`, like a release's
                    // end), or at once when it writes nothing. (Refused only for a hold whose
                    // validity has just run out: the core then reports it expired, which
                    // ends the round.)
                    self.handles.push(handle);
                    if process.locks[slot].is_idle() {
                        self.end_round(p);
                    } else {
                        process.stage = Stage::Releasing;
                    }
                }
                self.pump(p);
            }
            Stage::Acquiring | Stage::Releasing | Stage::Finished | Stage::Crashed => {}
        }
    }

    /// The handle `back` places before the newest (wrapping around), if the pool has any. A
    /// semaphore's processes never adopt.
    fn pick(&self, back: usize) -> Option<Handle> {
        let n = self.handles.len();
        if n == 0 || self.cfg.slots.is_some() {
            return None;
        }
        Some(self.handles[n - 1 - back % n].clone())
    }

    /// Process `p` starts its round by continuing `handle`'s hold, whoever else may be
    /// running under it or releasing it at the time.
    fn adopt(&mut self, p: usize, handle: Handle, then: Resume) {
        let now = self.local(p);
        let current = self.s3.object(BUCKET, KEY);
        let ended = !check::is_live_record_of(current, handle.owner, handle.token);
        let process = &mut self.processes[p];
        // A handle entitles its holder to the hold's records (property 2).
        process.owners.insert(handle.owner);
        process.adopting = Some(Adoption {
            token: handle.token,
            then,
            ended,
            writer: None,
        });
        process.adopted_this_round = true;
        let unix_ms = u64::try_from(now.since_origin().as_millis()).unwrap_or(0);
        if process.locks[0].adopt(now, unix_ms, &handle, then).is_ok() {
            process.stage = Stage::Acquiring;
        }
        self.pump(p);
    }
}

/// What a write's body says, noted when it is sent.
#[derive(Clone, Copy, Debug)]
pub(super) struct Written {
    owner: OwnerId,
    writer: Option<u64>,
    /// A held record (not `free`, not resting).
    live: bool,
}

/// The simulated lock's URL, for handles.
fn lock_url() -> sets3lock_proto::LockUrl {
    format!("s3://{BUCKET}/{KEY}")
        .parse()
        .expect("the simulation's bucket and key make a valid URL")
}

/// The stop point of a hold valid until `valid_until`: `stop_before` ahead of it (`None`
/// without a stop point, or without an end).
fn stop_point(
    valid_until: Option<sets3lock_proto::Instant>,
    stop_before: Duration,
) -> Option<sets3lock_proto::Instant> {
    let until = valid_until?;
    let left = until.since_origin().checked_sub(stop_before)?;
    (!stop_before.is_zero()).then(|| sets3lock_proto::Instant::from_duration(left))
}
