//! Every interleaving of small configurations: a breadth-first exploration, with state
//! hashing, of two processes driving the real core against the mock bucket on a discrete
//! clock, checking the properties of docs/PROTOCOL.md ("Properties") in every reachable
//! state. What proptest samples, this enumerates: within the bound, no schedule is left out.
//!
//! The model checker is `stateright`. The core's [`Lock`] is deliberately not `Clone` (two
//! copies of a held lock would be two holders with one owner id), so a state is the list of
//! actions that leads to it, replayed from the start whenever it is expanded, and two states
//! are the same when everything that decides the future is the same: the Debug rendering of
//! the whole world (both cores, the bucket, the network, the time, the faults spent) hashed.
//!
//! What may happen, at every step, in any order:
//! - a process starts its next round (it waits forever), or ends a hold by releasing;
//! - any request in the network reaches the bucket and is applied, its reply sent back;
//! - any reply in the network reaches its process; a request unanswered for as long as the
//!   core allows (`Lock::request_limit` of the bound's request timeout: a hold's requests a
//!   renewal interval at most, and never past its validity) is answered "timeout" by its
//!   driver. The request timeout is a parameter of the bound: one tick, or the whole lease;
//! - a process's timer fires once due. The clock moves on one tick only when no live process
//!   has a timer or a timeout due and every message in the network has arrived, unless held up;
//! - and, within the fault budget: a request is held up, to land at any later time (after its
//!   process gave up on it, after the lock changed hands) or never; a reply is held up, to
//!   arrive later (before the driver's timeout, which drops it) or never; the bucket answers
//!   500 (having applied the request or not) or 409 instead; a process crashes (its requests
//!   in flight may still land) or freezes (a GC pause: time moves on without it) for any
//!   number of ticks.
//!
//! With handles (`Bound::handles`), a holder may also let go of its hold without releasing it
//! (`Lock::detach`), and a process may start its round by continuing the newest hold let go of
//! (`Lock::adopt`, to hold or to release), whatever became of it since, and while the other
//! process may still run under it (a release then rests the lock), or release it.
//!
//! With removals (`Bound::removals`), the lock object may also be removed behind the
//! processes' backs (an operator's `aws s3 rm`, a lifecycle rule), at any step. That is outside
//! the protocol: mutual exclusion and the resource's order are not promised after it (a holder
//! runs beside a newcomer until its next renewal fails), and are not checked. What is checked:
//! no process grants a token at or below one it has seen, whatever the record says; between
//! removals tokens increase over grants; nothing deletes a fenced object or writes over another
//! owner's.
//!
//! Clocks are perfect and a message takes no time unless held up: drift and latency are the
//! simulation's business (tests/simulation.rs); here the interleavings are.
//!
//! `cargo test --release --test exhaustive` explores CI's bound (under two minutes; the tests
//! are ignored in unoptimized builds, which explore a fifth as fast: scripts/test.sh runs
//! them optimized);
//! `EXHAUSTIVE="rounds faults horizon" cargo test --release --test exhaustive -- --ignored`
//! a larger one (docs/VERIFICATION.md).

use core::time::Duration;
use http::StatusCode;
use sets3lock_mock::check::{self, Resource};
use sets3lock_mock::{MissingKeyIfMatch, MockS3, Reply, Semantics, Violation};
use sets3lock_proto::{
    Ambiguity, Backoff, Config, Event, Handle, Holder, Instant, Lock, OwnerId, Purpose, Request,
    RequestId, Response, Resume, Wait,
};
use stateright::{Checker, Model, Property};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::hash::{Hash, Hasher};

const BUCKET: &str = "b";
const KEY: &str = "k";
/// The clock's step.
const TICK: Duration = Duration::from_secs(1);
/// More inputs at one instant than any correct core takes (a handful): time has stopped.
const MAX_AT_ONCE: u32 = 64;

/// The bound of one exploration.
#[derive(Clone, Debug)]
struct Bound {
    /// Rounds (acquire, hold, release) per process; two processes.
    rounds: [u8; 2],
    /// Faults (a 500, a 409, a crash, a freeze) in a whole run.
    faults: u8,
    /// No tick past this time.
    horizon: Duration,
    /// Fenced mode (no DELETE; tokens).
    fenced: bool,
    /// SeaweedFS's 412 for `If-Match` on a missing key instead of AWS's 404.
    seaweed: bool,
    /// Holds may be let go of (detached) and continued (adopted) by a process's next round.
    handles: bool,
    /// How many times the lock object may be removed behind the processes' backs.
    removals: u8,
    /// The driver's own limit on a request's wait, which the core shortens for a hold's
    /// requests (`Lock::request_limit`).
    request_timeout: Duration,
}

impl Bound {
    fn config(&self) -> Config {
        let second = Duration::from_secs(1);
        Config {
            // Renewals every second (each tick), validity a little under 3 s.
            lease: Duration::from_secs(3),
            max_drift_ppm: 10_000,
            poll: Backoff::new(second, second),
            retry: Backoff::new(second, second),
            retry_limit: 3,
            fenced: self.fenced,
            host: "x".into(),
            pid: 1,
            ..Config::default()
        }
    }
}

/// How the bucket answers a request instead of applying it as asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Refusal {
    /// 500 InternalError, the request not applied.
    ServerError,
    /// 500 InternalError after applying it.
    ServerErrorApplied,
    /// 409 ConditionalRequestConflict, not applied.
    Conflict,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Action {
    /// Process `p` starts its next round.
    Start(usize),
    /// Process `p` ends its hold: it releases.
    Release(usize),
    /// Process `p` ends its hold: it lets go of it, leaving the newest handle.
    Detach(usize),
    /// Process `p` starts its next round by continuing the newest handle's hold: to release
    /// it (`true`) or to hold it.
    Adopt(usize, bool),
    /// The request `id` of process `p` reaches the bucket.
    Apply(usize, u64),
    /// The request `id` of process `p` is held up in the network (a fault): it may reach the
    /// bucket at any later time, or never.
    Delay(usize, u64),
    /// The reply to process `p`'s request is held up (a fault): it may arrive later, or never
    /// (the driver gives up on it after the request timeout, and drops it).
    DelayReply(usize),
    /// The bucket refuses the request `id` of process `p` (a fault).
    Refuse(usize, u64, Refusal),
    /// The reply to process `p`'s request reaches it.
    Answer(usize),
    /// Process `p`'s driver gives up on its request.
    TimeOut(usize),
    /// Process `p`'s timer fires.
    Fire(usize),
    /// The clock moves on one tick.
    Tick,
    /// Process `p` dies (a fault).
    Crash(usize),
    /// Process `p` freezes (a fault); `Thaw` ends it.
    Freeze(usize),
    Thaw(usize),
    /// The lock object is removed behind every process's back.
    Remove,
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

/// A message in the network. One not `late` arrives before the clock moves on; a late one
/// (a fault) at any later time, or never.
#[derive(Debug)]
enum Message {
    ToBucket {
        p: usize,
        request: Request,
        late: bool,
    },
    ToProcess {
        p: usize,
        id: RequestId,
        response: Response,
        late: bool,
    },
}

impl Message {
    fn late(&self) -> bool {
        match self {
            Message::ToBucket { late, .. } | Message::ToProcess { late, .. } => *late,
        }
    }
}

#[derive(Debug)]
struct Process {
    lock: Lock,
    stage: Stage,
    rounds_left: u8,
    frozen: bool,
    /// The request it waits for, when it was sent, and how long its driver waits for it.
    waiting: Option<(RequestId, Duration, Duration)>,
    /// Every owner id its core has written.
    owners: BTreeSet<OwnerId>,
    /// When each of its writes in flight was sent, and the latest send of one applied.
    write_sent: BTreeMap<RequestId, Instant>,
    latest_applied_write: Option<Instant>,
    /// Its fenced grant while it holds: owner and token.
    grant: Option<(OwnerId, u64)>,
    /// Its round's adoption, until it ends: the hold's owner id and token, whether to
    /// release it, and whether the hold had ended already when it began.
    adopting: Option<(OwnerId, Option<u64>, bool, bool)>,
    /// Its round started by adopting.
    adopted: bool,
    /// The highest fencing token it has seen on the key: in a record handed to its core, or in
    /// a grant it reported.
    seen_token: Option<u64>,
}

/// What the exploration has seen happen somewhere (not part of a state's identity): shows
/// that the bound reaches the paths that matter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
struct Seen {
    both_acquired: bool,
    takeover: bool,
    read_back: bool,
    cleanup: bool,
    /// A hold continued from a handle; released from one; a handle refused, its hold over.
    adopted: bool,
    released_from_handle: bool,
    handle_ended: bool,
    /// After a removal, a process created the lock object with a token above 1: numbered from
    /// what it had seen, not from the (absent) record.
    remembered: bool,
}

#[derive(Debug)]
struct World {
    now: Duration,
    s3: MockS3,
    processes: Vec<Process>,
    network: Vec<Message>,
    faults: u8,
    /// Inputs handled since the clock last moved.
    at_once: u32,
    violations: Vec<Violation>,
    /// Fenced mode: grants by owner, in the real-time order of their writes; the largest
    /// token granted; the resource the tokens guard.
    grants: BTreeMap<OwnerId, usize>,
    highest_token: Option<u64>,
    resource: Resource,
    acquired_by: [bool; 2],
    /// Handles of holds let go of, oldest first; grants' tokens by owner id.
    handles: Vec<Handle>,
    grant_tokens: BTreeMap<OwnerId, u64>,
    /// Times the lock object was removed behind the processes' backs.
    removed: u8,
    /// The bound's request timeout.
    request_timeout: Duration,
}

impl World {
    fn new(bound: &Bound) -> World {
        let mut s3 = MockS3::with_semantics(Semantics {
            missing_key_if_match: if bound.seaweed {
                MissingKeyIfMatch::PreconditionFailed
            } else {
                MissingKeyIfMatch::NotFound
            },
            ..Semantics::default()
        });
        s3.create_bucket(BUCKET);
        let processes = (0..2)
            .map(|p| Process {
                lock: Lock::new(bound.config(), [p as u8 + 1; 32]).expect("a valid config"),
                stage: Stage::BeforeRound,
                rounds_left: bound.rounds[p],
                frozen: false,
                waiting: None,
                owners: BTreeSet::new(),
                write_sent: BTreeMap::new(),
                latest_applied_write: None,
                grant: None,
                adopting: None,
                adopted: false,
                seen_token: None,
            })
            .collect();
        World {
            now: Duration::ZERO,
            s3,
            processes,
            network: Vec::new(),
            faults: 0,
            at_once: 0,
            violations: Vec::new(),
            grants: BTreeMap::new(),
            highest_token: None,
            resource: Resource::default(),
            acquired_by: [false; 2],
            handles: Vec::new(),
            grant_tokens: BTreeMap::new(),
            removed: 0,
            request_timeout: bound.request_timeout,
        }
    }

    /// Every process's clock reads real time (rates and offsets are the simulation's
    /// business; here the interleavings are).
    fn local(&self) -> Instant {
        Instant::ZERO + self.now
    }

    fn due(&self, p: usize) -> bool {
        let process = &self.processes[p];
        process
            .lock
            .poll_timeout()
            .is_some_and(|t| t <= self.local())
    }

    fn gives_up(&self, p: usize) -> bool {
        self.processes[p]
            .waiting
            .is_some_and(|(_, sent, limit)| self.now >= sent + limit)
    }

    fn alive(&self, p: usize) -> bool {
        let process = &self.processes[p];
        process.stage != Stage::Crashed && !process.frozen
    }

    fn actions(&self, bound: &Bound, out: &mut Vec<Action>) {
        if !self.violations.is_empty() {
            return; // A counterexample: nothing after it matters.
        }
        let spare = self.faults < bound.faults;
        if self.removed < bound.removals && self.s3.object(BUCKET, KEY).is_some() {
            out.push(Action::Remove);
        }
        for message in &self.network {
            match message {
                Message::ToBucket { p, request, late } => {
                    out.push(Action::Apply(*p, request.id.as_u64()));
                    if spare && !late {
                        out.push(Action::Delay(*p, request.id.as_u64()));
                    }
                    if spare {
                        for refusal in [
                            Refusal::ServerError,
                            Refusal::ServerErrorApplied,
                            Refusal::Conflict,
                        ] {
                            out.push(Action::Refuse(*p, request.id.as_u64(), refusal));
                        }
                    }
                }
                Message::ToProcess { p, late, .. } => {
                    if self.alive(*p) {
                        out.push(Action::Answer(*p));
                    }
                    if spare && !late {
                        out.push(Action::DelayReply(*p));
                    }
                }
            }
        }
        for p in 0..2 {
            let process = &self.processes[p];
            if process.frozen && process.stage != Stage::Crashed {
                out.push(Action::Thaw(p));
            }
            if !self.alive(p) {
                continue;
            }
            if self.gives_up(p) {
                out.push(Action::TimeOut(p));
            }
            if self.due(p) {
                out.push(Action::Fire(p));
            }
            match process.stage {
                Stage::BeforeRound if process.rounds_left > 0 && process.lock.is_idle() => {
                    out.push(Action::Start(p));
                    if !self.handles.is_empty() {
                        out.push(Action::Adopt(p, false));
                        out.push(Action::Adopt(p, true));
                    }
                }
                Stage::Holding => {
                    out.push(Action::Release(p));
                    if bound.handles {
                        out.push(Action::Detach(p));
                    }
                }
                _ => {}
            }
            if spare {
                out.push(Action::Crash(p));
                out.push(Action::Freeze(p));
            }
        }
        // Time moves on only when no live process has anything due (timers fire, and drivers
        // give up, on time; a frozen process is late: that is what freezing is) and the
        // network holds nothing but late messages (and replies waiting for a frozen process).
        let waits = |m: &Message| match m {
            Message::ToProcess { p, .. } => self.processes[*p].frozen,
            Message::ToBucket { .. } => false,
        };
        let prompt = (0..2).all(|p| !self.alive(p) || !(self.due(p) || self.gives_up(p)))
            && self.network.iter().all(|m| m.late() || waits(m));
        if prompt && self.now + TICK <= bound.horizon {
            out.push(Action::Tick);
        }
    }

    fn apply(&mut self, action: Action, seen: &mut Seen) {
        if action == Action::Tick {
            self.now += TICK;
            self.at_once = 0;
            return;
        }
        self.at_once += 1;
        if self.at_once > MAX_AT_ONCE {
            self.violations.push(Violation::Spinning { at: self.now });
            return;
        }
        let now = self.local();
        match action {
            Action::Tick => {}
            Action::Start(p) => {
                let unix_ms = 1_764_547_200_000 + self.now.as_millis() as u64;
                let lock = &mut self.processes[p].lock;
                lock.acquire(now, unix_ms, Wait::Forever)
                    .expect("an idle lock takes an acquisition");
                self.processes[p].stage = Stage::Acquiring;
                self.processes[p].rounds_left -= 1;
                self.pump(p, seen);
            }
            Action::Release(p) => {
                self.act(p);
                // Refused only for a hold whose validity has just run out: the core then
                // reports it expired (handled by the pump, which ends the round).
                if self.processes[p].lock.release(now).is_ok() {
                    self.processes[p].stage = Stage::Releasing;
                }
                self.pump(p, seen);
            }
            Action::Detach(p) => {
                self.act(p);
                // (The handle's URL is for people: any valid one does.)
                let url = "s3://sim-bucket/k".parse().expect("a valid URL");
                // Refused only for a hold whose validity has just run out, as above.
                if let Ok(handle) = self.processes[p].lock.detach(now, url) {
                    self.handles.push(handle);
                    // The driver lets go of the connection: a request in flight may still
                    // land, its reply goes nowhere.
                    let process = &mut self.processes[p];
                    process.waiting = None;
                    self.network
                        .retain(|m| !matches!(m, Message::ToProcess { p: q, .. } if *q == p));
                    self.end_round(p);
                }
                self.pump(p, seen);
            }
            Action::Adopt(p, release) => {
                let handle = self.handles.last().cloned().expect("a handle to adopt");
                let current = self.s3.object(BUCKET, KEY);
                let ended = !check::is_live_record_of(current, handle.owner, handle.token);
                let unix_ms = 1_764_547_200_000 + self.now.as_millis() as u64;
                let then = if release {
                    Resume::Release
                } else {
                    Resume::Hold
                };
                let process = &mut self.processes[p];
                // A handle entitles its holder to the hold's records (property 2).
                process.owners.insert(handle.owner);
                process.adopting = Some((handle.owner, handle.token, release, ended));
                process.adopted = true;
                process
                    .lock
                    .adopt(now, unix_ms, &handle, then)
                    .expect("an idle lock takes an adoption");
                process.stage = Stage::Acquiring;
                process.rounds_left -= 1;
                self.pump(p, seen);
            }
            Action::Apply(p, id) => {
                let request = self.take_request(p, id);
                let response = self.serve(p, &request, seen);
                self.reply(p, request.id, response);
            }
            Action::Delay(p, id) => {
                self.faults += 1;
                let request = self.take_request(p, id);
                self.network.push(Message::ToBucket {
                    p,
                    request,
                    late: true,
                });
            }
            Action::DelayReply(p) => {
                self.faults += 1;
                let at = self.reply_to(p);
                if let Message::ToProcess { late, .. } = &mut self.network[at] {
                    *late = true;
                }
            }
            Action::Refuse(p, id, refusal) => {
                self.faults += 1;
                let request = self.take_request(p, id);
                let reply = match refusal {
                    Refusal::ServerError | Refusal::ServerErrorApplied => {
                        Reply::error(StatusCode::INTERNAL_SERVER_ERROR, "InternalError")
                    }
                    Refusal::Conflict => {
                        Reply::error(StatusCode::CONFLICT, "ConditionalRequestConflict")
                    }
                };
                if refusal == Refusal::ServerErrorApplied {
                    self.serve(p, &request, seen);
                }
                self.reply(p, request.id, reply.classify(request.intent.kind()));
            }
            Action::Answer(p) => {
                let at = self.reply_to(p);
                let Message::ToProcess { id, response, .. } = self.network.remove(at) else {
                    unreachable!("found a reply");
                };
                // Only the request waited for has a connection to reply on (`reply`).
                self.processes[p].waiting = None;
                let process = &mut self.processes[p];
                process.seen_token = check::higher(process.seen_token, check::token_in(&response));
                self.processes[p].lock.handle_response(id, response, now);
                self.pump(p, seen);
            }
            Action::TimeOut(p) => {
                let (id, _, _) = self.processes[p]
                    .waiting
                    .take()
                    .expect("a request waited for");
                // A reply already on its way is dropped with the connection; the request
                // itself, if not yet applied, may still land.
                self.network
                    .retain(|m| !matches!(m, Message::ToProcess { p: q, .. } if *q == p));
                let response = Response::Ambiguous(Ambiguity::Timeout);
                self.processes[p].lock.handle_response(id, response, now);
                self.pump(p, seen);
            }
            Action::Fire(p) => {
                let sent = self.network.len();
                self.processes[p].lock.handle_timeout(now);
                self.pump(p, seen);
                // A core still due after its timer fired, having sent nothing, would be woken
                // again and again at this instant: time has stopped for it.
                if self.due(p) && self.network.len() == sent && self.processes[p].waiting.is_none()
                {
                    self.violations.push(Violation::Spinning { at: self.now });
                }
            }
            Action::Crash(p) => {
                self.faults += 1;
                self.processes[p].stage = Stage::Crashed;
                self.network
                    .retain(|m| !matches!(m, Message::ToProcess { p: q, .. } if *q == p));
            }
            Action::Freeze(p) => {
                self.faults += 1;
                self.processes[p].frozen = true;
            }
            Action::Remove => {
                self.removed += 1;
                self.s3.force(BUCKET, KEY, None);
                // Tokens may start again from nothing: later grants are judged among
                // themselves (and each against what its process saw).
                self.highest_token = None;
            }
            Action::Thaw(p) => {
                self.processes[p].frozen = false;
                // Back from its pause, it still believes it holds the lock (it checked before
                // it froze) and writes to the resource with its token.
                if self.processes[p].stage == Stage::Holding {
                    self.act(p);
                }
            }
        }
        self.check_holders();
    }

    /// The bucket's reply to request `id` of process `p` goes back over its connection: only
    /// if the process is alive and still waiting for that request (after a timeout, or a
    /// crash, the connection is gone and the reply with it).
    fn reply(&mut self, p: usize, id: RequestId, response: Response) {
        let process = &self.processes[p];
        if process.stage != Stage::Crashed && process.waiting.is_some_and(|(w, _, _)| w == id) {
            self.network.push(Message::ToProcess {
                p,
                id,
                response,
                late: false,
            });
        }
    }

    fn reply_to(&self, p: usize) -> usize {
        self.network
            .iter()
            .position(|m| matches!(m, Message::ToProcess { p: q, .. } if *q == p))
            .expect("a reply in the network")
    }

    fn take_request(&mut self, p: usize, id: u64) -> Request {
        let at = self
            .network
            .iter()
            .position(|m| matches!(m, Message::ToBucket { p: q, request, .. } if *q == p && request.id.as_u64() == id))
            .expect("the request in the network");
        let Message::ToBucket { request, .. } = self.network.remove(at) else {
            unreachable!("found a request");
        };
        request
    }

    /// The bucket applies `request` of process `p`; the properties judge what it did.
    fn serve(&mut self, p: usize, request: &Request, seen: &mut Seen) -> Response {
        let before = self.s3.object(BUCKET, KEY).cloned();
        let response = self.s3.respond(BUCKET, KEY, &request.intent);
        let after = self.s3.object(BUCKET, KEY);
        let changed = after != before.as_ref();
        let process = &mut self.processes[p];
        if let Some(sent) = process.write_sent.remove(&request.id) {
            if after.is_some() && changed {
                process.latest_applied_write =
                    Some(process.latest_applied_write.map_or(sent, |l| l.max(sent)));
            }
        }
        if changed {
            seen.takeover |= request.purpose == Purpose::Takeover;
            seen.cleanup |= request.purpose == Purpose::Cleanup;
        }
        seen.read_back |= request.purpose == Purpose::Resolve;
        let foreign = check::foreign_write(
            self.now,
            p,
            request,
            &self.processes[p].owners,
            before.as_ref(),
            after,
        );
        let judge = if self.removed > 0 {
            check::tokens_after_removal
        } else {
            check::tokens
        };
        let (tokens, grant) = judge(
            self.now,
            p,
            request,
            before.as_ref(),
            after,
            self.highest_token,
        );
        self.violations.extend(foreign);
        self.violations.extend(tokens);
        if let Some((owner, token)) = grant {
            self.highest_token = Some(self.highest_token.map_or(token, |h| h.max(token)));
            let number = self.grants.len();
            self.grants.insert(owner, number);
            self.grant_tokens.insert(owner, token);
        }
        response
    }

    /// Sends what process `p`'s core wants sent and handles its events, until it has nothing
    /// more.
    fn pump(&mut self, p: usize, seen: &mut Seen) {
        let now = self.local();
        loop {
            let mut busy = false;
            while let Some(request) = self.processes[p].lock.poll_request() {
                busy = true;
                let process = &mut self.processes[p];
                if let Some(body) = request.intent.body() {
                    if let Holder::Sets3lock(r) = Holder::decode(body) {
                        process.owners.insert(r.owner);
                    }
                    process.write_sent.insert(request.id, now);
                }
                let limit = process.lock.request_limit(self.request_timeout, now);
                process.waiting = Some((request.id, self.now, limit));
                let v = check::token_at_or_below_seen(self.now, p, &request, process.seen_token);
                self.violations.extend(v);
                if self.removed > 0 && request.purpose == Purpose::Acquire {
                    let token = request
                        .intent
                        .body()
                        .and_then(|b| Holder::decode(b).fence());
                    seen.remembered |= token.is_some_and(|f| f.token > 1);
                }
                if let Some((_, _, _, ended)) = process.adopting {
                    let wrote = !matches!(request.intent, sets3lock_proto::Intent::Get { .. });
                    let v = check::ended_hold_continued(self.now, p, ended, wrote, false);
                    self.violations.extend(v);
                }
                self.network.push(Message::ToBucket {
                    p,
                    request,
                    late: false,
                });
            }
            while let Some(event) = self.processes[p].lock.poll_event() {
                busy = true;
                self.on_event(p, event, seen);
            }
            if !busy {
                break;
            }
        }
    }

    fn on_event(&mut self, p: usize, event: Event, seen: &mut Seen) {
        if let Event::Acquired { valid_until, .. } | Event::Renewed { valid_until, .. } = &event {
            let validity = self.processes[p].lock.config().validity();
            let latest = self.processes[p].latest_applied_write;
            let v = check::validity_not_from_send(self.now, p, *valid_until, latest, validity);
            self.violations.extend(v);
        }
        if !event.is_final() {
            return;
        }
        if let Some((_, handle_token, release, ended)) = self.processes[p].adopting.take() {
            let continued = matches!(event, Event::Acquired { .. } | Event::Released { .. });
            let v = check::ended_hold_continued(self.now, p, ended, false, continued);
            self.violations.extend(v);
            seen.adopted |= matches!(event, Event::Acquired { .. });
            seen.released_from_handle |= release && matches!(event, Event::Released { .. });
            seen.handle_ended |= matches!(
                event,
                Event::NotAcquired {
                    reason: sets3lock_proto::NotAcquired::Ended { .. }
                }
            );
            if let Event::Acquired { owner, token, .. } = &event {
                let granted = self.grant_tokens.get(owner).copied();
                let v = check::adopted_token_changed(self.now, p, *token, granted);
                self.violations.extend(v);
                let v = check::adopted_token_changed(self.now, p, *token, handle_token);
                self.violations.extend(v);
            }
        }
        let process = &mut self.processes[p];
        match event {
            Event::Acquired {
                etag, owner, token, ..
            } => {
                process.seen_token = check::higher(process.seen_token, token);
                let current = self.s3.object(BUCKET, KEY);
                let v = if self.removed > 0 {
                    // Removed behind its back, perhaps between its write and the reply.
                    None
                } else if process.adopted {
                    // Another process continuing the hold may have written over our write
                    // before its reply came: the object is then that process's record of it,
                    // or the resting record of a release from the handle (which keeps
                    // everyone else out until our lease is surely over).
                    (check::hold_of(current) != Some((owner, token))).then_some(
                        Violation::AcquiredWithoutOwnWrite {
                            at: self.now,
                            process: p,
                        },
                    )
                } else {
                    check::acquired_without_own_write(self.now, p, current, &etag, owner)
                };
                self.violations.extend(v);
                process.stage = Stage::Holding;
                process.grant = token.map(|t| (owner, t));
                self.acquired_by[p] = true;
                seen.both_acquired |= self.acquired_by == [true, true];
                self.act(p);
            }
            _ => self.end_round(p),
        }
    }

    /// Process `p`'s round is over.
    fn end_round(&mut self, p: usize) {
        let process = &mut self.processes[p];
        process.grant = None;
        process.adopting = None;
        process.adopted = false;
        process.stage = if process.rounds_left > 0 {
            Stage::BeforeRound
        } else {
            Stage::Finished
        };
    }

    /// Process `p`, believing it holds the lock, writes to the fenced resource.
    fn act(&mut self, p: usize) {
        if self.removed > 0 {
            return; // The resource's order is not promised after a removal.
        }
        if let Some((owner, token)) = self.processes[p].grant {
            if let Some(&grant) = self.grants.get(&owner) {
                let v = self.resource.write(self.now, p, token, grant);
                self.violations.extend(v);
            }
        }
    }

    /// Property 1, after every step.
    fn check_holders(&mut self) {
        if self.removed > 0 {
            return; // Not promised after a removal: a holder learns of it at its renewal.
        }
        let now = self.local();
        let claims: Vec<Option<(OwnerId, Option<u64>)>> = self
            .processes
            .iter()
            .map(|c| {
                let owner = c.lock.holding().map(|(o, _)| o)?;
                (c.stage != Stage::Crashed && c.lock.is_held(now)).then(|| (owner, c.lock.token()))
            })
            .collect();
        let v = check::two_holds(self.now, claims.iter().map(|c| c.map(|(o, _)| o)));
        self.violations.extend(v);
        // Every claim stands on a record of its hold (live, or resting after a release from a
        // handle), whoever of the hold wrote it.
        let live = check::hold_of(self.s3.object(BUCKET, KEY));
        for (p, claim) in claims.into_iter().enumerate() {
            let v = claim.and_then(|c| check::held_without_record(self.now, p, c, live));
            self.violations.extend(v);
        }
    }

    /// What identifies this state: everything that decides what can happen next.
    /// (Not how many inputs were handled at this instant, which only bounds a spinning core,
    /// and not the order in which messages entered the network.)
    fn digest(&self) -> u64 {
        let mut network: Vec<String> = self.network.iter().map(|m| format!("{m:?}")).collect();
        network.sort_unstable();
        let mut text = HashWriter(std::collections::hash_map::DefaultHasher::new());
        let _ = write!(
            text,
            "{:?} {:?} {:?} {network:?} {} {:?} {:?} {:?} {:?} {:?} {:?} {}",
            self.now,
            self.s3,
            self.processes,
            self.faults,
            self.violations,
            self.grants,
            self.highest_token,
            self.resource,
            self.handles,
            self.grant_tokens,
            self.removed,
        );
        text.0.finish()
    }
}

/// Hashes what is written to it, without keeping it.
struct HashWriter(std::collections::hash_map::DefaultHasher);

impl std::fmt::Write for HashWriter {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.write(s.as_bytes());
        Ok(())
    }
}

/// A state: how it was reached (replayed to rebuild it), its identity, and what can happen
/// next (found while it was built, so that listing it needs no replay).
#[derive(Clone, Debug)]
struct State {
    trace: Vec<Action>,
    digest: u64,
    next: Vec<Action>,
    violations: Vec<Violation>,
    seen: Seen,
}

impl PartialEq for State {
    fn eq(&self, other: &State) -> bool {
        self.digest == other.digest
    }
}

impl Hash for State {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.digest.hash(state);
    }
}

/// A condition on a state, as stateright's properties take it.
type Condition = fn(&Explore, &State) -> bool;

struct Explore {
    bound: Bound,
}

impl Explore {
    fn replay(&self, trace: &[Action]) -> (World, Seen) {
        let mut world = World::new(&self.bound);
        let mut seen = Seen::default();
        for &action in trace {
            world.apply(action, &mut seen);
        }
        (world, seen)
    }

    fn state(&self, trace: Vec<Action>) -> State {
        let (world, seen) = self.replay(&trace);
        let mut next = Vec::new();
        world.actions(&self.bound, &mut next);
        State {
            digest: world.digest(),
            next,
            violations: world.violations.clone(),
            trace,
            seen,
        }
    }
}

impl Model for Explore {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        vec![self.state(Vec::new())]
    }

    fn actions(&self, state: &State, actions: &mut Vec<Action>) {
        actions.extend_from_slice(&state.next);
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut trace = last.trace.clone();
        trace.push(action);
        // (The replay sees everything that happened on the way here.)
        Some(self.state(trace))
    }

    fn properties(&self) -> Vec<Property<Self>> {
        let mut properties = vec![Property::always(
            "every property of PROTOCOL.md holds",
            |_, s: &State| s.violations.is_empty(),
        )];
        // The bound reaches what matters: both processes hold the lock in turn, a lost reply
        // is recovered by reading back, a stale holder is taken over, and a write left behind
        // by an expired hold is cleaned up. (Without faults only the first can happen.)
        let reached: [(&'static str, Condition); 4] = [
            ("both processes acquire", |_, s| s.seen.both_acquired),
            ("a write is read back", |_, s| s.seen.read_back),
            ("a stale holder is taken over", |_, s| s.seen.takeover),
            ("a write left behind is cleaned up", |_, s| s.seen.cleanup),
        ];
        let reachable = if self.bound.faults > 0 { 4 } else { 1 };
        for (name, seen) in reached.into_iter().take(reachable) {
            properties.push(Property::sometimes(name, seen));
        }
        if self.bound.handles {
            let reached: [(&'static str, Condition); 4] = [
                ("a hold is continued from a handle", |_, s| s.seen.adopted),
                ("a hold is released from a handle", |_, s| {
                    s.seen.released_from_handle
                }),
                ("a handle is refused, its hold over", |_, s| {
                    s.seen.handle_ended
                }),
                ("a stale holder is taken over", |_, s| s.seen.takeover),
            ];
            for (name, seen) in reached {
                properties.push(Property::sometimes(name, seen));
            }
        }
        if self.bound.removals > 0 {
            properties.push(Property::sometimes(
                "after a removal, a grant is numbered from what its process saw",
                |_, s: &State| s.seen.remembered,
            ));
        }
        properties
    }
}

/// Explores `bound` completely (or fails at `limit`), reports its size, and fails with the
/// shortest path to any violation.
fn explore(name: &str, bound: Bound, limit: Duration) -> usize {
    let started = std::time::Instant::now();
    let checker = Explore {
        bound: bound.clone(),
    }
    .checker()
    .threads(2)
    .timeout(limit)
    .spawn_bfs()
    .join();
    let elapsed = started.elapsed();
    let (states, unique, depth) = (
        checker.state_count(),
        checker.unique_state_count(),
        checker.max_depth(),
    );
    eprintln!(
        "{name}: {bound:?}: {unique} distinct states ({states} visited), depth {depth}, {:.1} s",
        elapsed.as_secs_f64()
    );
    assert!(
        elapsed < limit,
        "{name}: not finished within {limit:?} ({unique} states so far)"
    );
    if let Some(path) = checker.discovery("every property of PROTOCOL.md holds") {
        let last = path.last_state();
        let steps: Vec<String> = last.trace.iter().map(|a| format!("  {a:?}")).collect();
        panic!(
            "{name}: {:?} after these steps:\n{}",
            last.violations,
            steps.join("\n")
        );
    }
    checker.assert_properties();
    unique
}

/// CI's bound: two processes, one round each, one fault, three seconds (a lease).
fn small(fenced: bool) -> Bound {
    Bound {
        rounds: [1, 1],
        faults: 1,
        horizon: Duration::from_secs(3),
        fenced,
        seaweed: false,
        handles: false,
        removals: 0,
        request_timeout: TICK,
    }
}

/// Handles: process 0 acquires and lets go of its hold (or releases it) and then continues
/// the newest hold let go of, or acquires again; process 1 acquires (waiting, so it takes a
/// hold left unrenewed over after its lease) or continues a handle, to hold or to release;
/// every interleaving, two processes on one hold included, with no fault (`faults` 0) or one,
/// over `horizon` seconds.
fn handles(fenced: bool, faults: u8, horizon: u64) -> Bound {
    Bound {
        rounds: [2, 1],
        faults,
        horizon: Duration::from_secs(horizon),
        fenced,
        seaweed: false,
        handles: true,
        removals: 0,
        request_timeout: TICK,
    }
}

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "slow unoptimized: cargo test --release --test exhaustive"
)]
fn every_interleaving_of_a_hold_handed_between_two_processes() {
    explore("handles", handles(false, 0, 3), Duration::from_secs(240));
}

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "slow unoptimized: cargo test --release --test exhaustive"
)]
fn every_interleaving_of_a_hold_handed_between_two_processes_in_fenced_mode() {
    explore(
        "handles, fenced",
        handles(true, 0, 3),
        Duration::from_secs(240),
    );
}

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "slow unoptimized: cargo test --release --test exhaustive"
)]
fn every_interleaving_of_two_processes_with_one_fault() {
    explore("presence", small(false), Duration::from_secs(240));
}

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "slow unoptimized: cargo test --release --test exhaustive"
)]
fn every_interleaving_of_two_processes_with_one_fault_in_fenced_mode() {
    explore("fenced", small(true), Duration::from_secs(240));
}

/// A driver whose own request timeout is the whole lease (three ticks, longer than
/// validity): what it waits for a hold's request is the core's bound (`Lock::request_limit`),
/// and while acquiring its own. Both modes, one fault: the properties do not depend on how long
/// a driver waits.
#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "slow unoptimized: cargo test --release --test exhaustive"
)]
fn every_interleaving_with_a_request_timeout_as_long_as_the_lease() {
    for fenced in [false, true] {
        let bound = Bound {
            request_timeout: 3 * TICK,
            ..small(fenced)
        };
        explore("request timeout 3 s", bound, Duration::from_secs(240));
    }
}

/// Fenced mode with the lock object removed behind the processes' backs once, at any step:
/// one round each (the other waits meanwhile), no other fault, over a lease.
#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "slow unoptimized: cargo test --release --test exhaustive"
)]
fn every_interleaving_of_a_fenced_key_removed_behind_the_clients_backs() {
    let bound = Bound {
        rounds: [1, 1],
        faults: 0,
        horizon: Duration::from_secs(3),
        fenced: true,
        seaweed: false,
        handles: false,
        removals: 1,
        request_timeout: TICK,
    };
    explore("removed", bound, Duration::from_secs(240));
}

/// A larger bound, for the record (docs/VERIFICATION.md): `EXHAUSTIVE="rounds faults horizon"`
/// (default "1 2 3": one round each, two faults, three seconds), both modes. Takes long.
#[test]
#[ignore = "long: run by hand with --ignored"]
fn every_interleaving_of_a_larger_bound() {
    let spec = std::env::var("EXHAUSTIVE").unwrap_or_else(|_| "1 2 3".into());
    let n: Vec<u8> = spec
        .split_whitespace()
        .map(|v| v.parse().expect("EXHAUSTIVE: three numbers from 0 to 255"))
        .collect();
    let [rounds, faults, horizon] = n[..] else {
        panic!("EXHAUSTIVE: rounds faults horizon, for example \"1 2 3\"");
    };
    for fenced in [false, true] {
        let bound = Bound {
            rounds: [rounds, rounds],
            faults,
            horizon: Duration::from_secs(horizon.into()),
            fenced,
            seaweed: false,
            handles: false,
            removals: 0,
            request_timeout: TICK,
        };
        explore("larger", bound, Duration::from_secs(6 * 3600));
    }
}
