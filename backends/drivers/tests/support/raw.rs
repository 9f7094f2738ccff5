//! Raw, unconditional access to an object, as an operator (or a test's tampering) sends it;
//! shared by the drivers' tests and the command's tests (`#[path]`-included there).

use rusty_s3::actions::S3Action;
use rusty_s3::{Bucket, Credentials, UrlStyle};
use sets3lock::proto::ETag;
use std::time::Duration;

/// What a test server gives for raw access: endpoint, access key, secret, bucket.
pub trait RawAccess {
    fn parts(&self) -> (&str, &str, &str, &str);

    /// Writes the object unconditionally, as an operator would.
    /// For a store that is not S3 (Azure, GCS): the library's own client, through which the
    /// raw requests go instead (a read, then a conditional write on what it found: the same
    /// as a plain PUT while nobody else writes the key).
    fn store_client(&self) -> Option<sets3lock::Client> {
        None
    }

    fn raw_put(&self, key: &str, body: &[u8]) -> ETag {
        if let Some(client) = self.store_client() {
            let body = bytes::Bytes::copy_from_slice(body);
            let intent = match client.send(
                key,
                &sets3lock::proto::Intent::Get {
                    if_none_match: None,
                },
            ) {
                sets3lock::proto::Response::Object { etag, .. } => {
                    sets3lock::proto::Intent::PutIfMatch { etag, body }
                }
                _ => sets3lock::proto::Intent::PutIfNoneMatch { body },
            };
            return match client.send(key, &intent) {
                sets3lock::proto::Response::Written { etag } => etag,
                other => panic!("raw PUT: {other:?}"),
            };
        }
        let (status, etag, _) = raw(self.parts(), "PUT", key, Some(body));
        assert_eq!(status, 200, "raw PUT");
        ETag::parse(&etag.expect("etag")).expect("valid etag")
    }

    /// Deletes the object unconditionally.
    fn raw_delete(&self, key: &str) {
        if let Some(client) = self.store_client() {
            return client.discard(key);
        }
        let (status, _, _) = raw(self.parts(), "DELETE", key, None);
        assert!(status == 204 || status == 200, "raw DELETE: {status}");
    }

    /// The object's ETag and body, if it exists.
    fn raw_get(&self, key: &str) -> Option<(ETag, Vec<u8>)> {
        if let Some(client) = self.store_client() {
            return match client.send(
                key,
                &sets3lock::proto::Intent::Get {
                    if_none_match: None,
                },
            ) {
                sets3lock::proto::Response::Object { etag, body, .. } => {
                    Some((etag, body.to_vec()))
                }
                sets3lock::proto::Response::Absent => None,
                other => panic!("raw GET: {other:?}"),
            };
        }
        let (status, etag, body) = raw(self.parts(), "GET", key, None);
        (status == 200).then(|| (ETag::parse(&etag.expect("etag")).expect("etag"), body))
    }
}

fn raw(
    (endpoint, access_key, secret, bucket): (&str, &str, &str, &str),
    method: &str,
    key: &str,
    body: Option<&[u8]>,
) -> (u16, Option<String>, Vec<u8>) {
    let bucket = Bucket::new(
        endpoint.parse().expect("url"),
        UrlStyle::Path,
        bucket.to_owned(),
        "us-east-1",
    )
    .expect("bucket");
    let creds = Credentials::new(access_key.to_owned(), secret.to_owned());
    let expiry = Duration::from_secs(60);
    let client = reqwest::blocking::Client::new();
    let request = match method {
        "PUT" => client
            .put(bucket.put_object(Some(&creds), key).sign(expiry))
            .body(body.unwrap_or_default().to_vec()),
        "DELETE" => client.delete(bucket.delete_object(Some(&creds), key).sign(expiry)),
        _ => client.get(bucket.get_object(Some(&creds), key).sign(expiry)),
    };
    let reply = request.send().expect("raw request");
    let status = reply.status().as_u16();
    let etag = reply
        .headers()
        .get("etag")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (
        status,
        etag,
        reply.bytes().map(|b| b.to_vec()).unwrap_or_default(),
    )
}

/// A real server started by `scripts/s3-server.sh`, from its environment
/// (`SETS3LOCK_<NAME>_{ENDPOINT,ACCESS_KEY,SECRET,BUCKET}`), as (endpoint, access key, secret,
/// bucket). With `SETS3LOCK_REQUIRE_S3=1` (the test script sets it) a missing server fails the
/// test; otherwise the test says it skipped.
pub fn server_env(name: &str) -> Option<(String, String, String, String)> {
    let prefix = format!("SETS3LOCK_{}", name.to_uppercase());
    let var = |suffix: &str| std::env::var(format!("{prefix}_{suffix}")).ok();
    match (
        var("ENDPOINT"),
        var("ACCESS_KEY"),
        var("SECRET"),
        var("BUCKET"),
    ) {
        (Some(endpoint), Some(access_key), Some(secret), Some(bucket)) => {
            Some((endpoint, access_key, secret, bucket))
        }
        _ => {
            missing(name, &prefix);
            None
        }
    }
}

/// A server the test needs is not running: a failure under `SETS3LOCK_REQUIRE_S3=1` (as
/// `bash scripts/test.sh` sets), else a skip that says so.
pub fn missing(name: &str, prefix: &str) {
    unavailable(
        &format!("no {name} server ({prefix}_ENDPOINT is not set)"),
        "start it with scripts/s3-server.sh, or run bash scripts/test.sh",
    );
}

/// Something the test needs is missing (`what`, and how to get it: `fix`). Under
/// `SETS3LOCK_REQUIRE_S3=1` (as `bash scripts/test.sh` and CI set) the test fails. Otherwise
/// it is skipped, and says so on the terminal: the line goes to the process's standard error
/// directly, past the test harness's capture, so `cargo test` shows it even though the test
/// then counts as passed.
pub fn unavailable(what: &str, fix: &str) {
    if std::env::var("SETS3LOCK_REQUIRE_S3").as_deref() == Ok("1") {
        panic!("{what}: {fix} (SETS3LOCK_REQUIRE_S3=1 requires it)");
    }
    use std::io::Write as _;
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {what}; {fix}");
}

/// A key no other test uses.
pub fn fresh_key(scenario: &str) -> String {
    format!("conformance/{scenario}/{:016x}", rand_u64())
}

pub fn rand_u64() -> u64 {
    let mut b = [0u8; 8];
    getrandom::fill(&mut b).expect("random");
    u64::from_le_bytes(b)
}
