//! The mock S3 behind a real HTTP port, so that the drivers run the conformance suite against
//! it exactly as against a real server. It checks the access key and the SigV4 presigned
//! signature (by signing the same request again with rusty-s3), then applies the request to
//! a [`MockS3`] with its exact conditional semantics. Like SeaweedFS, MiniStack and AWS, it
//! refuses an expired presigned request (`403 AccessDenied` "Request has expired", by its own
//! clock, which a test may set off this machine's), checks a `Content-MD5` against the body
//! (`400 BadDigest`), and dates every reply.

use super::http1;
use rusty_s3::actions::S3Action;
use rusty_s3::{Bucket, Credentials, UrlStyle};
use sets3lock::proto::{ETag, Intent};
use sets3lock_mock::{Dialect, MockS3, Reply, Semantics};

#[path = "mock_other_store.rs"]
mod other_store;
#[allow(unused_imports)] // the benches include this file and use neither
pub use other_store::{ACCOUNT as AZURE_ACCOUNT, KEY as AZURE_KEY};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

pub struct MockServer {
    pub endpoint: String,
    pub access_key: String,
    pub secret: String,
    pub store: Arc<Mutex<MockS3>>,
    /// The server's clock, in milliseconds after this machine's (negative: behind).
    pub clock_offset_ms: Arc<AtomicI64>,
    /// Whether replies carry a `Date` header (every real server's do).
    pub dated: Arc<AtomicBool>,
    /// How far the `Date` header is from the server's own clock (a server that lies: 0 for
    /// every real one).
    pub date_skew_ms: Arc<AtomicI64>,
    /// Requests handled so far.
    pub requests: Arc<AtomicU64>,
    /// The next this many writes (PUT, POST, DELETE) are answered 429, not applied: GCS's
    /// one-write-per-second limit (or a throttling S3 or Azure).
    pub throttle_writes: Arc<AtomicU64>,
    /// When each write arrived, in order.
    pub writes_at: Arc<Mutex<Vec<std::time::Instant>>>,
}

impl MockServer {
    /// Starts a server on a free loopback port, on its own thread, with one bucket.
    pub fn start(semantics: Semantics, bucket: &str) -> MockServer {
        let mut s3 = MockS3::with_semantics(semantics);
        s3.create_bucket(bucket);
        let store = Arc::new(Mutex::new(s3));
        let (access_key, secret) = ("MOCKKEY".to_string(), "mock-secret".to_string());
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        std_listener.set_nonblocking(true).expect("nonblocking");
        let endpoint = format!("http://{}", std_listener.local_addr().expect("addr"));
        let clock_offset_ms = Arc::new(AtomicI64::new(0));
        let dated = Arc::new(AtomicBool::new(true));
        let date_skew_ms = Arc::new(AtomicI64::new(0));
        let requests = Arc::new(AtomicU64::new(0));
        let throttle_writes = Arc::new(AtomicU64::new(0));
        let writes_at = Arc::new(Mutex::new(Vec::new()));
        let (throttle, writes) = (throttle_writes.clone(), writes_at.clone());
        let (st, key, sec, ep, off, dat) = (
            store.clone(),
            access_key.clone(),
            secret.clone(),
            endpoint.clone(),
            clock_offset_ms.clone(),
            dated.clone(),
        );
        let (skew, count) = (date_skew_ms.clone(), requests.clone());
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("rt");
            rt.block_on(async move {
                let listener = TcpListener::from_std(std_listener).expect("listener");
                loop {
                    let Ok((socket, _)) = listener.accept().await else {
                        continue;
                    };
                    let (st, key, sec, ep) = (st.clone(), key.clone(), sec.clone(), ep.clone());
                    let (off, dat) = (off.clone(), dat.clone());
                    let (skew, count) = (skew.clone(), count.clone());
                    let (throttle, writes) = (throttle.clone(), writes.clone());
                    tokio::spawn(async move {
                        let (read, mut write) = socket.into_split();
                        let mut reader = BufReader::new(read);
                        while let Some(req) = http1::read(&mut reader).await {
                            count.fetch_add(1, Ordering::SeqCst);
                            let now = server_now(&off);
                            let is_write = !req.start.starts_with("GET ");
                            if is_write {
                                writes
                                    .lock()
                                    .unwrap_or_else(|e| e.into_inner())
                                    .push(std::time::Instant::now());
                            }
                            let throttled = is_write
                                && throttle
                                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                                        n.checked_sub(1)
                                    })
                                    .is_ok();
                            let mut reply = if throttled {
                                throttled_reply(&st)
                            } else {
                                handle(&req, &st, &key, &sec, &ep, now)
                            };
                            let dated = now
                                + jiff::SignedDuration::from_millis(skew.load(Ordering::Relaxed));
                            let date = jiff::fmt::rfc2822::DateTimePrinter::new()
                                .timestamp_to_rfc9110_string(&dated)
                                .expect("a printable date");
                            if dat.load(Ordering::Relaxed) {
                                reply.headers.insert(
                                    http::header::DATE,
                                    http::HeaderValue::from_str(&date).expect("a header value"),
                                );
                            }
                            let mut out = format!(
                                "HTTP/1.1 {} {}\r\n",
                                reply.status.as_u16(),
                                reply.status.canonical_reason().unwrap_or("")
                            );
                            for (n, v) in &reply.headers {
                                out.push_str(&format!("{}: {}\r\n", n, v.to_str().unwrap_or("")));
                            }
                            out.push_str(&format!("content-length: {}\r\n\r\n", reply.body.len()));
                            let mut bytes = out.into_bytes();
                            bytes.extend_from_slice(&reply.body);
                            if write.write_all(&bytes).await.is_err() {
                                break;
                            }
                        }
                    });
                }
            });
        });
        MockServer {
            endpoint,
            access_key,
            secret,
            store,
            clock_offset_ms,
            dated,
            date_skew_ms,
            requests,
            throttle_writes,
            writes_at,
        }
    }

    /// From now on the `Date` header says the server's time plus `skew_ms`.
    pub fn lie_in_date(&self, skew_ms: i64) {
        self.date_skew_ms.store(skew_ms, Ordering::Relaxed);
    }

    /// Whether replies carry a `Date` header from now on.
    pub fn send_date(&self, on: bool) {
        self.dated.store(on, Ordering::Relaxed);
    }

    /// Sets the server's clock `offset_ms` after this machine's.
    pub fn set_clock_offset(&self, offset_ms: i64) {
        self.clock_offset_ms.store(offset_ms, Ordering::Relaxed);
    }
}

/// A 429 in the store's own words, the write not applied.
fn throttled_reply(store: &Mutex<MockS3>) -> Reply {
    let dialect = store
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .semantics()
        .dialect;
    let status = http::StatusCode::TOO_MANY_REQUESTS;
    match dialect {
        Dialect::Gcs => Reply::gcs_error_saying(
            status,
            "rateLimitExceeded",
            "The object exceeded the rate limit for object mutation operations (create, update, and delete).",
        ),
        Dialect::Azure => Reply::azure_error(status, "ServerBusy"),
        _ => Reply::error(status, "SlowDown"),
    }
}

fn server_now(offset_ms: &AtomicI64) -> jiff::Timestamp {
    let offset = jiff::SignedDuration::from_millis(offset_ms.load(Ordering::Relaxed));
    jiff::Timestamp::now() + offset
}

fn handle(
    req: &http1::Message,
    store: &Mutex<MockS3>,
    key: &str,
    secret: &str,
    endpoint: &str,
    now: jiff::Timestamp,
) -> Reply {
    let dialect = store
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .semantics()
        .dialect;
    match dialect {
        Dialect::Azure => return other_store::azure(req, store, endpoint, now),
        Dialect::Gcs => return other_store::gcs(req, store, endpoint),
        _ => {}
    }
    let mut parts = req.start.split(' ');
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or("/"));
    let Ok(url) = url::Url::parse(&format!("{endpoint}{target}")) else {
        return Reply::error(http::StatusCode::BAD_REQUEST, "InvalidURI");
    };
    let query = |name: &str| {
        url.query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    };
    let path: Vec<String> = url
        .path_segments()
        .map(|s| s.map(percent_encoding_decode).collect())
        .unwrap_or_default();
    let (bucket, object) = (
        path.first().cloned().unwrap_or_default(),
        path[1.min(path.len())..].join("/"),
    );

    // Authentication: the access key, then the signature, recomputed.
    let credential = query("X-Amz-Credential").unwrap_or_default();
    let mut scope = credential.split('/');
    if scope.next() != Some(key) {
        return Reply::error(http::StatusCode::FORBIDDEN, "InvalidAccessKeyId");
    }
    let _date = scope.next();
    let region = scope.next().unwrap_or("us-east-1").to_owned();
    let signed: Vec<String> = query("X-Amz-SignedHeaders")
        .unwrap_or_default()
        .split(';')
        .map(str::to_owned)
        .collect();
    let Some(time) = query("X-Amz-Date")
        .and_then(|d| jiff::fmt::strtime::parse("%Y%m%dT%H%M%SZ", &d).ok())
        .and_then(|t| t.to_datetime().ok())
        .and_then(|dt| dt.to_zoned(jiff::tz::TimeZone::UTC).ok())
        .map(|z| z.timestamp())
    else {
        return Reply::error(http::StatusCode::FORBIDDEN, "AccessDenied");
    };
    let expires = query("X-Amz-Expires")
        .and_then(|e| e.parse().ok())
        .unwrap_or(0u64);
    // Sign for the Host the client sent (a proxy in between changes it), as S3 does.
    let host = req
        .header("host")
        .map(|h| format!("http://{h}"))
        .unwrap_or_else(|| endpoint.to_owned());
    let Ok(base) = url::Url::parse(&host) else {
        return Reply::error(http::StatusCode::BAD_REQUEST, "InvalidHost");
    };
    let Ok(b) = Bucket::new(base, UrlStyle::Path, bucket.clone(), region) else {
        return Reply::error(http::StatusCode::BAD_REQUEST, "InvalidBucketName");
    };
    // Temporary credentials sign their session token too.
    let creds = match query("X-Amz-Security-Token") {
        Some(token) => Credentials::new_with_token(key, secret, token),
        None => Credentials::new(key, secret),
    };
    let header_values: Vec<(String, String)> = signed
        .iter()
        .filter(|h| *h != "host")
        .map(|h| (h.clone(), req.header(h).unwrap_or("").to_owned()))
        .collect();
    let resigned = {
        macro_rules! sign {
            ($action:expr) => {{
                let mut a = $action;
                for (n, v) in &header_values {
                    a.headers_mut().insert(n.clone(), v.clone());
                }
                a.sign_with_time(Duration::from_secs(expires), &time)
            }};
        }
        match method {
            "PUT" => sign!(b.put_object(Some(&creds), &object)),
            "DELETE" => sign!(b.delete_object(Some(&creds), &object)),
            "GET" => sign!(b.get_object(Some(&creds), &object)),
            _ => return Reply::error(http::StatusCode::METHOD_NOT_ALLOWED, "MethodNotAllowed"),
        }
    };
    let theirs = query("X-Amz-Signature");
    let ours = resigned
        .query_pairs()
        .find(|(k, _)| k == "X-Amz-Signature")
        .map(|(_, v)| v.into_owned());
    if theirs.is_none() || theirs != ours {
        return Reply::error(http::StatusCode::FORBIDDEN, "SignatureDoesNotMatch");
    }
    let expiry = jiff::SignedDuration::from_secs(i64::try_from(expires).unwrap_or(i64::MAX));
    if now > time.saturating_add(expiry).unwrap_or(time) {
        return Reply::error_saying(
            http::StatusCode::FORBIDDEN,
            "AccessDenied",
            "Request has expired",
        );
    }
    if let Some(md5) = req.header("content-md5") {
        use base64::Engine as _;
        use md5::Digest as _;
        let actual = base64::engine::general_purpose::STANDARD.encode(md5::Md5::digest(&req.body));
        if md5 != actual {
            return Reply::error_saying(
                http::StatusCode::BAD_REQUEST,
                "BadDigest",
                "The Content-MD5 you specified did not match what we received.",
            );
        }
    }

    let etag = |name: &str| req.header(name).and_then(|v| ETag::parse(v).ok());
    let mut s3 = store.lock().unwrap_or_else(|e| e.into_inner());
    let body = bytes::Bytes::from(req.body.clone());
    let intent = match (method, req.header("if-none-match"), etag("if-match")) {
        ("PUT", Some("*"), _) => Intent::PutIfNoneMatch { body },
        ("PUT", None, Some(etag)) => Intent::PutIfMatch { etag, body },
        ("PUT", None, None) | ("DELETE", _, None) => {
            // Unconditional: what operators (and the tests' tampering) do.
            if !s3.has_bucket(&bucket) {
                return Reply::error(http::StatusCode::NOT_FOUND, "NoSuchBucket");
            }
            if method == "PUT" {
                let etag = sets3lock_mock::etag_of(&body);
                s3.force(&bucket, &object, Some(body));
                return Reply::ok(http::StatusCode::OK, Some(&etag), bytes::Bytes::new());
            }
            s3.force(&bucket, &object, None);
            return Reply::ok(http::StatusCode::NO_CONTENT, None, bytes::Bytes::new());
        }
        ("DELETE", _, Some(etag)) => Intent::DeleteIfMatch { etag },
        ("GET", inm, _) => Intent::Get {
            if_none_match: inm.and_then(|v| ETag::parse(v).ok()),
        },
        _ => return Reply::error(http::StatusCode::NOT_IMPLEMENTED, "NotImplemented"),
    };
    s3.execute(&bucket, &object, &intent)
}

fn percent_encoding_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
