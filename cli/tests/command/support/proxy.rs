//! A TCP proxy that faults on command, the shape of a network or store in trouble while a
//! lock is held:
//! - `blackout()`: requests still reach the server (and are applied) but no answer comes
//!   back, so the client waits until it gives up;
//! - `fail(status)`: every request is answered at once with `status` (503, 429) and not
//!   forwarded, its connection closed;
//! - `restore()`: back to passing everything through.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::Arc;

/// What the proxy does to the traffic now.
const PASS: u16 = 0;
const DARK: u16 = 1;

pub struct FaultProxy {
    /// `http://127.0.0.1:PORT`, to give the command as its endpoint.
    pub endpoint: String,
    mode: Arc<AtomicU16>,
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
        let mode = Arc::new(AtomicU16::new(PASS));
        let shared = mode.clone();
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
        FaultProxy { endpoint, mode }
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

/// Forwards one connection both ways, as the proxy's mode says.
fn forward(client: TcpStream, server: TcpStream, mode: Arc<AtomicU16>) {
    let (Ok(client_in), Ok(server_out)) = (client.try_clone(), server.try_clone()) else {
        return;
    };
    let Ok(client_reply) = client.try_clone() else {
        return;
    };
    let to_server = mode.clone();
    std::thread::spawn(move || requests(client_in, server_out, client_reply, to_server));
    std::thread::spawn(move || replies(server, client, mode));
}

/// Client to server: forwarded, unless the proxy fails requests, when the client gets the
/// failure and the connection is closed.
fn requests(mut from: TcpStream, mut to: TcpStream, mut reply: TcpStream, mode: Arc<AtomicU16>) {
    let mut buf = [0u8; 16 * 1024];
    while let Ok(n @ 1..) = from.read(&mut buf) {
        let status = mode.load(Ordering::SeqCst);
        if status > DARK {
            let answer = format!(
                "HTTP/1.1 {status} Injected\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            );
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

/// Server to client: forwarded, unless the proxy is dark, when the bytes are dropped.
fn replies(mut from: TcpStream, mut to: TcpStream, mode: Arc<AtomicU16>) {
    let mut buf = [0u8; 16 * 1024];
    while let Ok(n @ 1..) = from.read(&mut buf) {
        let dropped = mode.load(Ordering::SeqCst) == DARK;
        if !dropped && to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}
