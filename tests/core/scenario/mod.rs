//! The scenario tests' harness: one client, the mock bucket, and a virtual clock the test
//! moves by hand. Every drive loop here has a bound and fails with what it saw.

#![allow(dead_code, unreachable_pub)] // each test file uses part of it

use core::time::Duration;
use sets3lock_mock::{MissingKeyIfMatch, MockS3, Semantics};
use sets3lock_proto::{
    Ambiguity, Config, ETag, Event, Instant, Lock, Purpose, Request, Response, Wait,
};

/// More timer firings or rounds of requests than any scenario needs: a protocol that spins
/// fails here instead of hanging the suite.
pub const MAX_STEPS: usize = 10_000;

pub const B: &str = "bucket";
pub const K: &str = "lock";

pub fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

pub fn config() -> Config {
    Config {
        lease: secs(30),
        host: "test-host".into(),
        pid: 77,
        ..Config::default()
    }
}

/// One process using a lock: its core, its clock (moved by hand), what it sent and saw.
pub struct Process {
    pub lock: Lock,
    pub now: Instant,
    pub events: Vec<Event>,
    pub sent: Vec<Request>,
    /// Timers fired in a row without time moving on.
    stalled: usize,
}

impl Process {
    pub fn new(config: Config, seed: u8) -> Process {
        Process {
            lock: Lock::new(config, [seed; 32]).expect("valid config"),
            now: Instant::ZERO,
            events: Vec::new(),
            sent: Vec::new(),
            stalled: 0,
        }
    }

    /// The next request, which the test then answers. A core that keeps asking fails the
    /// test after [`MAX_STEPS`] requests, with what it did last.
    pub fn request(&mut self) -> Option<Request> {
        let r = self.lock.poll_request();
        if let Some(r) = &r {
            self.sent.push(r.clone());
            assert!(
                self.sent.len() < MAX_STEPS,
                "spinning: {MAX_STEPS} requests sent: {:?}",
                self.timeline()
            );
        }
        r
    }

    /// Moves the clock to the core's next timer and fires it (the test's loops wait this
    /// way). A core with no timer, or one that keeps firing without moving time on, fails
    /// the test with what it did last.
    pub fn tick(&mut self) {
        let Some(t) = self.lock.poll_timeout() else {
            panic!(
                "nothing in flight and no timer: the core cannot move on: {:?}",
                self.timeline()
            );
        };
        if t <= self.now {
            self.stalled += 1;
            assert!(
                self.stalled < MAX_STEPS,
                "spinning: {MAX_STEPS} timers at {:?} without time moving: {:?}",
                self.now,
                self.timeline()
            );
        } else {
            self.stalled = 0;
        }
        self.now = self.now.max(t);
        self.lock.handle_timeout(self.now);
        self.collect();
    }

    /// The next request the core sends, firing its timers until it does; fails after 100
    /// timers with what it did last.
    pub fn next_request(&mut self) -> Request {
        for _ in 0..100 {
            if let Some(r) = self.request() {
                return r;
            }
            self.tick();
        }
        panic!("no request after 100 timers: {:?}", self.timeline());
    }

    /// Answers `req` with what `s3` makes of it.
    pub fn serve(&mut self, s3: &mut MockS3, req: &Request) {
        let reply = s3.execute(B, K, &req.intent).classify(req.intent.kind());
        self.answer(req, reply);
    }

    pub fn answer(&mut self, req: &Request, response: Response) {
        self.lock.handle_response(req.id, response, self.now);
        self.collect();
    }

    pub fn collect(&mut self) {
        while let Some(e) = self.lock.poll_event() {
            self.events.push(e);
        }
    }

    /// Sends every request to `s3` and answers it at once, firing timers, until `until`.
    pub fn run(&mut self, s3: &mut MockS3, until: Instant) {
        for step in 0.. {
            assert!(
                step < MAX_STEPS,
                "still busy after {MAX_STEPS} steps: {:?}",
                self.timeline()
            );
            while let Some(req) = self.request() {
                let response = s3.execute(B, K, &req.intent).classify(req.intent.kind());
                self.answer(&req, response);
            }
            match self.lock.poll_timeout() {
                Some(t) if t <= until => {
                    self.now = self.now.max(t);
                    self.lock.handle_timeout(self.now);
                    self.collect();
                }
                _ => break,
            }
        }
        self.now = self.now.max(until);
        self.lock.handle_timeout(self.now);
        self.collect();
        while let Some(req) = self.request() {
            let response = s3.execute(B, K, &req.intent).classify(req.intent.kind());
            self.answer(&req, response);
        }
    }

    pub fn at(&self, d: Duration) -> Instant {
        Instant::ZERO + d
    }

    pub fn take_events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.events)
    }

    /// The last requests sent and events seen, for a failure message.
    pub fn timeline(&self) -> (Vec<Purpose>, Vec<Event>) {
        let n = self.sent.len().saturating_sub(12);
        let e = self.events.len().saturating_sub(12);
        (self.purposes()[n..].to_vec(), self.events[e..].to_vec())
    }

    pub fn purposes(&self) -> Vec<Purpose> {
        self.sent.iter().map(|r| r.purpose).collect()
    }
}

/// A process (configured with `cfg`, seeded `seed`) holding the lock on `s3`.
pub fn holding_with(cfg: Config, s3: &mut MockS3, seed: u8) -> Process {
    let mut c = Process::new(cfg, seed);
    c.lock
        .acquire(c.now, 0, Wait::No)
        .expect("an idle lock takes an acquisition");
    c.run(s3, c.now);
    assert!(c.lock.is_held(c.now), "{:?}", c.timeline());
    c
}

/// S3's 503 SlowDown, as the core hears it.
pub fn slow_down() -> Response {
    Response::Ambiguous(Ambiguity::Status {
        status: 503,
        code: Some("SlowDown".into()),
    })
}

pub fn bucket() -> MockS3 {
    let mut s3 = MockS3::new();
    s3.create_bucket(B);
    s3
}

/// A bucket that answers `If-Match` on a missing key as `semantics` says (404 or 412).
pub fn bucket_answering(semantics: MissingKeyIfMatch) -> MockS3 {
    let mut s3 = MockS3::with_semantics(Semantics {
        missing_key_if_match: semantics,
        ..Semantics::default()
    });
    s3.create_bucket(B);
    s3
}

pub fn acquired_etag(events: &[Event]) -> ETag {
    events
        .iter()
        .find_map(|e| match e {
            Event::Acquired { etag, .. } => Some(etag.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("not acquired: {events:?}"))
}

/// Runs the client against `s3`, letting `fault` answer instead when it returns Some.
pub fn run_with(
    c: &mut Process,
    s3: &mut MockS3,
    until: Instant,
    fault: impl Fn(&Request) -> Option<Response>,
) -> usize {
    let mut sent = 0;
    for step in 0.. {
        assert!(
            step < MAX_STEPS,
            "still busy after {MAX_STEPS} steps: {:?}",
            c.timeline()
        );
        while let Some(req) = c.request() {
            sent += 1;
            // The reply table of the bucket's dialect (S3's `classify` by default).
            let response = fault(&req)
                .unwrap_or_else(|| s3.execute(B, K, &req.intent).classify(req.intent.kind()));
            c.answer(&req, response);
            assert!(
                sent < 500,
                "spinning: {:?}",
                c.purposes().iter().rev().take(6).collect::<Vec<_>>()
            );
        }
        match c.lock.poll_timeout() {
            Some(t) if t <= until => {
                c.now = c.now.max(t);
                c.lock.handle_timeout(c.now);
                c.collect();
            }
            _ => return sent,
        }
    }
    unreachable!("the step bound above ends the loop")
}

/// The store's clock at the processes' `Instant::ZERO`, in Unix milliseconds.
pub const EPOCH_MS: u64 = 1_796_205_600_000;

/// A bucket whose replies carry `Date` and `Last-Modified`.
pub fn clocked() -> MockS3 {
    let mut s3 = bucket();
    s3.set_time(EPOCH_MS);
    s3
}

/// Moves the store's clock to process time `now` (all processes here share one timeline).
pub fn tick_store(s3: &mut MockS3, now: Instant) {
    let ms = u64::try_from(now.since_origin().as_millis()).unwrap_or(u64::MAX);
    s3.set_time(EPOCH_MS + ms);
}

/// Runs `c` until `until` with the store's clock following it.
pub fn run_clocked(c: &mut Process, s3: &mut MockS3, until: Instant) {
    tick_store(s3, c.now);
    for step in 0.. {
        assert!(step < MAX_STEPS, "still busy: {:?}", c.timeline());
        while let Some(req) = c.request() {
            tick_store(s3, c.now);
            c.serve(s3, &req);
        }
        match c.lock.poll_timeout() {
            Some(t) if t <= until => {
                c.now = c.now.max(t);
                c.lock.handle_timeout(c.now);
                c.collect();
            }
            _ => break,
        }
    }
    c.now = c.now.max(until);
    tick_store(s3, c.now);
    c.lock.handle_timeout(c.now);
    c.collect();
    while let Some(req) = c.request() {
        c.serve(s3, &req);
    }
}

/// A process whose clock reads `now`.
pub fn process_at(cfg: Config, seed: u8, now: Instant) -> Process {
    let mut p = Process::new(cfg, seed);
    p.now = now;
    p
}
