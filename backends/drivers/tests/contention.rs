//! Mutual exclusion across OS processes on a real server: 8 processes × 50 critical sections
//! on one key, each section witnessed outside the lock by two O_APPEND writes (start, end) to
//! one file. Any overlap shows as two starts in a row.
//!
//! The test re-runs its own binary as the worker processes (`SETS3LOCK_WORKER=...`).

mod support;

use sets3lock::proto::ReleaseOutcome;
use sets3lock::Wait;
use std::io::Write;
use std::process::Command;
use std::time::{Duration, Instant};

const PROCESSES: usize = 8;
const SECTIONS: usize = 50;

/// The worker: when run as a child, acquire, witness, release, SECTIONS times.
#[test]
fn worker() {
    let Ok(spec) = std::env::var("SETS3LOCK_WORKER") else {
        return;
    };
    let mut parts = spec.splitn(3, '|');
    let (server, url, witness) = (
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
    );
    let s = support::real(if server == "ministack" {
        "ministack"
    } else {
        "seaweedfs"
    })
    .expect("server env");
    let mut options = s.options();
    options.lock.poll =
        sets3lock::proto::Backoff::new(Duration::from_millis(20), Duration::from_millis(250));
    let locker = sets3lock::blocking::Locker::new(url, options).expect("locker");
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(witness)
        .expect("witness");
    let pid = std::process::id();
    for i in 0..SECTIONS {
        let held = locker
            .acquire(Wait::Timeout(Duration::from_secs(600)))
            .expect("acquire");
        file.write_all(format!("S {pid} {i}\n").as_bytes())
            .expect("write");
        std::thread::sleep(Duration::from_millis(2));
        file.write_all(format!("E {pid} {i}\n").as_bytes())
            .expect("write");
        assert_eq!(held.release().expect("release"), ReleaseOutcome::Deleted);
    }
}

fn contend(server: &'static str) {
    let Some(s) = support::real(server) else {
        return;
    };
    let key = support::fresh_key("contention");
    let dir = std::env::temp_dir().join(format!("sets3lock-contention-{}", support::rand_u64()));
    std::fs::create_dir_all(&dir).expect("dir");
    let witness = dir.join("witness");
    let started = Instant::now();
    let children: Vec<_> = (0..PROCESSES)
        .map(|_| {
            Command::new(std::env::current_exe().expect("exe"))
                .args(["--exact", "worker", "--nocapture", "--test-threads", "1"])
                .env(
                    "SETS3LOCK_WORKER",
                    format!("{server}|{}|{}", s.url(&key), witness.display()),
                )
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("spawn worker")
        })
        .collect();
    for mut child in children {
        assert!(child.wait().expect("wait").success(), "a worker failed");
    }
    let elapsed = started.elapsed();
    let log = std::fs::read_to_string(&witness).expect("witness");
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(
        lines.len(),
        2 * PROCESSES * SECTIONS,
        "every section completed"
    );
    for pair in lines.chunks(2) {
        let (start, end) = (pair[0], pair[1]);
        assert!(
            start.starts_with("S ") && end.starts_with("E ") && start[2..] == end[2..],
            "overlap: {start:?} then {end:?}"
        );
    }
    eprintln!(
        "{server}: {PROCESSES} processes x {SECTIONS} sections, zero overlaps, {:.1?} ({:.1} sections/s)",
        elapsed,
        (PROCESSES * SECTIONS) as f64 / elapsed.as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn eight_processes_on_seaweedfs() {
    if std::env::var("SETS3LOCK_WORKER").is_err() {
        contend("seaweedfs");
    }
}

#[test]
fn eight_processes_on_ministack() {
    if std::env::var("SETS3LOCK_WORKER").is_err() {
        contend("ministack");
    }
}
