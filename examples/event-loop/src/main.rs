//! Many locks, one thread: an event loop over the sans-IO core (`sets3lock-proto`) and the wire
//! layer (`sets3lock-wire`), with mio for readiness and HTTP/1.1 written by hand.
//!
//! It waits at once for three things: replies (socket readiness), the cores' timers and the
//! request time limits (the poll's timeout), and the user's commands (lines on standard input,
//! read by a helper thread that wakes the loop through a `mio::Waker`):
//!
//! ```text
//! acquire KEY [SECONDS]   take the lock KEY, waiting for it forever or SECONDS at most
//! release KEY             release it (or cancel its acquisition)
//! quit                    release everything, finish every lock's clean-up, exit
//! ```
//!
//! Each lock prints its events as lines (`KEY acquired token=-`, `KEY renewed`, `KEY
//! released`, `KEY cancelled`, ...). The store is S3 or S3-compatible at `AWS_ENDPOINT_URL`
//! (plain `http`), bucket given as the first argument, keys `AWS_ACCESS_KEY_ID` and
//! `AWS_SECRET_ACCESS_KEY`, `AWS_REGION` (default `us-east-1`); the lease in seconds is the
//! optional second argument, and the longest a request waits for its reply, in milliseconds,
//! the third (20 s by default; the core shortens it while a hold's time runs short).
//!
//! ```text
//! cargo run --manifest-path examples/event-loop/Cargo.toml -- my-bucket 10
//! ```
//!
//! docs/LIBRARY.md ("An event loop") walks through it.

#![forbid(unsafe_code)]

mod clock;
mod exchange;

use clock::Clock;
use core::time::Duration;
use exchange::{Exchange, Failure, Progress};
use mio::{Events, Interest, Poll, Token, Waker};
use sets3lock_proto::{
    Ambiguity, Config, Event, Instant, IntentKind, Lock, Request, RequestId, Response, Wait,
};
use sets3lock_wire::s3;
use std::collections::HashMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::mpsc;
use std::time::SystemTime;

/// The waker's token; lock `i` uses `Token(i + 1)`.
const COMMANDS: Token = Token(0);

/// How long a request may wait for its reply, at most, unless the third argument says (the
/// core shortens it while a hold's time runs short: `Lock::request_limit`).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

/// How long a presigned request stays valid.
const PRESIGN_EXPIRY: Duration = Duration::from_secs(15);

/// A user's command, from standard input.
enum Command {
    Acquire(String, Wait),
    Release(String),
    Quit,
}

/// A request on the wire, and what the core waits for.
struct InFlight {
    id: RequestId,
    kind: IntentKind,
    exchange: Exchange,
    /// When we give the request up and answer it `Ambiguous(Timeout)`.
    give_up_at: Instant,
}

/// One lock: its key, its core, its request in flight.
struct Slot {
    key: String,
    lock: Lock,
    in_flight: Option<InFlight>,
}

/// Where requests go and what signs them.
struct Store {
    bucket: s3::Bucket,
    keys: s3::Keys,
    addr: SocketAddr,
}

fn main() {
    if let Err(e) = run() {
        eprintln!("event-loop: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let bucket = args
        .next()
        .ok_or("usage: event-loop BUCKET [LEASE_SECONDS [REQUEST_TIMEOUT_MS]]")?;
    let number = |s: Option<String>| -> Result<Option<u64>, String> {
        s.map(|s| s.parse().map_err(|_| format!("{s:?} is not a number")))
            .transpose()
    };
    let lease = number(args.next())?.map_or(Config::default().lease, Duration::from_secs);
    let request_timeout = number(args.next())?.map_or(REQUEST_TIMEOUT, Duration::from_millis);
    let store = store(&bucket)?;
    let mut poll = Poll::new().map_err(|e| e.to_string())?;
    let waker = Waker::new(poll.registry(), COMMANDS).map_err(|e| e.to_string())?;
    let commands = read_commands(waker);
    let clock = Clock::new();
    let config = Config {
        lease,
        ..Config::default()
    };
    let mut slots: Vec<Slot> = Vec::new();
    let mut by_key: HashMap<String, usize> = HashMap::new();
    let mut quitting = false;
    let mut events = Events::with_capacity(64);
    println!("ready");
    loop {
        // Wait for a socket, a command, or the earliest timer (a core's, or a request's limit).
        let now = clock.now();
        let next = slots
            .iter()
            .flat_map(|s| {
                [
                    s.lock.poll_timeout(),
                    s.in_flight.as_ref().map(|f| f.give_up_at),
                ]
            })
            .flatten()
            .min();
        let timeout = next.map(|t| t.saturating_duration_since(now));
        match poll.poll(&mut events, timeout) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.to_string()),
        }
        let now = clock.now();
        for event in events.iter() {
            let token = event.token();
            if token == COMMANDS {
                for command in commands.try_iter() {
                    match command {
                        Command::Acquire(key, wait) => {
                            let i = *by_key.entry(key.clone()).or_insert_with(|| {
                                slots.push(Slot {
                                    key: key.clone(),
                                    lock: new_lock(&config),
                                    in_flight: None,
                                });
                                slots.len() - 1
                            });
                            let unix_ms = SystemTime::now()
                                .duration_since(SystemTime::UNIX_EPOCH)
                                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
                            if slots[i].lock.acquire(now, unix_ms, wait).is_err() {
                                println!("{key} busy");
                            }
                        }
                        Command::Release(key) => match by_key.get(&key) {
                            Some(&i) if slots[i].lock.release(now).is_ok() => {}
                            _ => println!("{key} not-held"),
                        },
                        Command::Quit => {
                            quitting = true;
                            for slot in &mut slots {
                                let _ = slot.lock.release(now);
                            }
                        }
                    }
                }
            } else if let Some(slot) = slots.get_mut(token.0 - 1) {
                advance(slot, poll.registry(), now);
            }
        }
        for (i, slot) in slots.iter_mut().enumerate() {
            // A request past its limit is given up: the core hears "no reply", and the socket
            // is dropped, so a reply that comes later is never read (never a second answer).
            if slot.in_flight.as_ref().is_some_and(|f| now >= f.give_up_at) {
                if let Some(mut f) = slot.in_flight.take() {
                    let _ = poll.registry().deregister(&mut f.exchange.stream);
                    slot.lock
                        .handle_response(f.id, Response::Ambiguous(Ambiguity::Timeout), now);
                }
            }
            if slot.lock.poll_timeout().is_some_and(|t| t <= now) {
                slot.lock.handle_timeout(now);
            }
            let sender = Sender {
                store: &store,
                registry: poll.registry(),
                clock: &clock,
                request_timeout,
            };
            drain(slot, Token(i + 1), &sender);
        }
        if quitting && slots.iter().all(|s| s.lock.is_idle()) {
            println!("bye");
            return Ok(());
        }
    }
}

/// A core seeded from the operating system's random source.
fn new_lock(config: &Config) -> Lock {
    let mut seed = [0u8; 32];
    if let Err(e) = getrandom::fill(&mut seed) {
        // No randomness, no owner ids that differ from another process's: stop.
        eprintln!("event-loop: no random seed: {e}");
        std::process::exit(1);
    }
    match Lock::new(config.clone(), seed) {
        Ok(lock) => lock,
        Err(e) => {
            eprintln!("event-loop: {e}");
            std::process::exit(1);
        }
    }
}

/// The socket of `slot`'s request was ready: write, read, and hand a finished exchange's
/// answer to the core.
fn advance(slot: &mut Slot, registry: &mio::Registry, now: Instant) {
    let Some(f) = slot.in_flight.as_mut() else {
        return; // a late event for a request already given up
    };
    let response = match f.exchange.advance() {
        Progress::Pending => return,
        Progress::Reply(reply) => s3::read(f.kind, &reply),
        Progress::Failed(Failure::NotSent(detail)) => {
            Response::Ambiguous(Ambiguity::NotSent { detail })
        }
        Progress::Failed(Failure::Broken(detail)) => {
            Response::Ambiguous(Ambiguity::Connection { detail })
        }
    };
    if let Some(mut f) = slot.in_flight.take() {
        let _ = registry.deregister(&mut f.exchange.stream);
        slot.lock.handle_response(f.id, response, now);
    }
}

/// What sending needs: the store, the poll's registry, the clock, the longest wait.
struct Sender<'a> {
    store: &'a Store,
    registry: &'a mio::Registry,
    clock: &'a Clock,
    request_timeout: Duration,
}

/// After an input: every request the core has goes out, every event is printed.
fn drain(slot: &mut Slot, token: Token, sender: &Sender<'_>) {
    loop {
        let mut progressed = false;
        if slot.in_flight.is_none() {
            if let Some(request) = slot.lock.poll_request() {
                progressed = true;
                send(slot, request, token, sender);
            }
        }
        while let Some(event) = slot.lock.poll_event() {
            progressed = true;
            print_event(&slot.key, &event);
        }
        if !progressed {
            return;
        }
    }
}

/// Builds `request` with the wire layer, signed now, and starts its exchange; a request that
/// cannot even start is answered at once.
fn send(slot: &mut Slot, request: Request, token: Token, sender: &Sender<'_>) {
    let now = sender.clock.now();
    let store = sender.store;
    let built = s3::request(
        &store.bucket,
        &store.keys,
        &slot.key,
        &request.intent,
        SystemTime::now(),
        PRESIGN_EXPIRY,
    );
    let started = built
        .map_err(|e| Failure::NotSent(e.to_string()))
        .and_then(|http| Exchange::start(store.addr, &http))
        .and_then(|mut exchange| {
            let interest = Interest::READABLE | Interest::WRITABLE;
            match sender
                .registry
                .register(&mut exchange.stream, token, interest)
            {
                Ok(()) => Ok(exchange),
                Err(e) => Err(Failure::NotSent(e.to_string())),
            }
        });
    let failure = match started {
        Ok(exchange) => {
            let limit = slot.lock.request_limit(sender.request_timeout, now);
            slot.in_flight = Some(InFlight {
                id: request.id,
                kind: request.intent.kind(),
                exchange,
                give_up_at: now + limit,
            });
            return;
        }
        Err(Failure::NotSent(detail)) => Ambiguity::NotSent { detail },
        Err(Failure::Broken(detail)) => Ambiguity::Connection { detail },
    };
    slot.lock
        .handle_response(request.id, Response::Ambiguous(failure), now);
}

fn print_event(key: &str, event: &Event) {
    match event {
        Event::Acquired { token, .. } => match token {
            Some(t) => println!("{key} acquired token={t}"),
            None => println!("{key} acquired token=-"),
        },
        Event::Contended { .. } => println!("{key} contended"),
        Event::NotAcquired { .. } => println!("{key} not-acquired"),
        Event::Renewed { .. } => println!("{key} renewed"),
        Event::RenewalDelayed { .. } => println!("{key} renewal-delayed"),
        Event::Lost { .. } => println!("{key} lost"),
        Event::Expired => println!("{key} expired"),
        Event::Released { .. } => println!("{key} released"),
        Event::Cancelled => println!("{key} cancelled"),
        Event::Failed { error } => println!("{key} failed: {error}"),
        other => println!("{key} {other:?}"),
    }
}

/// The S3 store from the environment (`AWS_ENDPOINT_URL` over plain http).
fn store(bucket: &str) -> Result<Store, String> {
    let var = |name: &str| std::env::var(name).map_err(|_| format!("set {name}"));
    let endpoint = var("AWS_ENDPOINT_URL")?;
    let region = std::env::var("AWS_REGION").unwrap_or_else(|_| "us-east-1".into());
    let keys = s3::Keys::new(&var("AWS_ACCESS_KEY_ID")?, &var("AWS_SECRET_ACCESS_KEY")?);
    let bucket = s3::Bucket::new(&endpoint, bucket, &region, true).map_err(|e| e.to_string())?;
    let uri: http::Uri = endpoint
        .parse()
        .map_err(|e| format!("AWS_ENDPOINT_URL: {e}"))?;
    if uri.scheme_str() != Some("http") {
        return Err("this example speaks plain http only (see src/exchange.rs for https)".into());
    }
    let host = uri.host().ok_or("AWS_ENDPOINT_URL has no host")?;
    let port = uri.port_u16().unwrap_or(80);
    let addr = (host.trim_start_matches('[').trim_end_matches(']'), port)
        .to_socket_addrs()
        .map_err(|e| format!("{host}: {e}"))?
        .next()
        .ok_or(format!("{host} has no address"))?;
    Ok(Store { bucket, keys, addr })
}

/// A thread that reads commands from standard input and wakes the loop for each.
fn read_commands(waker: Waker) -> mpsc::Receiver<Command> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lines() {
            let Ok(line) = line else { break };
            let words: Vec<&str> = line.split_whitespace().collect();
            let command = match words.as_slice() {
                ["acquire", key] => Command::Acquire((*key).to_owned(), Wait::Forever),
                ["acquire", key, secs] => match secs.parse::<u64>() {
                    Ok(0) => Command::Acquire((*key).to_owned(), Wait::No),
                    Ok(s) => {
                        Command::Acquire((*key).to_owned(), Wait::Timeout(Duration::from_secs(s)))
                    }
                    Err(_) => {
                        eprintln!("{secs:?} is not a number of seconds");
                        continue;
                    }
                },
                ["release", key] => Command::Release((*key).to_owned()),
                ["quit"] => Command::Quit,
                [] => continue,
                _ => {
                    eprintln!("commands: acquire KEY [SECONDS] | release KEY | quit");
                    continue;
                }
            };
            if tx.send(command).is_err() || waker.wake().is_err() {
                break;
            }
        }
        // End of input: as good as quit.
        let _ = tx.send(Command::Quit);
        let _ = waker.wake();
    });
    rx
}
