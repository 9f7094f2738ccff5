//! A TCP proxy that loses replies: the requests on chosen connections reach the server and
//! are applied, but the server's answer never reaches the client, which times out. The real
//! shape of a lost reply, for the real server and the mock alike. It also records what
//! clients send, as a proxy's log would: what a replay would start from.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub struct LossyProxy {
    pub endpoint: String,
    drop_on: Arc<Mutex<BTreeSet<usize>>>,
    accepted: Arc<AtomicUsize>,
    blackout: Arc<AtomicBool>,
    /// Every byte clients sent, by connection.
    sent: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl LossyProxy {
    /// Forwards a free loopback port to `upstream` (`http://host:port`).
    pub fn start(upstream: &str) -> LossyProxy {
        let upstream = upstream
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_owned();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let endpoint = format!("http://{}", listener.local_addr().expect("addr"));
        let drop_on = Arc::new(Mutex::new(BTreeSet::new()));
        let accepted = Arc::new(AtomicUsize::new(0));
        let blackout = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(Mutex::new(Vec::new()));
        let (d, a, b, rec) = (
            drop_on.clone(),
            accepted.clone(),
            blackout.clone(),
            sent.clone(),
        );
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("rt");
            rt.block_on(async move {
                let listener = TcpListener::from_std(listener).expect("listener");
                loop {
                    let Ok((client, _)) = listener.accept().await else {
                        continue;
                    };
                    let n = a.fetch_add(1, Ordering::SeqCst) + 1;
                    let lose = d.lock().map(|s| s.contains(&n)).unwrap_or(false);
                    let upstream = upstream.clone();
                    let b = b.clone();
                    let rec = rec.clone();
                    tokio::spawn(async move {
                        let Ok(server) = TcpStream::connect(&upstream).await else {
                            return;
                        };
                        let (mut cr, mut cw) = client.into_split();
                        let (mut sr, mut sw) = server.into_split();
                        let up = tokio::spawn(async move {
                            let slot = {
                                let mut r = rec.lock().unwrap_or_else(|e| e.into_inner());
                                r.push(Vec::new());
                                r.len() - 1
                            };
                            let mut buf = vec![0u8; 16 * 1024];
                            while let Ok(n @ 1..) = cr.read(&mut buf).await {
                                rec.lock().unwrap_or_else(|e| e.into_inner())[slot]
                                    .extend_from_slice(&buf[..n]);
                                if sw.write_all(&buf[..n]).await.is_err() {
                                    break;
                                }
                            }
                        });
                        if lose {
                            // Swallow the answer; keep the client waiting until it gives up.
                            let mut sink = vec![0u8; 4096];
                            while matches!(sr.read(&mut sink).await, Ok(n) if n > 0) {}
                            let _ = up.await;
                        } else {
                            // Forward the answers, unless a blackout has begun.
                            let mut buf = vec![0u8; 16 * 1024];
                            loop {
                                match sr.read(&mut buf).await {
                                    Ok(n) if n > 0 => {
                                        if !b.load(Ordering::SeqCst)
                                            && cw.write_all(&buf[..n]).await.is_err()
                                        {
                                            break;
                                        }
                                    }
                                    _ => break,
                                }
                            }
                            let _ = cw.shutdown().await;
                            up.abort();
                        }
                    });
                }
            });
        });
        LossyProxy {
            endpoint,
            drop_on,
            accepted,
            blackout,
            sent,
        }
    }

    /// The requests clients have sent so far, in order within each connection.
    pub fn requests(&self) -> Vec<super::http1::Message> {
        let sent = self.sent.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("rt");
        let mut out = Vec::new();
        for bytes in sent {
            let mut reader = &bytes[..];
            while let Some(m) = rt.block_on(super::http1::read(&mut reader)) {
                out.push(m);
            }
        }
        out
    }

    /// From now on every reply, on every connection, is lost (the server still applies the
    /// requests): a network that fails while a lock is held.
    pub fn blackout(&self) {
        self.blackout.store(true, Ordering::SeqCst);
    }

    /// Replies get through again (connections made during the blackout stay dark).
    pub fn restore(&self) {
        self.blackout.store(false, Ordering::SeqCst);
    }

    /// Loses every reply on the `n`th connection from now (1 = the next one).
    pub fn lose_replies_on_connection(&self, n: usize) {
        let base = self.accepted.load(Ordering::SeqCst);
        if let Ok(mut s) = self.drop_on.lock() {
            s.insert(base + n);
        }
    }
}
