//! Who a GCS lock is: a token from the metadata server (asked once, then cached), and a
//! service account's key file (every request carries a JWT the key signed, naming the
//! account). Against the mock in GCS's dialect behind a proxy that records every request.
#![cfg(feature = "gcs")]

use crate::support;

use sets3lock::{blocking::Locker, GcsSettings, Options, StoreCheck, Wait};
use std::io::{Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A metadata server on loopback that hands out `token` and counts how often it was asked.
fn metadata_server(token: &'static str) -> (String, Arc<AtomicUsize>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let host = listener.local_addr().expect("addr").to_string();
    let asked = Arc::new(AtomicUsize::new(0));
    let count = asked.clone();
    std::thread::spawn(move || {
        for mut c in listener.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let n = c.read(&mut buf).unwrap_or(0);
            let request = String::from_utf8_lossy(&buf[..n]).to_ascii_lowercase();
            let body = if request.contains("metadata-flavor: google")
                && request.contains("/computemetadata/v1/instance/service-accounts/default/token")
            {
                count.fetch_add(1, Ordering::SeqCst);
                format!("{{\"access_token\":\"{token}\",\"expires_in\":3599,\"token_type\":\"Bearer\"}}")
            } else {
                String::new()
            };
            let status = if body.is_empty() {
                "404 Not Found"
            } else {
                "200 OK"
            };
            let _ = write!(
                c,
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (host, asked)
}

fn through_proxy(gcs: GcsSettings) -> (support::proxy::LossyProxy, Options, String) {
    let s = support::mock_gcs();
    let proxy = support::proxy::LossyProxy::start(&s.endpoint);
    let mut gcs = gcs;
    gcs.endpoint = Some(sets3lock::parse_endpoint(&proxy.endpoint).expect("endpoint"));
    let mut options = Options::default();
    options.gcs = gcs;
    options.store_check = StoreCheck::Off;
    let url = s.url(&support::fresh_key("gcs-auth"));
    (proxy, options, url)
}

fn authorizations(proxy: &support::proxy::LossyProxy) -> Vec<String> {
    proxy
        .requests()
        .iter()
        .map(|m| m.header("authorization").unwrap_or("").to_owned())
        .collect()
}

#[test]
fn a_token_from_the_metadata_server_is_asked_for_once_and_sent_with_every_request() {
    let (host, asked) = metadata_server("ya29.from-metadata");
    let mut gcs = GcsSettings::default();
    gcs.metadata_host = Some(host);
    let (proxy, options, url) = through_proxy(gcs);
    let locker = Locker::new(&url, options).expect("locker");
    for _ in 0..3 {
        let held = locker.acquire(Wait::No).expect("acquire");
        held.release().expect("release");
    }
    let auth = authorizations(&proxy);
    assert_eq!(auth.len(), 6, "{auth:?}");
    assert!(
        auth.iter().all(|a| a == "Bearer ya29.from-metadata"),
        "{auth:?}"
    );
    assert_eq!(asked.load(Ordering::SeqCst), 1, "the token is cached");
}

#[test]
fn a_service_account_key_signs_a_token_naming_the_account_with_every_request() {
    use aws_lc_rs::encoding::AsDer as _;
    use aws_lc_rs::signature::{KeyPair as _, UnparsedPublicKey, RSA_PKCS1_2048_8192_SHA256};
    use base64::Engine as _;
    let key = aws_lc_rs::signature::RsaKeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048)
        .expect("a key");
    let der = key.as_der().expect("pkcs8");
    let b64 = base64::engine::general_purpose::STANDARD.encode(der.as_ref());
    let lines: Vec<String> = b64
        .as_bytes()
        .chunks(64)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect();
    let pem = format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        lines.join("\n")
    );
    let email = "lock@project.iam.gserviceaccount.com";
    let file = std::env::temp_dir().join(format!("sets3lock-sa-{}.json", support::rand_u64()));
    let json = serde_json::json!({
        "type": "service_account",
        "client_email": email,
        "private_key_id": "kid-1",
        "private_key": pem,
    });
    std::fs::write(&file, json.to_string()).expect("write");
    let mut gcs = GcsSettings::default();
    gcs.credentials_file = Some(file.clone());
    let (proxy, options, url) = through_proxy(gcs);
    let held = Locker::new(&url, options)
        .expect("locker")
        .acquire(Wait::No)
        .expect("acquire");
    held.release().expect("release");
    let _ = std::fs::remove_file(&file);
    let auth = authorizations(&proxy);
    assert_eq!(auth.len(), 2, "{auth:?}");
    let public = UnparsedPublicKey::new(
        &RSA_PKCS1_2048_8192_SHA256,
        key.public_key().as_ref().to_vec(),
    );
    for a in &auth {
        let jwt = a.strip_prefix("Bearer ").expect("a bearer token");
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3, "{jwt}");
        let decode = |p: &str| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(p)
                .expect("base64url")
        };
        public
            .verify(
                format!("{}.{}", parts[0], parts[1]).as_bytes(),
                &decode(parts[2]),
            )
            .expect("signed by the account's key");
        let claims: serde_json::Value = serde_json::from_slice(&decode(parts[1])).expect("claims");
        assert_eq!(claims["iss"], email);
        let header: serde_json::Value = serde_json::from_slice(&decode(parts[0])).expect("header");
        assert_eq!(header["kid"], "kid-1");
    }
}

/// GCS takes one write a second on an object and answers more with 429: after a 429 the
/// store holds that object's next write until a second has passed (the core, which reads
/// back and writes again at once, would meet the limit again), and the lock is still had.
#[test]
fn after_a_429_the_next_write_of_that_object_waits_a_second_and_the_lock_is_had() {
    let semantics = sets3lock_mock::Semantics {
        dialect: sets3lock_mock::Dialect::Gcs,
        ..sets3lock_mock::Semantics::default()
    };
    let m = support::mock_server::MockServer::start(semantics, "mock-bucket");
    let mut gcs = GcsSettings::default();
    gcs.endpoint = Some(sets3lock::parse_endpoint(&m.endpoint).expect("endpoint"));
    gcs.anonymous = true;
    let mut options = Options::default();
    options.gcs = gcs;
    options.store_check = StoreCheck::Off;
    let url = format!("gs://mock-bucket/{}", support::fresh_key("gcs-429"));
    let locker = Locker::new(&url, options).expect("locker");
    m.throttle_writes.store(1, Ordering::SeqCst); // the first create is throttled
    let started = std::time::Instant::now();
    let held = locker
        .acquire(Wait::Timeout(std::time::Duration::from_secs(10)))
        .expect("acquired after the 429");
    let took = started.elapsed();
    held.release().expect("release");
    let writes = m.writes_at.lock().expect("writes").clone();
    assert!(
        writes.len() >= 3,
        "create (429), create, release: {writes:?}"
    );
    let gap = writes[1].duration_since(writes[0]);
    assert!(
        gap >= std::time::Duration::from_millis(950),
        "the write after the 429 came {gap:?} later, not a second"
    );
    assert!(took < std::time::Duration::from_secs(5), "{took:?}");
}
