//! What one held lock costs, with 1, 100 and 10,000 keys held at once by one process: memory
//! (resident set growth per lock) and requests (per lock per minute while held), for
//! [`Locks`] (one client, one hub driving every lock) side by side with the baseline of one
//! [`Locker`] per key (a client and a task per lock), against the mock over HTTP (or a real
//! server: `BENCH_SERVER=seaweedfs`). Also what one observer costs: requests per minute of a
//! [`Watcher`] on a lock that does not change; what a semaphore waiter costs beside a lock
//! waiter; and how fairly a semaphore's slots go round its waiters.
//!
//! `cargo bench -p sets3lock --bench many`; environment: `BENCH_KEYS` (default
//! `1,100,1000,10000`), `BENCH_BASELINE_MAX` (the most keys the baseline is run with, default
//! 1000), `BENCH_WINDOW` (seconds held while requests are counted, default 60),
//! `BENCH_SERVER` (`mock`, or `seaweedfs` with its variables from `scripts/s3-server.sh`).

#[path = "../tests/support/http1.rs"]
#[allow(dead_code, unreachable_pub)]
mod http1;
#[path = "../tests/support/mock_server.rs"]
#[allow(dead_code, unreachable_pub)]
mod mock_server;

use sets3lock::proto::{WatchConfig, WatchEvent};
use sets3lock::{AwsCredentials, Options, Wait};
use sets3lock::{Locker, Locks, Semaphore, Watcher};
use std::time::{Duration, Instant};

struct Target {
    endpoint: String,
    key: String,
    secret: String,
    bucket: String,
    /// Keeps the mock serving.
    _mock: Option<mock_server::MockServer>,
}

fn target() -> Target {
    match std::env::var("BENCH_SERVER").as_deref() {
        Ok("seaweedfs") => {
            let var = |s: &str| {
                let v = format!("SETS3LOCK_SEAWEEDFS_{s}");
                std::env::var(&v).unwrap_or_else(|_| panic!("{v} is not set"))
            };
            Target {
                endpoint: var("ENDPOINT"),
                key: var("ACCESS_KEY"),
                secret: var("SECRET"),
                bucket: var("BUCKET"),
                _mock: None,
            }
        }
        _ => {
            let mock = mock_server::MockServer::start(Default::default(), "bench");
            Target {
                endpoint: mock.endpoint.clone(),
                key: mock.access_key.clone(),
                secret: mock.secret.clone(),
                bucket: "bench".into(),
                _mock: Some(mock),
            }
        }
    }
}

fn options(t: &Target) -> Options {
    let mut options = Options::default();
    options.s3.endpoint = Some(sets3lock::parse_endpoint(&t.endpoint).expect("endpoint"));
    options.s3.credentials =
        sets3lock::Credentials::Fixed(AwsCredentials::new(t.key.clone(), t.secret.clone()));
    options
}

/// Resident set size, in bytes.
fn rss() -> f64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: f64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0.0);
    pages * 4096.0
}

/// One measurement: bytes per lock, milliseconds per acquisition, requests per lock per
/// minute while held.
struct Cost {
    bytes: f64,
    acquire_ms: f64,
    per_minute: f64,
}

fn keys(n: usize) -> Vec<String> {
    let run = std::process::id();
    (0..n).map(|i| format!("bench-{run}/{n}/{i}")).collect()
}

async fn with_locks(t: &Target, n: usize, window: Duration, tag: &str) -> Cost {
    let before = rss();
    let locks = Locks::new(&format!("s3://{}", t.bucket), options(t)).expect("locks");
    let started = Instant::now();
    let mut held = Vec::with_capacity(n);
    for k in keys(n) {
        held.push(
            locks
                .acquire(&format!("{tag}/{k}"), Wait::No)
                .await
                .expect("acquire"),
        );
    }
    let acquire_ms = started.elapsed().as_secs_f64() * 1e3 / n as f64;
    let requests = locks.requests();
    tokio::time::sleep(window).await;
    let per_minute = (locks.requests() - requests) as f64 / n as f64 / window.as_secs_f64() * 60.0;
    let bytes = (rss() - before) / n as f64;
    assert!(held.iter().all(|h| h.is_held()), "a lock was lost");
    for h in held {
        h.release().await.expect("release");
    }
    locks.shutdown().await;
    Cost {
        bytes,
        acquire_ms,
        per_minute,
    }
}

async fn with_lockers(t: &Target, n: usize, window: Duration, tag: &str) -> Cost {
    let before = rss();
    let started = Instant::now();
    let mut held = Vec::with_capacity(n);
    for k in keys(n) {
        let url = format!("s3://{}/{tag}/{k}", t.bucket);
        let locker = Locker::new(&url, options(t)).expect("locker");
        let h = locker.acquire(Wait::No).await.expect("acquire");
        held.push((locker, h));
    }
    let acquire_ms = started.elapsed().as_secs_f64() * 1e3 / n as f64;
    let requests: u64 = held.iter().map(|(l, _)| l.requests()).sum();
    tokio::time::sleep(window).await;
    let after: u64 = held.iter().map(|(l, _)| l.requests()).sum();
    let per_minute = (after - requests) as f64 / n as f64 / window.as_secs_f64() * 60.0;
    let bytes = (rss() - before) / n as f64;
    for (locker, h) in held {
        h.release().await.expect("release");
        locker.shutdown().await;
    }
    Cost {
        bytes,
        acquire_ms,
        per_minute,
    }
}

/// Requests a minute of one watcher on a lock that does not change, at the default cadence.
async fn observer(t: &Target, window: Duration) -> f64 {
    let url = format!("s3://{}/bench-{}/watched", t.bucket, std::process::id());
    let locks = Locks::new(&url, options(t)).expect("locks");
    let held = locks
        .acquire(&url["s3://".len() + t.bucket.len() + 1..], Wait::No)
        .await
        .expect("acquire");
    let mut watcher = Watcher::new(&url, options(t), WatchConfig::default()).expect("watcher");
    let first = watcher.next().await;
    assert!(matches!(first, Some(WatchEvent::Changed(_))), "{first:?}");
    let before = watcher.requests();
    let started = Instant::now();
    // Nothing changes (renewals are not changes): `next` polls until the window ends.
    let _ = tokio::time::timeout(window, watcher.next()).await;
    let per_minute = (watcher.requests() - before) as f64 / started.elapsed().as_secs_f64() * 60.0;
    held.release().await.expect("release");
    per_minute
}

/// Requests a minute of one waiter on a full semaphore of `slots` slots (1: a lock's waiter).
async fn waiter(t: &Target, slots: u32, window: Duration) -> f64 {
    let name = format!(
        "s3://{}/bench-{}/waiting-{slots}",
        t.bucket,
        std::process::id()
    );
    let holders = Semaphore::new(&name, slots, options(t)).expect("semaphore");
    let mut held = Vec::new();
    for _ in 0..slots {
        held.push(holders.acquire(Wait::No).await.expect("a slot"));
    }
    let semaphore = Semaphore::new(&name, slots, options(t)).expect("semaphore");
    let waited = tokio::time::timeout(window, semaphore.acquire(Wait::Forever)).await;
    assert!(waited.is_err(), "a full semaphore let a waiter in");
    let per_minute = semaphore.requests() as f64 / window.as_secs_f64() * 60.0;
    for h in held {
        h.release().await.expect("release");
    }
    semaphore.shutdown().await;
    per_minute
}

/// `waiters` tasks taking turns on `slots` slots for `window` (hold 100 ms, then ask again
/// at once): each task's entries, and Jain's fairness index over them (1: perfectly even).
async fn fairness(t: &Target, slots: u32, waiters: usize, window: Duration) -> (Vec<usize>, f64) {
    let name = format!("s3://{}/bench-{}/fair", t.bucket, std::process::id());
    let mut tasks = Vec::new();
    for _ in 0..waiters {
        let mut o = options(t);
        o.lock.poll =
            sets3lock::proto::Backoff::new(Duration::from_millis(50), Duration::from_millis(500));
        let semaphore = Semaphore::new(&name, slots, o).expect("semaphore");
        tasks.push(tokio::spawn(async move {
            let end = Instant::now() + window;
            let mut entries = 0;
            while Instant::now() < end {
                let Ok(held) = semaphore
                    .acquire(Wait::Timeout(Duration::from_secs(10)))
                    .await
                else {
                    continue;
                };
                entries += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
                held.release().await.expect("release");
            }
            semaphore.shutdown().await;
            entries
        }));
    }
    let mut entries = Vec::new();
    for t in tasks {
        entries.push(t.await.expect("task"));
    }
    let (sum, squares) = entries
        .iter()
        .fold((0.0, 0.0), |(s, q), &e| (s + e as f64, q + (e * e) as f64));
    (
        entries.clone(),
        sum * sum / (entries.len() as f64 * squares),
    )
}

fn main() {
    let ns: Vec<usize> = std::env::var("BENCH_KEYS")
        .unwrap_or_else(|_| "1,100,1000,10000".into())
        .split(',')
        .filter_map(|n| n.trim().parse().ok())
        .collect();
    let window = Duration::from_secs(
        std::env::var("BENCH_WINDOW")
            .ok()
            .and_then(|w| w.parse().ok())
            .unwrap_or(60),
    );
    let baseline_max: usize = std::env::var("BENCH_BASELINE_MAX")
        .ok()
        .and_then(|w| w.parse().ok())
        .unwrap_or(1000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let t = target();
    let server = if t._mock.is_some() {
        "the mock over HTTP"
    } else {
        "SeaweedFS"
    };
    println!(
        "Per-lock cost, {server}, lease 60 s, {} s held per row:",
        window.as_secs()
    );
    println!();
    println!("| keys held | client | memory per lock | acquire, ms per lock | requests per lock per minute |");
    println!("|---:|---|---:|---:|---:|");
    runtime.block_on(async {
        for &n in &ns {
            // Baseline first: its freed memory is reused by the next, never the other way. It
            // keeps a connection per lock, and the mock's end of each is in this process too:
            // past `BENCH_BASELINE_MAX` keys it would run out of file descriptors.
            let mut rows = Vec::new();
            if n <= baseline_max {
                rows.push(("one Locker per key", with_lockers(&t, n, window, "lockers").await));
            } else {
                println!("| {n} | one Locker per key | (not run: a connection per lock) | | |");
            }
            rows.push(("one Locks (one hub)", with_locks(&t, n, window, "locks").await));
            for (client, c) in rows {
                println!(
                    "| {n} | {client} | {:.1} KiB | {:.2} | {:.2} |",
                    c.bytes / 1024.0,
                    c.acquire_ms,
                    c.per_minute
                );
            }
        }
        println!();
        let per_minute = observer(&t, window).await;
        println!(
            "Observer (WatchConfig::default(), 2 s interval): {per_minute:.1} requests per minute on an unchanged lock (30 expected)"
        );
        let lock = waiter(&t, 1, window).await;
        let three = waiter(&t, 3, window).await;
        println!(
            "Waiting (default polling, 0.1 to 3 s): a lock's waiter {lock:.1} requests per minute; a waiter on a full semaphore of 3 {three:.1} ({:.2}x)",
            three / lock
        );
        let (entries, index) = fairness(&t, 2, 6, window).await;
        println!(
            "Fairness: 6 tasks on 2 slots for {} s (hold 100 ms, ask again at once; polls 50 to 500 ms): entries {entries:?}, Jain's index {index:.3}",
            window.as_secs()
        );
    });
}
