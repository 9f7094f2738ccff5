//! A token service on loopback for the credential chains' tests: answers each request with
//! what the test's function says, records every request, and can go down (503) on demand.

use std::io::{BufRead, BufReader, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// One request as it came.
#[derive(Clone, Debug)]
pub struct Asked {
    pub method: String,
    /// The path and query.
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Asked {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

type Answer = dyn Fn(&Asked, usize) -> (u16, String) + Send + Sync;

pub struct TokenService {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    asked: Arc<Mutex<Vec<Asked>>>,
    down: Arc<AtomicBool>,
}

impl TokenService {
    /// Serves `answer(request, how many came before it)` as (status, JSON or text body).
    pub fn start(
        answer: impl Fn(&Asked, usize) -> (u16, String) + Send + Sync + 'static,
    ) -> TokenService {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let asked = Arc::new(Mutex::new(Vec::new()));
        let down = Arc::new(AtomicBool::new(false));
        let (log, off) = (asked.clone(), down.clone());
        let answer: Arc<Answer> = Arc::new(answer);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (log, off, answer) = (log.clone(), off.clone(), answer.clone());
                std::thread::spawn(move || serve(stream, &log, &off, answer.as_ref()));
            }
        });
        TokenService { url, asked, down }
    }

    /// Every request so far.
    pub fn asked(&self) -> Vec<Asked> {
        self.asked.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// From now on every request gets 503.
    pub fn go_down(&self) {
        self.down.store(true, Ordering::SeqCst);
    }
}

fn serve(stream: std::net::TcpStream, log: &Mutex<Vec<Asked>>, down: &AtomicBool, answer: &Answer) {
    let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(5)));
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let mut start = String::new();
    if reader.read_line(&mut start).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = start.split_whitespace();
    let (method, target) = (
        parts.next().unwrap_or("").to_owned(),
        parts.next().unwrap_or("").to_owned(),
    );
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((n, v)) = line.split_once(':') {
            headers.push((n.trim().to_owned(), v.trim().to_owned()));
        }
    }
    let length: usize = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length.min(1 << 20)];
    let _ = reader.read_exact(&mut body);
    let asked = Asked {
        method,
        target,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    };
    let (status, text) = if down.load(Ordering::SeqCst) {
        (503, "down".to_owned())
    } else {
        let mut log = log.lock().unwrap_or_else(|e| e.into_inner());
        let n = log.len();
        log.push(asked.clone());
        drop(log);
        answer(&asked, n)
    };
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
        text.len()
    );
}

/// An RFC 3339 time `secs` from now.
pub fn in_secs(secs: i64) -> String {
    (jiff::Timestamp::now() + jiff::SignedDuration::from_secs(secs))
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}
