//! A TCP proxy that faults on command, the shape of a network or store in trouble while a
//! lock is held:
//! - `blackout()`: requests still reach the server (and are applied) but no answer comes
//!   back, so the client waits until it gives up;
//! - `fail(status)`: every request is answered at once with `status` (503, 429) and not
//!   forwarded, its connection closed;
//! - `restore()`: back to passing everything through;
//! - `fault(Plan)`: the next few requests whose request line matches are answered
//!   `503 SlowDown` as S3 answers simultaneous PUTs to one key, or forwarded with their reply
//!   lost; everything else passes.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// What the proxy does to the traffic now.
const PASS: u16 = 0;
const DARK: u16 = 1;

pub struct FaultProxy {
    /// `http://127.0.0.1:PORT`, to give the command as its endpoint.
    pub endpoint: String,
    mode: Arc<AtomicU16>,
    plan: Arc<Mutex<Option<Plan>>>,
    faulted: Arc<AtomicUsize>,
}

/// What happens to a request the plan picks.
#[derive(Clone, Copy, Debug)]
pub enum Fate {
    /// Answered `503 SlowDown` (S3's XML error) and not forwarded: not applied.
    SlowDown,
    /// Forwarded (and applied), but its reply is dropped and the connection closed.
    LoseReply,
}

/// The next `count` requests whose method is `method` and whose request line holds `path`.
#[derive(Clone, Debug)]
pub struct Plan {
    pub method: &'static str,
    pub path: String,
    pub count: usize,
    pub fate: Fate,
}

/// What the connections share: the mode, the plan, and how many requests it faulted.
#[derive(Clone)]
struct Shared {
    mode: Arc<AtomicU16>,
    plan: Arc<Mutex<Option<Plan>>>,
    faulted: Arc<AtomicUsize>,
}

impl FaultProxy {
    /// Forwards a free loopback port to `upstream` (`http://host:port`).
    pub fn start(upstream: &str) -> FaultProxy {
        FaultProxy::holding_first(upstream, std::time::Duration::ZERO)
    }

    /// The same, but the first connection's traffic waits `hold` before it is forwarded (a
    /// service slow to give its first answer, as instance metadata can be on a new VM).
    pub fn holding_first(upstream: &str, hold: std::time::Duration) -> FaultProxy {
        let upstream = upstream
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let endpoint = format!("http://{}", listener.local_addr().expect("addr"));
        let shared = Shared {
            mode: Arc::new(AtomicU16::new(PASS)),
            plan: Arc::new(Mutex::new(None)),
            faulted: Arc::new(AtomicUsize::new(0)),
        };
        let proxy = FaultProxy {
            endpoint,
            mode: shared.mode.clone(),
            plan: shared.plan.clone(),
            faulted: shared.faulted.clone(),
        };
        std::thread::spawn(move || {
            for (n, client) in listener.incoming().enumerate() {
                let (Ok(client), Ok(server)) = (client, TcpStream::connect(&upstream)) else {
                    continue;
                };
                if n == 0 && !hold.is_zero() {
                    let shared = shared.clone();
                    std::thread::spawn(move || {
                        std::thread::sleep(hold);
                        forward(client, server, shared);
                    });
                    continue;
                }
                forward(client, server, shared.clone());
            }
        });
        proxy
    }

    /// From now on the requests `plan` picks meet its fate.
    pub fn fault(&self, plan: Plan) {
        *self.plan.lock().expect("the plan") = Some(plan);
    }

    /// How many requests a plan has faulted so far.
    pub fn faulted(&self) -> usize {
        self.faulted.load(Ordering::SeqCst)
    }

    /// From now on every reply, on every connection, is lost.
    pub fn blackout(&self) {
        self.mode.store(DARK, Ordering::SeqCst);
    }

    /// From now on every request is answered with `status` and goes no further.
    pub fn fail(&self, status: u16) {
        assert!(status >= 400, "a failure status");
        self.mode.store(status, Ordering::SeqCst);
    }

    /// Everything passes through again.
    pub fn restore(&self) {
        self.mode.store(PASS, Ordering::SeqCst);
    }
}

/// Forwards one connection both ways, as the proxy's mode and plan say.
fn forward(client: TcpStream, server: TcpStream, shared: Shared) {
    let (Ok(client_in), Ok(server_out)) = (client.try_clone(), server.try_clone()) else {
        return;
    };
    let Ok(client_reply) = client.try_clone() else {
        return;
    };
    let lost = Arc::new(AtomicBool::new(false));
    let (to_server, lose) = (shared.clone(), lost.clone());
    std::thread::spawn(move || requests(client_in, server_out, client_reply, to_server, lose));
    std::thread::spawn(move || replies(server, client, shared.mode, lost));
}

/// The fate of a request whose first bytes are `chunk`, if the plan picks it.
fn picked(chunk: &[u8], shared: &Shared) -> Option<Fate> {
    let mut plan = shared.plan.lock().ok()?;
    let p = plan.as_mut()?;
    let line = chunk.split(|&b| b == b'\r').next()?;
    let line = String::from_utf8_lossy(line);
    let fits = line.starts_with(&format!("{} ", p.method)) && line.contains(&p.path);
    if !fits || p.count == 0 {
        return None;
    }
    p.count -= 1;
    shared.faulted.fetch_add(1, Ordering::SeqCst);
    Some(p.fate)
}

/// Client to server: forwarded, unless the proxy fails requests (or the plan throttles this
/// one), when the client gets the failure and the connection is closed.
fn requests(
    mut from: TcpStream,
    mut to: TcpStream,
    mut reply: TcpStream,
    shared: Shared,
    lost: Arc<AtomicBool>,
) {
    let mut buf = [0u8; 16 * 1024];
    while let Ok(n @ 1..) = from.read(&mut buf) {
        let status = shared.mode.load(Ordering::SeqCst);
        let answer = match picked(&buf[..n], &shared) {
            Some(Fate::SlowDown) => Some(slow_down()),
            Some(Fate::LoseReply) => {
                lost.store(true, Ordering::SeqCst);
                None
            }
            None if status > DARK => Some(format!(
                "HTTP/1.1 {status} Injected\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            )),
            None => None,
        };
        if let Some(answer) = answer {
            let _ = reply.write_all(answer.as_bytes());
            let _ = reply.shutdown(Shutdown::Both);
            break;
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

/// S3's answer to too many requests at once (to one key, or to a prefix).
fn slow_down() -> String {
    let body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>";
    format!(
        "HTTP/1.1 503 Slow Down\r\ncontent-type: application/xml\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// Server to client: forwarded, unless the proxy is dark, when the bytes are dropped, or this
/// connection's reply is to be lost, when the connection is closed instead.
fn replies(mut from: TcpStream, mut to: TcpStream, mode: Arc<AtomicU16>, lost: Arc<AtomicBool>) {
    let mut buf = [0u8; 16 * 1024];
    while let Ok(n @ 1..) = from.read(&mut buf) {
        if lost.load(Ordering::SeqCst) {
            let _ = to.shutdown(Shutdown::Both);
            break;
        }
        let dropped = mode.load(Ordering::SeqCst) == DARK;
        if !dropped && to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}
