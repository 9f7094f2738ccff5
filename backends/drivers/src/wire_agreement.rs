//! The drivers send what the wire layer builds: for every store, every intent and both
//! transports, the request that reaches a server is, byte for byte, the one
//! `sets3lock_wire` builds for the same intent at the time it was signed at (read back from
//! the request itself). The transport may add only the framing headers it owns (`host`,
//! `accept`).

use crate::api::open::open_store;
use crate::driver::store::Store;
use crate::Options;
use bytes::Bytes;
use core::time::Duration;
use sets3lock_proto::{ETag, Intent, Scheme};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::SystemTime;

/// A request as it came off the socket.
#[derive(Debug)]
struct Captured {
    method: String,
    target: String,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
}

impl Captured {
    fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_slice())
    }
}

/// A server on 127.0.0.1 that records each request and answers `404` with no body (every
/// store's table reads that without trouble), one connection per request.
fn capture_server() -> (String, mpsc::Receiver<Captured>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let mut reader = BufReader::new(stream);
            let mut line = String::new();
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            let mut parts = line.split_whitespace();
            let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
                continue;
            };
            let (method, target) = (method.to_owned(), target.to_owned());
            let mut headers = Vec::new();
            loop {
                let mut raw = Vec::new();
                if reader.read_until(b'\n', &mut raw).is_err() || raw == b"\r\n" || raw.is_empty() {
                    break;
                }
                let text = raw.strip_suffix(b"\r\n").unwrap_or(&raw);
                if let Some(colon) = text.iter().position(|b| *b == b':') {
                    let name = String::from_utf8_lossy(&text[..colon]).to_ascii_lowercase();
                    let value = text[colon + 1..].trim_ascii().to_vec();
                    headers.push((name, value));
                }
            }
            let length = headers
                .iter()
                .find(|(n, _)| n == "content-length")
                .and_then(|(_, v)| std::str::from_utf8(v).ok()?.parse::<usize>().ok())
                .unwrap_or(0);
            let mut body = vec![0; length];
            if reader.read_exact(&mut body).is_err() {
                continue;
            }
            let mut stream = reader.into_inner();
            let _ = stream.write_all(
                b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            );
            let _ = tx.send(Captured {
                method,
                target,
                headers,
                body,
            });
        }
    });
    (format!("http://127.0.0.1:{port}"), rx)
}

/// The blocking mode's client, or tokio's.
fn io(blocking: bool) -> crate::driver::http::Io {
    use crate::driver::mode::sealed::Waiting as _;
    match blocking {
        true => crate::blocking::io(),
        false => crate::generic::Tokio::io(),
    }
}

fn intents() -> Vec<Intent> {
    let etag = ETag::parse("0x8DC1").expect("etag");
    let body = Bytes::from_static(b"{\"v\":1,\"owner\":\"a\"}");
    vec![
        Intent::PutIfNoneMatch { body: body.clone() },
        Intent::PutIfMatch {
            etag: etag.clone(),
            body,
        },
        Intent::DeleteIfMatch { etag: etag.clone() },
        Intent::Get {
            if_none_match: None,
        },
        Intent::Get {
            if_none_match: Some(etag),
        },
    ]
}

/// What was sent, for every intent and then the probe's plain delete, through `store`
/// (blocking or async), each compared with what `build` makes of it.
fn check(
    store: &dyn Store,
    blocking: bool,
    captured: &mpsc::Receiver<Captured>,
    build: impl Fn(Option<&Intent>, &Captured) -> sets3lock_wire::HttpRequest,
) {
    let key = "jobs/nightly build";
    let limit = Duration::from_secs(5);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let run = |f: crate::BoxFuture<'_, ()>| match blocking {
        true => crate::driver::threads::block_on(f),
        false => runtime.block_on(f),
    };
    let mut cases: Vec<Option<Intent>> = intents().into_iter().map(Some).collect();
    cases.push(None);
    for intent in &cases {
        match intent {
            Some(i) => run(Box::pin(async {
                let _ = store.send(key, i, limit).await;
            })),
            None => run(store.discard(key, limit)),
        }
        let got = captured
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("{intent:?}: no request reached the server: {e}"));
        let want = build(intent.as_ref(), &got);
        let what = format!("{} {intent:?} (blocking: {blocking})", store.id());
        assert_eq!(got.method, want.method().as_str(), "{what}");
        let target = want.uri().path_and_query().map(|p| p.as_str());
        assert_eq!(Some(got.target.as_str()), target, "{what}");
        for (name, value) in want.headers() {
            assert_eq!(
                got.header(name.as_str()),
                Some(value.as_bytes()),
                "{what}: header {name}"
            );
        }
        for (i, (name, _)) in got.headers.iter().enumerate() {
            assert!(
                !got.headers[..i].iter().any(|(n, _)| n == name),
                "{what}: {name} sent twice"
            );
            assert!(
                want.headers().contains_key(name.as_str()) || ["host", "accept"].contains(&&**name),
                "{what}: the transport added {name}"
            );
        }
        let host = want.uri().authority().map(|a| a.as_str().as_bytes());
        assert_eq!(got.header("host"), host, "{what}");
        assert_eq!(got.body, want.body().as_ref(), "{what}: the body");
    }
}

/// The time a request says it was signed at, in the format `format` (`strptime`).
fn signed_at(text: &[u8], format: &str) -> SystemTime {
    let text = std::str::from_utf8(text).expect("ascii");
    let ts = jiff::civil::DateTime::strptime(format, text)
        .and_then(|t| t.to_zoned(jiff::tz::TimeZone::UTC))
        .unwrap_or_else(|e| panic!("{text:?} is not a time: {e}"));
    SystemTime::from(ts.timestamp())
}

fn query_value(target: &str, name: &str) -> Vec<u8> {
    let url = url::Url::parse(&format!("http://h{target}")).expect("target");
    url.query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned().into_bytes())
        .unwrap_or_else(|| panic!("no {name} in {target}"))
}

#[test]
fn s3_sends_what_the_wire_layer_builds() {
    let (endpoint, captured) = capture_server();
    let mut options = Options::default();
    options.s3.endpoint = Some(url::Url::parse(&endpoint).expect("url"));
    options.s3.credentials = crate::Credentials::Fixed(crate::AwsCredentials::new_with_token(
        "AKIDEXAMPLE",
        "secret",
        "session",
    ));
    let expiry = options.s3.presign_expiry;
    let bucket = sets3lock_wire::s3::Bucket::new(&endpoint, "locks", &options.s3.region, true)
        .expect("bucket");
    let keys = sets3lock_wire::s3::Keys::new("AKIDEXAMPLE", "secret").with_token("session");
    for blocking in [false, true] {
        let store = open_store(Scheme::S3, "locks", &options, io(blocking)).expect("store");
        check(store.as_ref(), blocking, &captured, |intent, got| {
            let at = signed_at(&query_value(&got.target, "X-Amz-Date"), "%Y%m%dT%H%M%SZ");
            let key = "jobs/nightly build";
            match intent {
                Some(i) => sets3lock_wire::s3::request(&bucket, &keys, key, i, at, expiry),
                None => sets3lock_wire::s3::delete(&bucket, &keys, key, at, expiry),
            }
            .expect("built")
        });
    }
}

#[cfg(feature = "azure")]
#[test]
fn azure_sends_what_the_wire_layer_builds() {
    use base64::Engine as _;
    let (endpoint, captured) = capture_server();
    let endpoint = format!("{endpoint}/devstoreaccount1");
    let key = crate::azure::settings::DEV_KEY_FOR_TESTS;
    let mut options = Options::default();
    options.azure.endpoint = Some(url::Url::parse(&endpoint).expect("url"));
    options.azure.account = Some("devstoreaccount1".into());
    options.azure.key = Some(key.into());
    let container = sets3lock_wire::azure::Container::new(&endpoint, "locks").expect("c");
    let auth = sets3lock_wire::azure::Auth::SharedKey {
        account: "devstoreaccount1".into(),
        key: base64::engine::general_purpose::STANDARD
            .decode(key)
            .expect("key"),
    };
    for blocking in [false, true] {
        let store = open_store(Scheme::Azure, "locks", &options, io(blocking)).expect("store");
        check(store.as_ref(), blocking, &captured, |intent, got| {
            let date = got.header("x-ms-date").expect("dated");
            let at = signed_at(date, "%a, %d %b %Y %H:%M:%S GMT");
            let key = "jobs/nightly build";
            match intent {
                Some(i) => sets3lock_wire::azure::request(&container, &auth, key, i, at),
                None => sets3lock_wire::azure::delete(&container, &auth, key, at),
            }
            .expect("built")
        });
    }
}

#[cfg(feature = "gcs")]
#[test]
fn gcs_sends_what_the_wire_layer_builds() {
    let (endpoint, captured) = capture_server();
    let mut options = Options::default();
    options.gcs.endpoint = Some(url::Url::parse(&endpoint).expect("url"));
    options.gcs.credentials = crate::Credentials::Fixed(crate::BearerToken::new("ya29.token"));
    let bucket = sets3lock_wire::gcs::Bucket::new(&endpoint, "locks").expect("bucket");
    for blocking in [false, true] {
        let store = open_store(Scheme::Gcs, "locks", &options, io(blocking)).expect("store");
        check(store.as_ref(), blocking, &captured, |intent, _| {
            let key = "jobs/nightly build";
            match intent {
                Some(i) => sets3lock_wire::gcs::request(&bucket, Some("ya29.token"), key, i),
                None => sets3lock_wire::gcs::delete(&bucket, Some("ya29.token"), key),
            }
            .expect("built")
        });
    }
}
