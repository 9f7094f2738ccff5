//! A TCP proxy whose replies can be cut off: after `blackout()`, requests still reach the
//! server (and are applied) but no answer comes back, so the client times out. The shape of
//! a network that fails while a lock is held.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub struct BlackoutProxy {
    /// `http://127.0.0.1:PORT`, to give the command as its endpoint.
    pub endpoint: String,
    dark: Arc<AtomicBool>,
}

impl BlackoutProxy {
    /// Forwards a free loopback port to `upstream` (`http://host:port`).
    pub fn start(upstream: &str) -> BlackoutProxy {
        let upstream = upstream
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let endpoint = format!("http://{}", listener.local_addr().expect("addr"));
        let dark = Arc::new(AtomicBool::new(false));
        let is_dark = dark.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let (Ok(client), Ok(server)) = (client, TcpStream::connect(&upstream)) else {
                    continue;
                };
                let (Ok(client_in), Ok(server_out)) = (client.try_clone(), server.try_clone())
                else {
                    continue;
                };
                std::thread::spawn(move || pipe(client_in, server_out, None));
                let is_dark = is_dark.clone();
                std::thread::spawn(move || pipe(server, client, Some(is_dark)));
            }
        });
        BlackoutProxy { endpoint, dark }
    }

    /// From now on every reply, on every connection, is lost.
    pub fn blackout(&self) {
        self.dark.store(true, Ordering::SeqCst);
    }
}

/// Copies `from` to `to` until either end closes; while `dark` is set, the bytes are dropped.
fn pipe(mut from: TcpStream, mut to: TcpStream, dark: Option<Arc<AtomicBool>>) {
    let mut buf = [0u8; 16 * 1024];
    while let Ok(n @ 1..) = from.read(&mut buf) {
        let dropped = dark.as_ref().is_some_and(|d| d.load(Ordering::SeqCst));
        if !dropped && to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}
