//! The blocking face without tokio: `scripts/test.sh` runs this binary built with
//! `--no-default-features` (no tokio, no reqwest in the build: CI checks `cargo tree`), against
//! SeaweedFS. One lock and a `Locks` of two keys are held, renewed and released; the process
//! runs one thread per held lock and no other.

use sets3lock::blocking::{Locker, Locks};
use sets3lock::{Options, ReleaseOutcome, Scheme, Wait};
use std::time::Duration;

/// The process's thread count, from `/proc/self/status`.
fn threads() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .and_then(|n| n.trim().parse().ok())
        })
        .unwrap_or(0)
}

/// SeaweedFS from the variables `scripts/s3-server.sh` writes; `None` (skipped) when it is
/// not running and not required.
fn seaweedfs() -> Option<(Options, String)> {
    let var = |n: &str| std::env::var(n).ok();
    let Some(endpoint) = var("SETS3LOCK_SEAWEEDFS_ENDPOINT") else {
        assert!(
            var("SETS3LOCK_REQUIRE_S3").as_deref() != Some("1"),
            "SeaweedFS is not running: bash scripts/s3-server.sh start seaweedfs"
        );
        eprintln!("skipped: SeaweedFS is not running");
        return None;
    };
    let mut options = Options::default();
    options.set_endpoint(Scheme::S3, sets3lock::parse_endpoint(&endpoint).ok()?);
    options.s3.credentials = sets3lock::Credentials::Fixed(sets3lock::AwsCredentials::new(
        var("SETS3LOCK_SEAWEEDFS_ACCESS_KEY")?,
        var("SETS3LOCK_SEAWEEDFS_SECRET")?,
    ));
    options.lock.lease = Duration::from_secs(3);
    Some((options, var("SETS3LOCK_SEAWEEDFS_BUCKET")?))
}

#[test]
fn locks_are_held_renewed_and_released_with_one_thread_each() {
    let Some((options, bucket)) = seaweedfs() else {
        return;
    };
    // On a thread of its own, so that a driver that never answers fails the test in 30 s
    // rather than hanging it.
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        hold_and_release(options, &bucket);
        let _ = done.send(());
    });
    finished
        .recv_timeout(Duration::from_secs(30))
        .expect("held, renewed and released within 30 s (a panic above says why not)");
}

fn hold_and_release(options: Options, bucket: &str) {
    let run = std::process::id();
    let before = threads();
    let locker = Locker::new(
        &format!("s3://{bucket}/blocking-only/{run}/one"),
        options.clone(),
    )
    .expect("locker");
    let one = locker.acquire(Wait::No).expect("acquire");
    let locks = Locks::new(&format!("s3://{bucket}"), options).expect("locks");
    let a = locks
        .acquire(&format!("blocking-only/{run}/a"), Wait::No)
        .expect("a");
    let b = locks
        .acquire(&format!("blocking-only/{run}/b"), Wait::No)
        .expect("b");
    let held = threads();
    // Three leases' worth of renewals, on the drivers' threads.
    assert_eq!(one.wait_lost(Some(Duration::from_secs(4))), None);
    assert!(one.is_held() && a.is_held() && b.is_held());
    if cfg!(not(feature = "tokio")) {
        assert_eq!(held, before + 3, "one thread per held lock and no other");
    }
    for h in [one, a, b] {
        assert_eq!(h.release().expect("release"), ReleaseOutcome::Deleted);
    }
}
