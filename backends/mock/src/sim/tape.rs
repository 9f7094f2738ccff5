//! A core and, when asked for, the tape of everything it was given and gave back: the
//! recorded scenarios another implementation of the protocol can replay (the project's
//! `docs/vectors/scenarios.json` is made of them).

use core::ops::Deref;
use sets3lock_proto::{
    CommandError, Config, Event, Handle, Instant, Lock, LockUrl, Request, RequestId, Response,
    Resume, Wait,
};

/// One input a core was given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    /// `acquire(now, unix_ms, wait)`.
    Acquire {
        /// The wall-clock time given, for the record.
        unix_ms: u64,
        /// How long to wait.
        wait: Wait,
    },
    /// `release(now)`.
    Release,
    /// `handle_response(id, response, now)`.
    Response {
        /// The request answered.
        id: RequestId,
        /// The answer.
        response: Response,
    },
    /// `handle_timeout(now)`.
    Timeout,
    /// A handle adopted or a hold detached: the tape cannot be replayed from its inputs alone
    /// past this step.
    Handle,
}

/// An input, when it was given (the core's `now`), and what the core gave back before the
/// next input: its requests and events, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// The core's clock at the input.
    pub at: Instant,
    /// The input.
    pub input: Input,
    /// The requests it produced.
    pub requests: Vec<Request>,
    /// The events it produced.
    pub events: Vec<Event>,
    /// When the core asked to be woken next, once they were taken (`poll_timeout`).
    pub timeout: Option<Instant>,
    /// For an `acquire` or a `release`: the core's refusal, if it refused the command.
    pub refused: Option<CommandError>,
}

/// Everything one core of one process went through.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tape {
    /// The process.
    pub process: usize,
    /// Its slot (0 for a lock).
    pub slot: usize,
    /// What the core was made with.
    pub config: Config,
    /// Its seed.
    pub seed: [u8; 32],
    /// Its inputs and outputs.
    pub steps: Vec<Step>,
}

impl Tape {
    /// Whether every input can be replayed (no handle adopted or detached).
    pub fn replayable(&self) -> bool {
        !self.steps.iter().any(|s| s.input == Input::Handle)
    }
}

/// A core, taped if asked.
#[derive(Debug)]
pub(super) struct Taped {
    lock: Lock,
    tape: Option<Tape>,
}

impl Deref for Taped {
    type Target = Lock;
    fn deref(&self) -> &Lock {
        &self.lock
    }
}

impl Taped {
    pub(super) fn new(lock: Lock, tape: Option<Tape>) -> Taped {
        Taped { lock, tape }
    }

    pub(super) fn into_tape(mut self) -> Option<Tape> {
        self.close_step();
        self.tape
    }

    /// The last step's timer, as the core has it before the next input.
    fn close_step(&mut self) {
        let timeout = self.lock.poll_timeout();
        if let Some(step) = self.last() {
            step.timeout = timeout;
        }
    }

    fn input(&mut self, at: Instant, input: Input) {
        if self.tape.is_none() {
            return;
        }
        self.close_step();
        if let Some(t) = &mut self.tape {
            t.steps.push(Step {
                at,
                input,
                requests: Vec::new(),
                events: Vec::new(),
                timeout: None,
                refused: None,
            });
        }
    }

    fn last(&mut self) -> Option<&mut Step> {
        self.tape.as_mut().and_then(|t| t.steps.last_mut())
    }

    pub(super) fn acquire(
        &mut self,
        now: Instant,
        unix_ms: u64,
        wait: Wait,
    ) -> Result<(), CommandError> {
        self.input(now, Input::Acquire { unix_ms, wait });
        let result = self.lock.acquire(now, unix_ms, wait);
        self.note_refusal(&result);
        result
    }

    pub(super) fn release(&mut self, now: Instant) -> Result<(), CommandError> {
        self.input(now, Input::Release);
        let result = self.lock.release(now);
        self.note_refusal(&result);
        result
    }

    /// Puts a command's refusal on the tape.
    fn note_refusal(&mut self, result: &Result<(), CommandError>) {
        if let (Some(step), Err(e)) = (self.last(), result) {
            step.refused = Some(*e);
        }
    }

    pub(super) fn handle_response(&mut self, id: RequestId, response: Response, now: Instant) {
        if self.tape.is_some() {
            let response = response.clone();
            self.input(now, Input::Response { id, response });
        }
        self.lock.handle_response(id, response, now);
    }

    pub(super) fn handle_timeout(&mut self, now: Instant) {
        self.input(now, Input::Timeout);
        self.lock.handle_timeout(now);
    }

    pub(super) fn adopt(
        &mut self,
        now: Instant,
        unix_ms: u64,
        handle: &Handle,
        then: Resume,
    ) -> Result<(), CommandError> {
        self.input(now, Input::Handle);
        self.lock.adopt(now, unix_ms, handle, then)
    }

    pub(super) fn detach(&mut self, now: Instant, url: LockUrl) -> Result<Handle, CommandError> {
        self.input(now, Input::Handle);
        self.lock.detach(now, url)
    }

    pub(super) fn poll_request(&mut self) -> Option<Request> {
        let request = self.lock.poll_request()?;
        if let Some(step) = self.last() {
            step.requests.push(request.clone());
        }
        Some(request)
    }

    pub(super) fn poll_event(&mut self) -> Option<Event> {
        let event = self.lock.poll_event()?;
        if let Some(step) = self.last() {
            step.events.push(event.clone());
        }
        Some(event)
    }
}
