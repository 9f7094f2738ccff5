//! Shared by the integration tests: the servers under test, raw access for tampering, and
//! what differs between the async and the blocking driver.
#![allow(dead_code, unreachable_pub, unused_imports)] // each test binary uses a different part; test-only items

pub mod http1;
pub mod mock_server;
pub mod proxy;
pub mod raw;

pub use raw::{fresh_key, rand_u64, RawAccess};
use rusty_s3::Credentials;
use sets3lock::{ConditionalDelete, ReleaseOutcome};
use sets3lock_mock::{MissingKeyIfMatch, Semantics};
use sets3lock_s3::blocking::Blocking;
use sets3lock_s3::tokio::Tokio;
use sets3lock_s3::{Error, Held, Loss, Mode, S3Options, Wait};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// One S3 endpoint the suite runs against.
#[derive(Clone, Debug)]
pub struct Server {
    pub name: &'static str,
    pub endpoint: String,
    pub access_key: String,
    pub secret: String,
    pub bucket: String,
    /// What `If-Match` on a missing key gets: 404 (AWS, MiniStack, the mock) or 412 (SeaweedFS).
    pub missing_if_match: u16,
}

/// The mock over HTTP, started once per test binary, answering `If-Match` on a missing key
/// with 404 (AWS, MiniStack) or 412 (SeaweedFS).
pub fn mock(missing_if_match: u16) -> Server {
    if missing_if_match == 412 {
        mock_flavour(
            "mock (412 like SeaweedFS)",
            Semantics {
                missing_key_if_match: MissingKeyIfMatch::PreconditionFailed,
                ..Semantics::default()
            },
        )
    } else {
        mock_flavour("mock (404 like AWS)", Semantics::default())
    }
}

/// The mock whose `DELETE If-Match` deletes whatever is there, as MinIO CE's does.
pub fn mock_like_minio() -> Server {
    mock_flavour(
        "mock (DELETE ignores If-Match, like MinIO CE)",
        Semantics {
            conditional_delete: ConditionalDelete::IgnoresIfMatch,
            ..Semantics::default()
        },
    )
}

/// The mock that answers `DELETE If-Match` with 501, as LocalStack (and AWS before
/// 2025-09-16) do.
pub fn mock_like_localstack() -> Server {
    mock_flavour(
        "mock (DELETE If-Match answers 501, like LocalStack)",
        Semantics {
            conditional_delete: ConditionalDelete::NotImplemented,
            ..Semantics::default()
        },
    )
}

/// The mock with a versioned bucket: every PUT's reply carries `x-amz-version-id`.
pub fn mock_versioned() -> Server {
    mock_flavour(
        "mock (versioned bucket)",
        Semantics {
            versioned: true,
            ..Semantics::default()
        },
    )
}

/// The mock with these semantics over HTTP, started once per test binary and name.
fn mock_flavour(name: &'static str, semantics: Semantics) -> Server {
    static STARTED: Mutex<Vec<Server>> = Mutex::new(Vec::new());
    let mut started = STARTED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = started.iter().find(|s| s.name == name) {
        return s.clone();
    }
    let m = mock_server::MockServer::start(semantics, "mock-bucket");
    let server = Server {
        name,
        endpoint: m.endpoint,
        access_key: m.access_key,
        secret: m.secret,
        bucket: "mock-bucket".into(),
        missing_if_match: match semantics.missing_key_if_match {
            MissingKeyIfMatch::PreconditionFailed => 412,
            MissingKeyIfMatch::NotFound => 404,
        },
    };
    started.push(server.clone());
    server
}

/// A real server from its environment (see [`raw::server_env`]); only the three the suite
/// knows.
pub fn real(name: &'static str) -> Option<Server> {
    if !["seaweedfs", "ministack", "s3rver"].contains(&name) {
        return None;
    }
    let (endpoint, access_key, secret, bucket) = raw::server_env(name)?;
    Some(Server {
        name,
        endpoint,
        access_key,
        secret,
        bucket,
        missing_if_match: if name == "seaweedfs" { 412 } else { 404 },
    })
}

impl Server {
    pub fn options(&self) -> S3Options {
        S3Options {
            endpoint: Some(sets3lock_s3::parse_endpoint(&self.endpoint).expect("endpoint")),
            credentials: Some(Credentials::new(
                self.access_key.clone(),
                self.secret.clone(),
            )),
            request_timeout: Duration::from_secs(30),
            ..S3Options::default()
        }
    }

    pub fn url(&self, key: &str) -> String {
        format!("s3://{}/{}", self.bucket, key)
    }
}

impl RawAccess for Server {
    fn parts(&self) -> (&str, &str, &str, &str) {
        (&self.endpoint, &self.access_key, &self.secret, &self.bucket)
    }
}

/// The async driver's handles need a runtime that outlives each call.
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime")
    })
}

/// What the two drivers do differently, so that every scenario runs on both: the waiting
/// methods (the rest of the handle is one type).
pub trait Driver: Mode {
    fn acquire(url: &str, options: S3Options, wait: Wait) -> Result<Held<Self>, Error>;
    fn release(held: Held<Self>) -> Result<ReleaseOutcome, Error>;
    /// Waits up to `timeout` for the hold to be lost.
    fn wait_lost(held: &Held<Self>, timeout: Duration) -> Option<Loss>;
    fn with_lock<T>(
        url: &str,
        options: S3Options,
        wait: Wait,
        work: impl FnOnce(&Held<Self>) -> T,
    ) -> Result<(T, ReleaseOutcome), Error>;
    /// Takes a slot of the semaphore `url` of `slots` slots.
    fn take_slot(
        url: &str,
        slots: u32,
        options: S3Options,
        wait: Wait,
    ) -> Result<Held<Self>, Error>;
    /// The watcher's next event.
    fn next_event(watcher: &mut sets3lock_s3::Watcher<Self>) -> Option<sets3lock::WatchEvent>;
    /// Campaigns until elected.
    fn campaign(e: &sets3lock_s3::Election<Self>) -> Result<Held<Self>, Error>;
    /// The leader now.
    fn leader(e: &sets3lock_s3::Election<Self>) -> Result<sets3lock::Sighting, Error>;
    /// Acquires every key of `keys` through one client, in order.
    fn acquire_many(
        locks: &sets3lock_s3::Locks<Self>,
        keys: &[String],
        wait: Wait,
    ) -> Vec<Result<Held<Self>, Error>>;
}

impl Driver for Tokio {
    fn acquire(url: &str, options: S3Options, wait: Wait) -> Result<Held<Self>, Error> {
        let locker = sets3lock_s3::tokio::Locker::new(url, options)?;
        runtime().block_on(locker.acquire(wait))
    }

    fn release(held: Held<Self>) -> Result<ReleaseOutcome, Error> {
        runtime().block_on(held.release())
    }

    fn wait_lost(held: &Held<Self>, timeout: Duration) -> Option<Loss> {
        runtime().block_on(async { tokio::time::timeout(timeout, held.lost()).await.ok() })
    }

    fn with_lock<T>(
        url: &str,
        options: S3Options,
        wait: Wait,
        work: impl FnOnce(&Held<Self>) -> T,
    ) -> Result<(T, ReleaseOutcome), Error> {
        let locker = sets3lock_s3::tokio::Locker::new(url, options)?;
        runtime().block_on(locker.with_lock(wait, async |held| work(held)))
    }

    fn take_slot(
        url: &str,
        slots: u32,
        options: S3Options,
        wait: Wait,
    ) -> Result<Held<Self>, Error> {
        let semaphore = sets3lock_s3::tokio::Semaphore::new(url, slots, options)?;
        runtime().block_on(semaphore.acquire(wait))
    }

    fn next_event(watcher: &mut sets3lock_s3::Watcher<Self>) -> Option<sets3lock::WatchEvent> {
        runtime().block_on(watcher.next())
    }

    fn campaign(e: &sets3lock_s3::Election<Self>) -> Result<Held<Self>, Error> {
        runtime().block_on(e.campaign())
    }

    fn leader(e: &sets3lock_s3::Election<Self>) -> Result<sets3lock::Sighting, Error> {
        runtime().block_on(e.leader())
    }

    fn acquire_many(
        locks: &sets3lock_s3::Locks<Self>,
        keys: &[String],
        wait: Wait,
    ) -> Vec<Result<Held<Self>, Error>> {
        runtime().block_on(async {
            let mut out = Vec::new();
            for key in keys {
                out.push(locks.acquire(key, wait).await);
            }
            out
        })
    }
}

impl Driver for Blocking {
    fn acquire(url: &str, options: S3Options, wait: Wait) -> Result<Held<Self>, Error> {
        sets3lock_s3::blocking::Locker::new(url, options)?.acquire(wait)
    }

    fn release(held: Held<Self>) -> Result<ReleaseOutcome, Error> {
        held.release()
    }

    fn wait_lost(held: &Held<Self>, timeout: Duration) -> Option<Loss> {
        held.wait_lost(Some(timeout))
    }

    fn with_lock<T>(
        url: &str,
        options: S3Options,
        wait: Wait,
        work: impl FnOnce(&Held<Self>) -> T,
    ) -> Result<(T, ReleaseOutcome), Error> {
        sets3lock_s3::blocking::Locker::new(url, options)?.with_lock(wait, work)
    }

    fn take_slot(
        url: &str,
        slots: u32,
        options: S3Options,
        wait: Wait,
    ) -> Result<Held<Self>, Error> {
        sets3lock_s3::blocking::Semaphore::new(url, slots, options)?.acquire(wait)
    }

    fn next_event(watcher: &mut sets3lock_s3::Watcher<Self>) -> Option<sets3lock::WatchEvent> {
        watcher.next()
    }

    fn campaign(e: &sets3lock_s3::Election<Self>) -> Result<Held<Self>, Error> {
        e.campaign()
    }

    fn leader(e: &sets3lock_s3::Election<Self>) -> Result<sets3lock::Sighting, Error> {
        e.leader()
    }

    fn acquire_many(
        locks: &sets3lock_s3::Locks<Self>,
        keys: &[String],
        wait: Wait,
    ) -> Vec<Result<Held<Self>, Error>> {
        keys.iter().map(|k| locks.acquire(k, wait)).collect()
    }
}
