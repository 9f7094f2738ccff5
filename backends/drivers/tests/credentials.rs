//! The aws-config credential chain (feature `aws-config`): credentials served by a fake ECS
//! credentials endpoint on loopback, used to hold a lock on the mock server, and refreshed
//! before they expire.
#![cfg(feature = "aws-config")]

mod support;

use sets3lock::{blocking::Locker, Options, Wait};
use std::io::{Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Serves ECS-style credentials that expire in five minutes and `seconds`; counts requests.
fn fake_ecs(key: String, secret: String, seconds: u64) -> (String, Arc<AtomicUsize>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/creds", listener.local_addr().expect("addr"));
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            counter.fetch_add(1, Ordering::SeqCst);
            let expiry =
                jiff::Timestamp::now() + jiff::SignedDuration::from_secs(300 + seconds as i64);
            let body = format!(
                r#"{{"AccessKeyId":"{key}","SecretAccessKey":"{secret}","Token":"session-{n}","Expiration":"{}"}}"#,
                expiry.strftime("%Y-%m-%dT%H:%M:%SZ"),
                n = counter.load(Ordering::SeqCst)
            );
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (url, hits)
}

#[test]
fn the_aws_chain_provides_and_refreshes_credentials() {
    let mock = support::mock(404);
    let (uri, hits) = fake_ecs(mock.access_key.clone(), mock.secret.clone(), 1);
    // Only the ECS endpoint may answer: no keys, profiles or instance metadata.
    for var in [
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_ENDPOINT_URL_S3",
    ] {
        std::env::remove_var(var);
    }
    std::env::set_var("AWS_CONFIG_FILE", "/nonexistent/sets3lock-config");
    std::env::set_var(
        "AWS_SHARED_CREDENTIALS_FILE",
        "/nonexistent/sets3lock-credentials",
    );
    std::env::set_var("AWS_EC2_METADATA_DISABLED", "true");
    std::env::set_var("AWS_CONTAINER_CREDENTIALS_FULL_URI", &uri);
    std::env::set_var("AWS_REGION", "us-east-1");
    std::env::set_var("AWS_ENDPOINT_URL", &mock.endpoint);

    let mut options = Options::default();
    options.s3 = sets3lock::S3Settings::from_aws_config().expect("credentials from the chain");
    assert!(options.s3.credentials.is_none() && options.s3.credential_source.is_some());
    let locker = Locker::new(&mock.url(&support::fresh_key("aws-chain")), options).expect("locker");
    let held = locker
        .acquire(Wait::No)
        .expect("signed with the chain's credentials");
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    // They expire in 5 min + 1 s: refreshed after the 10 s floor, not left to expire.
    std::thread::sleep(Duration::from_secs(12));
    assert!(hits.load(Ordering::SeqCst) >= 2, "not refreshed");
    assert!(held.is_held());
    assert_eq!(
        held.release().expect("release"),
        sets3lock::proto::ReleaseOutcome::Deleted
    );
}
