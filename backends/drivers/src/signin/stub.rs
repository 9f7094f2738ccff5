//! Tests only: a token service on loopback that answers each request as a test says and
//! keeps what it was sent. Bounded: it stops when dropped, or after a minute at most.
// Each cloud's tests use a part of it: with one store's feature, the rest goes unused.
#![cfg_attr(not(all(feature = "azure", feature = "gcs")), allow(dead_code))]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use url::Url;

/// One request as the stub saw it.
#[derive(Clone, Debug)]
pub(crate) struct Seen {
    pub(crate) method: String,
    /// The path and query.
    pub(crate) target: String,
    /// Names in lower case.
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: String,
}

impl Seen {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body's form fields.
    pub(crate) fn form(&self) -> Vec<(String, String)> {
        url::form_urlencoded::parse(self.body.as_bytes())
            .into_owned()
            .collect()
    }

    pub(crate) fn field(&self, name: &str) -> Option<String> {
        self.form()
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
    }

    /// The target's query parameters.
    pub(crate) fn query(&self, name: &str) -> Option<String> {
        let url = Url::parse(&format!("http://x{}", self.target)).ok()?;
        url.query_pairs()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.into_owned())
    }
}

type Answerer = dyn Fn(&Seen) -> (u16, String) + Send + Sync;

/// A running stub.
pub(crate) struct Stub {
    /// `http://127.0.0.1:PORT/`.
    pub(crate) url: Url,
    seen: Arc<Mutex<Vec<Seen>>>,
    stop: Arc<AtomicBool>,
}

impl Stub {
    /// A stub answering each request with `answer`'s status and JSON body.
    pub(crate) fn start(answer: impl Fn(&Seen) -> (u16, String) + Send + Sync + 'static) -> Stub {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let url =
            Url::parse(&format!("http://{}/", listener.local_addr().expect("addr"))).expect("url");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (seen2, stop2) = (seen.clone(), stop.clone());
        let answer: Arc<Answerer> = Arc::new(answer);
        std::thread::spawn(move || {
            let until = Instant::now() + Duration::from_secs(60);
            while !stop2.load(Ordering::SeqCst) && Instant::now() < until {
                match listener.accept() {
                    Ok((stream, _)) => serve(stream, &seen2, answer.as_ref()),
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Stub { url, seen, stop }
    }

    /// `http://127.0.0.1:PORT` (no slash), as a host variable takes it.
    pub(crate) fn origin(&self) -> String {
        self.url.origin().ascii_serialization()
    }

    /// `127.0.0.1:PORT`.
    pub(crate) fn host_port(&self) -> String {
        format!(
            "{}:{}",
            self.url.host_str().unwrap_or(""),
            self.url.port().unwrap_or(0)
        )
    }

    /// The requests seen so far.
    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("seen").clone()
    }
}

impl Drop for Stub {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn serve(mut stream: TcpStream, seen: &Mutex<Vec<Seen>>, answer: &Answerer) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut bytes = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => bytes.extend_from_slice(&buf[..n]),
        }
    };
    let head = String::from_utf8_lossy(&bytes[..head_end]).into_owned();
    let mut lines = head.lines();
    let first: Vec<&str> = lines.next().unwrap_or("").split(' ').collect();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    while bytes.len() < head_end + length {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => bytes.extend_from_slice(&buf[..n]),
        }
    }
    let request = Seen {
        method: first.first().copied().unwrap_or("").to_owned(),
        target: first.get(1).copied().unwrap_or("").to_owned(),
        headers,
        body: String::from_utf8_lossy(&bytes[head_end.min(bytes.len())..]).into_owned(),
    };
    let (status, body) = answer(&request);
    seen.lock().expect("seen").push(request);
    let _ = write!(
        stream,
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
}
