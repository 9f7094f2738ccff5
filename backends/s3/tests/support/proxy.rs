//! A TCP proxy that loses replies: the requests on chosen connections reach the server and
//! are applied, but the server's answer never reaches the client, which times out. The real
//! shape of a lost reply, for the real server and the mock alike.

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
        let (d, a, b) = (drop_on.clone(), accepted.clone(), blackout.clone());
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
                    tokio::spawn(async move {
                        let Ok(server) = TcpStream::connect(&upstream).await else {
                            return;
                        };
                        let (mut cr, mut cw) = client.into_split();
                        let (mut sr, mut sw) = server.into_split();
                        let up = tokio::spawn(async move {
                            let _ = tokio::io::copy(&mut cr, &mut sw).await;
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
        }
    }

    /// From now on every reply, on every connection, is lost (the server still applies the
    /// requests): a network that fails while a lock is held.
    pub fn blackout(&self) {
        self.blackout.store(true, Ordering::SeqCst);
    }

    /// Loses every reply on the `n`th connection from now (1 = the next one).
    pub fn lose_replies_on_connection(&self, n: usize) {
        let base = self.accepted.load(Ordering::SeqCst);
        if let Ok(mut s) = self.drop_on.lock() {
            s.insert(base + n);
        }
    }
}
