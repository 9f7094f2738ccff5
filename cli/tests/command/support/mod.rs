//! What the command's tests need from a real server: where it is, and raw access to the lock
//! object for checking and tampering (unconditional requests, as an operator would send).
#![allow(dead_code, unreachable_pub)] // test-only items

pub mod command;
pub mod proxy;
#[path = "../../../../backends/drivers/tests/support/raw.rs"]
pub mod raw;
#[path = "../../../../backends/drivers/tests/support/sas.rs"]
pub mod sas;
#[path = "../../../../backends/drivers/tests/support/token_service.rs"]
pub mod token_service;

pub use raw::{fresh_key, rand_u64, RawAccess};

/// One S3 endpoint started by `scripts/s3-server.sh`.
#[derive(Clone, Debug)]
pub struct Server {
    pub endpoint: String,
    pub access_key: String,
    pub secret: String,
    pub bucket: String,
}

/// A real server from its environment (see [`raw::server_env`]).
pub fn real(name: &str) -> Option<Server> {
    let (endpoint, access_key, secret, bucket) = raw::server_env(name)?;
    Some(Server {
        endpoint,
        access_key,
        secret,
        bucket,
    })
}

/// No server: an endpoint nothing listens on, for tests of what the command does before it
/// sends anything (help, usage errors). Such tests never skip.
pub fn offline() -> Server {
    Server {
        endpoint: "http://127.0.0.1:9".into(),
        access_key: "offline".into(),
        secret: "offline".into(),
        bucket: "offline".into(),
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

/// A fresh directory of its own under the temporary directory, for one test.
pub fn scratch_dir(name: &str) -> String {
    let dir = std::env::temp_dir().join(format!(
        "sets3lock-cli-{name}-{}-{:x}",
        std::process::id(),
        rand_u64()
    ));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir.to_string_lossy().into_owned()
}
