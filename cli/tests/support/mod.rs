//! What the command's tests need from a real server: where it is, and raw access to the lock
//! object for checking and tampering (unconditional requests, as an operator would send).
#![allow(dead_code, unreachable_pub)] // test-only items

pub mod blackout;
#[path = "../../../backends/s3/tests/support/raw.rs"]
pub mod raw;

pub use raw::{fresh_key, rand_u64, RawAccess};

/// One S3 endpoint started by `scripts/s3-server.sh`.
#[derive(Clone, Debug)]
pub struct Server {
    pub endpoint: String,
    pub access_key: String,
    pub secret: String,
    pub bucket: String,
}

/// A real server from its environment (`SETS3LOCK_<NAME>_*`). With `SETS3LOCK_REQUIRE_S3=1`
/// (the test script sets it) a missing server fails the test; otherwise the test says it
/// skipped.
pub fn real(name: &str) -> Option<Server> {
    let prefix = format!("SETS3LOCK_{}", name.to_uppercase());
    let var = |suffix: &str| std::env::var(format!("{prefix}_{suffix}")).ok();
    match (
        var("ENDPOINT"),
        var("ACCESS_KEY"),
        var("SECRET"),
        var("BUCKET"),
    ) {
        (Some(endpoint), Some(access_key), Some(secret), Some(bucket)) => Some(Server {
            endpoint,
            access_key,
            secret,
            bucket,
        }),
        _ => {
            if std::env::var("SETS3LOCK_REQUIRE_S3").as_deref() == Ok("1") {
                panic!("{prefix}_* is not set: start the server with scripts/s3-server.sh (bash scripts/test.sh does)");
            }
            eprintln!(
                "SKIPPED: no {name} server ({prefix}_ENDPOINT unset); run bash scripts/test.sh"
            );
            None
        }
    }
}

impl Server {
    pub fn url(&self, key: &str) -> String {
        format!("s3://{}/{}", self.bucket, key)
    }
}

impl RawAccess for Server {
    fn parts(&self) -> (&str, &str, &str, &str) {
        (&self.endpoint, &self.access_key, &self.secret, &self.bucket)
    }
}
