//! Holds across processes from the command line, against the real local S3 servers: a hold
//! acquired in one process, renewed in a second, run under in a third and released in a
//! fourth while a waiter never gets in; a handle used after a takeover; and
//! `--hold-at-least` with `-n` runs from separate processes.

use crate::support;

use crate::support::command::{code, stderr, stdout, TestCommand};
use crate::support::{scratch_dir, RawAccess, Server};
use std::process::Output;
use std::time::{Duration, Instant};

/// The S3-compatible servers these tests run on.
fn servers() -> Vec<(&'static str, Server)> {
    ["seaweedfs", "ministack"]
        .into_iter()
        .filter_map(|name| support::real(name).map(|s| (name, s)))
        .collect()
}

fn run(s: &Server, args: &[&str]) -> Output {
    TestCommand::new(s)
        .env("XDG_CACHE_HOME", &scratch_dir("cache"))
        .args(args)
        .output()
}

/// The owner id in the lock object's record, if any.
fn owner(s: &Server, key: &str) -> Option<String> {
    let (_, body) = s.raw_get(key)?;
    let v: serde_json::Value = serde_json::from_slice(&body).ok()?;
    v.get("owner")?.as_str().map(str::to_owned)
}

fn etag(s: &Server, key: &str) -> Option<String> {
    s.raw_get(key).map(|(e, _)| e.as_str().to_owned())
}

fn lines(path: &str) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_hold_crosses_four_processes_and_a_waiter_never_gets_in_meanwhile() {
    for (name, s) in servers() {
        let key = support::fresh_key("cli-handle");
        let url = s.url(&key);
        let dir = scratch_dir("handle");
        let witness = format!("{dir}/witness");
        // Step 1: acquire, 6 s lease, nobody renewing it.
        let o = run(&s, &["acquire", "--lease", "6s", &url]);
        assert_eq!(code(&o), 0, "{name}: {}", stderr(&o));
        let handle = stdout(&o).trim().to_owned();
        assert!(
            handle.starts_with(&format!("{url}#sets3lock-hold:owner=")) && !handle.contains('\n'),
            "{name}: one line, the handle: {handle:?}"
        );
        let held_by = owner(&s, &key).expect("held");
        // A waiter, from another process, for the whole pipeline.
        let waiter = TestCommand::new(&s)
            .env("XDG_CACHE_HOME", &scratch_dir("cache"))
            .args(["-q", &url, "sh", "-c", &format!("echo W >> {witness}")])
            .spawn();
        let started = Instant::now();
        std::thread::sleep(Duration::from_secs(3));
        // Step 2: renew, in a second process.
        let o = run(&s, &["renew", &handle]);
        assert_eq!(code(&o), 0, "{name}: renew: {}", stderr(&o));
        std::thread::sleep(Duration::from_secs(3));
        // Step 3: a program under it, longer than the lease (renewed while it runs), kept.
        let script = format!("echo S >> {witness}; sleep 7; echo E >> {witness}");
        let o = run(&s, &["--handle", &handle, "--keep", "sh", "-c", &script]);
        assert_eq!(code(&o), 0, "{name}: --handle: {}", stderr(&o));
        std::thread::sleep(Duration::from_secs(3));
        assert_eq!(
            owner(&s, &key),
            Some(held_by.clone()),
            "{name}: still the hold"
        );
        assert_eq!(
            lines(&witness),
            ["S", "E"],
            "{name}: the waiter got in meanwhile"
        );
        assert!(
            started.elapsed() > Duration::from_secs(15),
            "over two leases went by"
        );
        // Step 4: release, in a fourth.
        let o = run(&s, &["release", &handle]);
        assert_eq!(code(&o), 0, "{name}: release: {}", stderr(&o));
        let o = waiter.wait_with_output().expect("the waiter ends");
        assert_eq!(code(&o), 0, "{name}: waiter: {}", stderr(&o));
        assert_eq!(lines(&witness), ["S", "E", "W"], "{name}");
        // The handle now names a hold that is over.
        let o = run(&s, &["renew", &handle]);
        assert_eq!(code(&o), 112, "{name}: {}", stderr(&o));
        assert!(stderr(&o).contains("has ended"), "{name}: {}", stderr(&o));
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn a_handle_used_after_its_lease_ran_out_and_someone_took_over_exits_112_and_changes_nothing() {
    for (name, s) in servers() {
        let key = support::fresh_key("cli-handle-late");
        let url = s.url(&key);
        let dir = scratch_dir("handle-late");
        let o = run(&s, &["acquire", "--lease", "2s", &url]);
        assert_eq!(code(&o), 0, "{name}: {}", stderr(&o));
        let handle = stdout(&o).trim().to_owned();
        let ours = owner(&s, &key).expect("held");
        // Someone waits out the lease and takes over, and holds on.
        let mut taker = TestCommand::new(&s)
            .args(["-q", "--lease", "30s", &url, "sleep", "60"])
            .spawn();
        let started = Instant::now();
        while owner(&s, &key).as_deref() == Some(ours.as_str()) {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "{name}: no takeover"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let before = etag(&s, &key);
        let ran = format!("{dir}/ran");
        for args in [
            vec!["renew", handle.as_str()],
            vec!["release", handle.as_str()],
            vec!["--handle", handle.as_str(), "touch", ran.as_str()],
        ] {
            let o = run(&s, &args);
            assert_eq!(code(&o), 112, "{name}: {args:?}: {}", stderr(&o));
            let err = stderr(&o);
            assert!(
                err.lines().count() == 1 && err.contains("taken over"),
                "{name}: {args:?}: one line saying what became of it: {err}"
            );
            assert_eq!(etag(&s, &key), before, "{name}: {args:?} changed the lock");
        }
        assert!(
            !std::path::Path::new(&ran).exists(),
            "{name}: the program ran"
        );
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(taker.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        )
        .expect("signal the taker");
        let _ = taker.wait();
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn hold_at_least_lets_one_run_in_per_period_and_the_next_right_after() {
    for (name, s) in servers() {
        let key = support::fresh_key("cli-hourly");
        let url = s.url(&key);
        let dir = scratch_dir("hourly");
        let witness = format!("{dir}/runs");
        let script = format!("echo run >> {witness}");
        let job = |s: &Server| {
            run(
                s,
                &[
                    "-n",
                    "--hold-at-least",
                    "6s",
                    "--lease",
                    "3s",
                    &url,
                    "sh",
                    "-c",
                    &script,
                ],
            )
        };
        let t0 = Instant::now();
        let first = job(&s);
        let first_done = Instant::now();
        assert_eq!(code(&first), 0, "{name}: {}", stderr(&first));
        // Three more runs within the period, from new processes: none gets in.
        for at in [
            Duration::from_millis(200),
            Duration::from_secs(2),
            Duration::from_millis(4500),
        ] {
            if let Some(wait) = (t0 + at).checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            let o = job(&s);
            assert_eq!(
                code(&o),
                111,
                "{name}: a run at {at:?} got in: {}",
                stderr(&o)
            );
        }
        assert_eq!(lines(&witness).len(), 1, "{name}");
        // Right after the period (6 s stretched by the drift bound, a second of the
        // headers' rounding, and the first run's own time): the next run gets in at once.
        let after = first_done + Duration::from_secs(8);
        if let Some(wait) = after.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let o = job(&s);
        assert_eq!(
            code(&o),
            0,
            "{name}: the run after the period: {}",
            stderr(&o)
        );
        assert_eq!(lines(&witness).len(), 2, "{name}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// `release HANDLE` while a `--handle` run still works under it: the release rests the lock
/// (it says so, exit 0), a `-n` run meanwhile is refused (111), the running program is
/// stopped at its next renewal (112), and the lock is free again about a lease later.
#[test]
fn releasing_a_handle_in_use_rests_the_lock_and_stops_the_program_under_it() {
    for (name, s) in servers() {
        let key = support::fresh_key("cli-handle-in-use");
        let url = s.url(&key);
        let dir = scratch_dir("handle-in-use");
        let witness = format!("{dir}/witness");
        let o = run(&s, &["acquire", "--lease", "6s", &url]);
        assert_eq!(code(&o), 0, "{name}: {}", stderr(&o));
        let handle = stdout(&o).trim().to_owned();
        let script = format!("echo S >> {witness}; sleep 30; echo E >> {witness}");
        let runner = TestCommand::new(&s)
            .env("XDG_CACHE_HOME", &scratch_dir("cache"))
            .args(["--handle", &handle, "sh", "-c", &script])
            .spawn();
        let started = Instant::now();
        while !lines(&witness).contains(&"S".to_owned()) {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "{name}: never ran"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let o = run(&s, &["release", &handle]);
        assert_eq!(code(&o), 0, "{name}: release: {}", stderr(&o));
        assert!(
            stderr(&o).contains("rests"),
            "{name}: says it rests: {}",
            stderr(&o)
        );
        let released = Instant::now();
        let o = run(&s, &["-n", &url, "true"]);
        assert_eq!(code(&o), 111, "{name}: -n during the rest: {}", stderr(&o));
        let o = runner.wait_with_output().expect("wait");
        assert_eq!(code(&o), 112, "{name}: the runner learns: {}", stderr(&o));
        assert!(
            !lines(&witness).contains(&"E".to_owned()),
            "{name}: stopped early"
        );
        // Free again once the rest (a stretched lease, 6.1 s) is over by the store's clock.
        let mut got_in = None;
        for _ in 0..40 {
            if code(&run(&s, &["-n", &url, "true"])) == 0 {
                got_in = Some(released.elapsed());
                break;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        let got_in = got_in.unwrap_or_else(|| panic!("{name}: never free again"));
        assert!(
            got_in >= Duration::from_secs(5),
            "{name}: in after {got_in:?}, before the rest was over"
        );
    }
}

/// `--lease 0`: a program under the handle never renews, so it would never learn of a
/// release. Neither `release` nor a second `--handle` run touches its record (exit 111, the
/// ETag named for `sets3lock unlock`); the runner keeps the lock and frees it at its end.
#[test]
fn a_lease_0_handle_in_use_is_neither_released_nor_continued() {
    for (name, s) in servers() {
        let key = support::fresh_key("cli-handle-lease-0");
        let url = s.url(&key);
        let dir = scratch_dir("handle-lease-0");
        let witness = format!("{dir}/witness");
        let o = run(&s, &["acquire", "--lease", "0", &url]);
        assert_eq!(code(&o), 0, "{name}: {}", stderr(&o));
        let handle = stdout(&o).trim().to_owned();
        let script = format!("echo S >> {witness}; sleep 4; echo E >> {witness}");
        let runner = TestCommand::new(&s)
            .env("XDG_CACHE_HOME", &scratch_dir("cache"))
            .args(["--handle", &handle, "sh", "-c", &script])
            .spawn();
        let started = Instant::now();
        while !lines(&witness).contains(&"S".to_owned()) {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "{name}: never ran"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let running = etag(&s, &key).expect("held");
        for args in [
            vec!["release", handle.as_str()],
            vec!["--handle", handle.as_str(), "true"],
        ] {
            let o = run(&s, &args);
            assert_eq!(code(&o), 111, "{name}: {args:?}: {}", stderr(&o));
            assert!(
                stderr(&o).contains("may still run under this hold")
                    && stderr(&o).contains("sets3lock unlock"),
                "{name}: {args:?} says why and what to do: {}",
                stderr(&o)
            );
            assert_eq!(
                etag(&s, &key).as_ref(),
                Some(&running),
                "{name}: {args:?} wrote"
            );
        }
        let o = runner.wait_with_output().expect("wait");
        assert_eq!(code(&o), 0, "{name}: the runner: {}", stderr(&o));
        assert_eq!(lines(&witness), ["S", "E"], "{name}: ran to its end");
        assert_eq!(etag(&s, &key), None, "{name}: released at the runner's end");
    }
}
