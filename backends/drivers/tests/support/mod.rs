//! Shared by the integration tests: the servers under test, raw access for tampering, and
//! what differs between the async and the blocking driver.
#![allow(dead_code, unreachable_pub, unused_imports)] // each test binary uses a different part; test-only items

pub mod http1;
pub mod mock_server;
pub mod proxy;
pub mod raw;
pub mod sas;
pub mod token_service;
pub mod vars;

pub use raw::{fresh_key, rand_u64, RawAccess};
use rusty_s3::Credentials;
use sets3lock::generic::{Blocking, Held, Mode, Tokio};
use sets3lock::proto::{ConditionalDelete, ReleaseOutcome};
use sets3lock::{Error, Loss, Options, Wait};
use sets3lock_mock::{MissingKeyIfMatch, Semantics};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// One S3 endpoint the suite runs against.
#[derive(Clone, Debug)]
pub struct Server {
    pub name: &'static str,
    /// Which store: S3 (the mock, SeaweedFS, MiniStack, s3rver), Azure (Azurite) or GCS
    /// (fake-gcs-server).
    pub scheme: sets3lock::proto::Scheme,
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

/// The mock speaking Azure's Blob API over HTTP: 404 for `If-Match` on a missing blob, as
/// Azure answers, or 412, as Azurite does.
pub fn mock_azure(missing_if_match: u16) -> Server {
    let semantics = Semantics {
        dialect: sets3lock_mock::Dialect::Azure,
        missing_key_if_match: if missing_if_match == 412 {
            MissingKeyIfMatch::PreconditionFailed
        } else {
            MissingKeyIfMatch::NotFound
        },
        ..Semantics::default()
    };
    let name = if missing_if_match == 412 {
        "mock Azure (412 like Azurite)"
    } else {
        "mock Azure (404 like Azure)"
    };
    mock_flavour(name, semantics)
}

/// The mock speaking GCS's JSON API over HTTP, as real GCS answers: conditional DELETE
/// honoured, 304 for an unchanged read.
pub fn mock_gcs() -> Server {
    let semantics = Semantics {
        dialect: sets3lock_mock::Dialect::Gcs,
        ..Semantics::default()
    };
    mock_flavour("mock GCS", semantics)
}

/// The mock with these semantics over HTTP, started once per test binary and name.
fn mock_flavour(name: &'static str, semantics: Semantics) -> Server {
    static STARTED: Mutex<Vec<Server>> = Mutex::new(Vec::new());
    let mut started = STARTED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = started.iter().find(|s| s.name == name) {
        return s.clone();
    }
    let m = mock_server::MockServer::start(semantics, "mock-bucket");
    let (scheme, endpoint, access_key, secret) = match semantics.dialect {
        sets3lock_mock::Dialect::Azure => {
            use base64::Engine as _;
            let key = base64::engine::general_purpose::STANDARD.encode(mock_server::AZURE_KEY);
            let account = mock_server::AZURE_ACCOUNT.to_owned();
            let endpoint = format!("{}/{account}", m.endpoint);
            (sets3lock::proto::Scheme::Azure, endpoint, account, key)
        }
        sets3lock_mock::Dialect::Gcs => (
            sets3lock::proto::Scheme::Gcs,
            m.endpoint,
            String::new(),
            String::new(),
        ),
        _ => (
            sets3lock::proto::Scheme::S3,
            m.endpoint,
            m.access_key,
            m.secret,
        ),
    };
    let server = Server {
        name,
        scheme,
        endpoint,
        access_key,
        secret,
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
    if !["seaweedfs", "ministack", "moto", "s3rver"].contains(&name) {
        return None;
    }
    let (endpoint, access_key, secret, bucket) = raw::server_env(name)?;
    Some(Server {
        name,
        scheme: sets3lock::proto::Scheme::S3,
        endpoint,
        access_key,
        secret,
        bucket,
        missing_if_match: if name == "seaweedfs" { 412 } else { 404 },
    })
}

#[cfg(feature = "azure")]
/// Azurite, started by `scripts/s3-server.sh start azurite` (its `.local/azurite/env`).
pub fn azurite() -> Option<Server> {
    let var = |n: &str| std::env::var(format!("SETS3LOCK_AZURITE_{n}")).ok();
    let Some(endpoint) = var("ENDPOINT") else {
        raw::missing("azurite", "SETS3LOCK_AZURITE");
        return None;
    };
    let server = Server {
        name: "azurite",
        scheme: sets3lock::proto::Scheme::Azure,
        endpoint,
        access_key: var("ACCOUNT").expect("SETS3LOCK_AZURITE_ACCOUNT"),
        secret: var("KEY").expect("SETS3LOCK_AZURITE_KEY"),
        bucket: var("CONTAINER").expect("SETS3LOCK_AZURITE_CONTAINER"),
        // Azurite answers 412 where Azure answers 404.
        missing_if_match: 412,
    };
    server.probe();
    Some(server)
}

#[cfg(feature = "gcs")]
/// fake-gcs-server, started by `scripts/s3-server.sh start fake-gcs`. Before it is used, it
/// is probed: a second create of one object must be refused, or a test on it tests nothing.
pub fn fake_gcs() -> Option<Server> {
    let var = |n: &str| std::env::var(format!("SETS3LOCK_FAKEGCS_{n}")).ok();
    let Some(endpoint) = var("ENDPOINT") else {
        raw::missing("fake-gcs-server", "SETS3LOCK_FAKEGCS");
        return None;
    };
    let server = Server {
        name: "fake-gcs-server",
        scheme: sets3lock::proto::Scheme::Gcs,
        endpoint,
        access_key: String::new(),
        secret: String::new(),
        bucket: var("BUCKET").expect("SETS3LOCK_FAKEGCS_BUCKET"),
        missing_if_match: 412,
    };
    server.probe();
    Some(server)
}

impl Server {
    pub fn options(&self) -> Options {
        self.options_at(&self.origin())
    }

    /// The endpoint's scheme, host and port (without Azurite's account path).
    fn origin(&self) -> String {
        url::Url::parse(&self.endpoint)
            .expect("endpoint")
            .origin()
            .ascii_serialization()
    }

    /// The options, with requests sent to `endpoint` (a proxy in front of the server): the
    /// server's own path (Azurite's account) is kept.
    pub fn options_at(&self, endpoint: &str) -> Options {
        let mut options = Options::default();
        options.request_timeout = Duration::from_secs(30);
        let path = url::Url::parse(&self.endpoint)
            .expect("endpoint")
            .path()
            .to_owned();
        let at = format!(
            "{}{}",
            endpoint.trim_end_matches('/'),
            path.trim_end_matches('/')
        );
        let at = sets3lock::parse_endpoint(&at).expect("endpoint");
        match self.scheme {
            #[cfg(feature = "azure")]
            sets3lock::proto::Scheme::Azure => {
                let mut azure = sets3lock::AzureSettings::default();
                azure.account = Some(self.access_key.clone());
                azure.key = Some(self.secret.clone());
                azure.endpoint = Some(at);
                options.azure = azure;
            }
            #[cfg(feature = "gcs")]
            sets3lock::proto::Scheme::Gcs => {
                let mut gcs = sets3lock::GcsSettings::default();
                gcs.endpoint = Some(at);
                gcs.anonymous = true;
                options.gcs = gcs;
            }
            _ => {
                options.s3.endpoint = Some(at);
                options.s3.credentials = sets3lock::Credentials::Fixed(
                    sets3lock::AwsCredentials::new(self.access_key.clone(), self.secret.clone()),
                );
            }
        }
        options
    }

    /// The same options with a wrong secret (none to get wrong on an emulator without
    /// authentication: `None`).
    pub fn wrong_secret(&self) -> Option<Options> {
        let mut options = self.options();
        match self.scheme {
            #[cfg(feature = "azure")]
            sets3lock::proto::Scheme::Azure => {
                use base64::Engine as _;
                let wrong = base64::engine::general_purpose::STANDARD.encode(b"wrong-key");
                options.azure.key = Some(wrong);
            }
            sets3lock::proto::Scheme::Gcs => return None,
            // moto checks no signature (unless told to, which its STS cannot take).
            _ if self.name == "moto" => return None,
            _ => {
                options.s3.credentials = sets3lock::Credentials::Fixed(
                    sets3lock::AwsCredentials::new(self.access_key.clone(), "wrong-secret"),
                )
            }
        }
        Some(options)
    }

    /// A proxy in front of the server, and the options that send through it.
    pub fn proxied(&self) -> (proxy::LossyProxy, Options) {
        let proxy = proxy::LossyProxy::start(&self.origin());
        let options = self.options_at(&proxy.endpoint);
        (proxy, options)
    }

    pub fn url(&self, key: &str) -> String {
        format!("{}://{}/{}", self.scheme, self.bucket, key)
    }

    /// An emulator must refuse a second create of one object, or every test on it would pass
    /// by testing nothing.
    fn probe(&self) {
        let client = self.client().expect("a client");
        let key = fresh_key("emulator-probe");
        let create = |n: u8| sets3lock::proto::Intent::PutIfNoneMatch {
            body: format!("{{\"probe\":{n}}}").into(),
        };
        let first = client.send(&key, &create(1));
        let second = client.send(&key, &create(2));
        client.discard(&key);
        assert!(
            matches!(first, sets3lock::proto::Response::Written { .. })
                && second == sets3lock::proto::Response::Exists,
            "{} does not refuse a second create ({first:?}, then {second:?}): tests on it would prove nothing",
            self.name
        );
    }

    /// A client of the library for the stores the raw S3 requests cannot reach.
    fn client(&self) -> Option<sets3lock::Client> {
        (self.scheme != sets3lock::proto::Scheme::S3).then(|| {
            sets3lock::Client::in_store(self.scheme, &self.bucket, &self.options()).expect("client")
        })
    }
}

impl RawAccess for Server {
    fn parts(&self) -> (&str, &str, &str, &str) {
        (&self.endpoint, &self.access_key, &self.secret, &self.bucket)
    }

    fn store_client(&self) -> Option<sets3lock::Client> {
        self.client()
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
    fn acquire(url: &str, options: Options, wait: Wait) -> Result<Held<Self>, Error>;
    /// Acquires through `locker` (which may have acquired before).
    fn acquire_with(
        locker: &sets3lock::generic::Locker<Self>,
        wait: Wait,
    ) -> Result<Held<Self>, Error>;
    fn release(held: Held<Self>) -> Result<ReleaseOutcome, Error>;
    /// Waits up to `timeout` for the hold to be lost.
    fn wait_lost(held: &Held<Self>, timeout: Duration) -> Option<Loss>;
    fn with_lock<T>(
        url: &str,
        options: Options,
        wait: Wait,
        work: impl FnOnce(&Held<Self>) -> T,
    ) -> Result<(T, ReleaseOutcome), Error>;
    /// Takes a slot of the semaphore `url` of `slots` slots.
    fn take_slot(url: &str, slots: u32, options: Options, wait: Wait) -> Result<Held<Self>, Error>;
    /// The watcher's next event.
    fn next_event(
        watcher: &mut sets3lock::generic::Watcher<Self>,
    ) -> Option<sets3lock::proto::WatchEvent>;
    /// Campaigns until elected.
    fn campaign(e: &sets3lock::generic::Election<Self>) -> Result<Held<Self>, Error>;
    /// The leader now.
    fn leader(e: &sets3lock::generic::Election<Self>) -> Result<sets3lock::proto::Sighting, Error>;
    /// Acquires every key of `keys` through one client, in order.
    fn acquire_many(
        locks: &sets3lock::generic::Locks<Self>,
        keys: &[String],
        wait: Wait,
    ) -> Vec<Result<Held<Self>, Error>>;
}

impl Driver for Tokio {
    fn acquire(url: &str, options: Options, wait: Wait) -> Result<Held<Self>, Error> {
        let locker = sets3lock::Locker::new(url, options)?;
        runtime().block_on(locker.acquire(wait))
    }

    fn acquire_with(
        locker: &sets3lock::generic::Locker<Self>,
        wait: Wait,
    ) -> Result<Held<Self>, Error> {
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
        options: Options,
        wait: Wait,
        work: impl FnOnce(&Held<Self>) -> T,
    ) -> Result<(T, ReleaseOutcome), Error> {
        let locker = sets3lock::Locker::new(url, options)?;
        runtime().block_on(locker.with_lock(wait, async |held| work(held)))
    }

    fn take_slot(url: &str, slots: u32, options: Options, wait: Wait) -> Result<Held<Self>, Error> {
        let semaphore = sets3lock::Semaphore::new(url, slots, options)?;
        runtime().block_on(semaphore.acquire(wait))
    }

    fn next_event(
        watcher: &mut sets3lock::generic::Watcher<Self>,
    ) -> Option<sets3lock::proto::WatchEvent> {
        runtime().block_on(watcher.next())
    }

    fn campaign(e: &sets3lock::generic::Election<Self>) -> Result<Held<Self>, Error> {
        runtime().block_on(e.campaign())
    }

    fn leader(e: &sets3lock::generic::Election<Self>) -> Result<sets3lock::proto::Sighting, Error> {
        runtime().block_on(e.leader())
    }

    fn acquire_many(
        locks: &sets3lock::generic::Locks<Self>,
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
    fn acquire(url: &str, options: Options, wait: Wait) -> Result<Held<Self>, Error> {
        sets3lock::blocking::Locker::new(url, options)?.acquire(wait)
    }

    fn acquire_with(
        locker: &sets3lock::generic::Locker<Self>,
        wait: Wait,
    ) -> Result<Held<Self>, Error> {
        locker.acquire(wait)
    }

    fn release(held: Held<Self>) -> Result<ReleaseOutcome, Error> {
        held.release()
    }

    fn wait_lost(held: &Held<Self>, timeout: Duration) -> Option<Loss> {
        held.wait_lost(Some(timeout))
    }

    fn with_lock<T>(
        url: &str,
        options: Options,
        wait: Wait,
        work: impl FnOnce(&Held<Self>) -> T,
    ) -> Result<(T, ReleaseOutcome), Error> {
        sets3lock::blocking::Locker::new(url, options)?.with_lock(wait, work)
    }

    fn take_slot(url: &str, slots: u32, options: Options, wait: Wait) -> Result<Held<Self>, Error> {
        sets3lock::blocking::Semaphore::new(url, slots, options)?.acquire(wait)
    }

    fn next_event(
        watcher: &mut sets3lock::generic::Watcher<Self>,
    ) -> Option<sets3lock::proto::WatchEvent> {
        watcher.next()
    }

    fn campaign(e: &sets3lock::generic::Election<Self>) -> Result<Held<Self>, Error> {
        e.campaign()
    }

    fn leader(e: &sets3lock::generic::Election<Self>) -> Result<sets3lock::proto::Sighting, Error> {
        e.leader()
    }

    fn acquire_many(
        locks: &sets3lock::generic::Locks<Self>,
        keys: &[String],
        wait: Wait,
    ) -> Vec<Result<Held<Self>, Error>> {
        keys.iter().map(|k| locks.acquire(k, wait)).collect()
    }
}
