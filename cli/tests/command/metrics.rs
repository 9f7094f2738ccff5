//! `--metrics-textfile`: the textfile a run leaves, read back and checked against what happened
//! (one contended acquisition, renewals, the release, the program's exit status and run time),
//! checked by `promtool check metrics` (Debian's prometheus package; `scripts/test.sh`
//! installs it), never seen half-written by a reader in a loop, and bad paths and labels
//! refused with one line.

use crate::support;

use crate::support::command::{code, stderr, TestCommand};
use crate::support::{scratch_dir, Server};
use std::collections::BTreeMap;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn seaweedfs() -> Option<Server> {
    support::real("seaweedfs")
}

fn run(s: &Server, args: &[&str]) -> Output {
    TestCommand::new(s)
        .env("XDG_CACHE_HOME", &scratch_dir("cache"))
        .args(args)
        .output()
}

/// The samples of a textfile: `name{labels}` to value. Fails on a line that is not a comment
/// or a sample.
fn samples(text: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("{line:?}"));
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("{line:?}"));
        out.insert(series.to_owned(), value);
    }
    out
}

/// The sum over the series of `name` whose labels include every `label="value"` in `want`.
fn sum(samples: &BTreeMap<String, f64>, name: &str, want: &[&str]) -> f64 {
    samples
        .iter()
        .filter(|(series, _)| {
            series.split('{').next() == Some(name) && want.iter().all(|w| series.contains(w))
        })
        .map(|(_, v)| v)
        .sum()
}

/// `promtool check metrics` on `path`, if promtool is here (required under
/// SETS3LOCK_REQUIRE_S3=1, as in CI).
fn promtool(path: &str) {
    let Ok(file) = std::fs::File::open(path) else {
        panic!("no textfile at {path}");
    };
    match Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(file)
        .output()
    {
        Ok(o) => assert!(
            o.status.success(),
            "promtool check metrics: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => support::raw::unavailable(
            &format!("promtool cannot run ({e})"),
            "apt-get install prometheus (scripts/test.sh does)",
        ),
    }
}

#[test]
fn a_runs_textfile_says_what_happened_and_is_never_seen_half_written() {
    let Some(s) = seaweedfs() else { return };
    let key = support::fresh_key("cli-metrics");
    let url = s.url(&key);
    let dir = scratch_dir("metrics");
    let second = format!("{dir}/second.prom");
    // Another process holds the lock (`sets3lock acquire` leaves it held) until the run is
    // seen waiting for it (its textfile says so); the run then goes on 3.2 s with a 3 s lease
    // (renewed every second) and exits 3.
    let o = run(&s, &["acquire", "--lease", "60s", &url]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let handle = String::from_utf8_lossy(&o.stdout).trim().to_owned();
    let mut waiter = TestCommand::new(&s)
        .env("XDG_CACHE_HOME", &scratch_dir("cache"))
        .args([
            "--metrics-textfile",
            &second,
            "--metrics-label",
            "task=nightly",
            "--lease",
            "3s",
            &url,
            "sh",
            "-c",
            "sleep 3.2; exit 3",
        ])
        .spawn();
    let waiting = Instant::now();
    while !std::fs::read_to_string(&second)
        .is_ok_and(|t| sum(&samples(&t), "sets3lock_locks_waiting", &[]) == 1.0)
    {
        assert!(
            waiting.elapsed() < Duration::from_secs(20),
            "the run never waited: {:?}",
            std::fs::read_to_string(&second)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = run(&s, &["release", &handle]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // A reader in a loop meanwhile: every read is a whole file.
    let mut reads = 0;
    // Each write is a new file renamed into place: a new inode each time (an in-place write
    // would keep one).
    let mut inodes = std::collections::BTreeSet::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = waiter.try_wait().expect("wait") {
            break status;
        }
        assert!(Instant::now() < deadline, "the second run did not end");
        if let Ok(meta) = std::fs::metadata(&second) {
            inodes.insert(std::os::unix::fs::MetadataExt::ino(&meta));
        }
        if let Ok(text) = std::fs::read_to_string(&second) {
            reads += 1;
            let helps = text.lines().filter(|l| l.starts_with("# HELP")).count();
            let types = text.lines().filter(|l| l.starts_with("# TYPE")).count();
            assert!(
                text.ends_with('\n') && helps == types && text.contains("sets3lock_job_running"),
                "read {reads} is not a whole file:\n{text}"
            );
            samples(&text);
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    assert!(reads > 100, "only {reads} reads");
    assert!(
        inodes.len() >= 3,
        "replaced whole only {} times",
        inodes.len()
    );
    assert_eq!(status.code(), Some(3));
    promtool(&second);
    let text = std::fs::read_to_string(&second).expect("the textfile");
    let got = samples(&text);
    let job = r#"task="nightly""#;
    let lock = format!(r#"lock="{url}""#);
    let lock = lock.as_str();
    assert_eq!(sum(&got, "sets3lock_job_exit_code", &[job]), 3.0, "{text}");
    assert_eq!(sum(&got, "sets3lock_job_running", &[job]), 0.0, "{text}");
    let ran = sum(&got, "sets3lock_job_duration_seconds", &[job]);
    assert!((3.2..10.0).contains(&ran), "ran {ran} s:\n{text}");
    let waited = [lock, job, r#"outcome="acquired""#, r#"contended="true""#];
    assert_eq!(
        sum(&got, "sets3lock_acquire_duration_seconds_count", &waited),
        1.0,
        "{text}"
    );
    assert_eq!(sum(&got, "sets3lock_locks_waiting", &[lock]), 0.0, "{text}");
    let renewed = sum(&got, "sets3lock_renewals_total", &[lock, r#"result="ok""#]);
    assert!(renewed >= 2.0, "renewed {renewed} times:\n{text}");
    assert_eq!(
        sum(
            &got,
            "sets3lock_releases_total",
            &[lock, r#"outcome="deleted""#]
        ),
        1.0
    );
    assert_eq!(sum(&got, "sets3lock_locks_held", &[lock]), 0.0, "{text}");
    assert_eq!(
        sum(&got, "sets3lock_hold_duration_seconds_count", &[lock]),
        1.0
    );
    assert_eq!(
        sum(
            &got,
            "sets3lock_store_requests_total",
            &[lock, r#"method="PUT""#, r#"result="written""#]
        ),
        1.0 + renewed,
        "the grant and each renewal:\n{text}"
    );
    assert_eq!(
        sum(
            &got,
            "sets3lock_store_requests_total",
            &[lock, r#"method="DELETE""#]
        ),
        1.0,
        "{text}"
    );
}

#[test]
fn a_run_that_cannot_lock_says_so_in_its_textfile() {
    let Some(s) = seaweedfs() else { return };
    let key = support::fresh_key("cli-metrics-busy");
    let url = s.url(&key);
    let dir = scratch_dir("metrics-busy");
    let path = format!("{dir}/busy.prom");
    let holder = TestCommand::new(&s)
        .env("XDG_CACHE_HOME", &scratch_dir("cache"))
        .args([&url, "sleep", "3"])
        .spawn();
    let started = Instant::now();
    loop {
        let o = run(&s, &["--metrics-textfile", &path, "-n", &url, "true"]);
        if code(&o) == 111 {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "never busy");
        std::thread::sleep(Duration::from_millis(100));
    }
    promtool(&path);
    let got = samples(&std::fs::read_to_string(&path).expect("textfile"));
    assert_eq!(sum(&got, "sets3lock_job_exit_code", &[]), 111.0);
    let busy = [r#"outcome="busy""#, r#"contended="true""#];
    assert_eq!(
        sum(&got, "sets3lock_acquire_duration_seconds_count", &busy),
        1.0
    );
    assert_eq!(sum(&got, "sets3lock_job_start_timestamp_seconds", &[]), 0.0);
    holder.wait_with_output().expect("holder");
}

#[test]
fn bad_textfile_paths_and_labels_are_refused_with_one_line() {
    // No server needed: these are refused before anything is sent.
    let s = support::offline();
    for (args, says) in [
        (
            vec![
                "--metrics-textfile",
                "/nonexistent-dir/x.prom",
                "s3://bucket/k",
                "true",
            ],
            "existing directory",
        ),
        (
            vec![
                "--metrics-textfile",
                "/tmp/x.prom",
                "--metrics-label",
                "lock=x",
                "s3://bucket/k",
                "true",
            ],
            "is taken",
        ),
        (
            vec![
                "--metrics-textfile",
                "/tmp/x.prom",
                "--metrics-label",
                "job=x",
                "s3://bucket/k",
                "true",
            ],
            "is taken",
        ),
        (
            vec![
                "--metrics-textfile",
                "/tmp/x.prom",
                "--metrics-label",
                "job",
                "s3://bucket/k",
                "true",
            ],
            "not name=value",
        ),
        (
            vec!["--metrics-label", "task=x", "s3://bucket/k", "true"],
            "--metrics-textfile",
        ),
    ] {
        let o = run(&s, &args);
        assert_eq!(code(&o), 100, "{args:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(
            e.contains(says) && e.trim().lines().count() == 1,
            "{args:?}: {e}"
        );
    }
}

/// `watch --metrics-textfile` over two locks: one whose holder was killed (stale after a
/// lease, held far longer than it ran), one fenced and released (its token kept).
#[test]
fn a_watchers_textfile_shows_a_stale_holder_and_a_released_token() {
    let Some(s) = seaweedfs() else { return };
    let (k1, k2) = (
        support::fresh_key("cli-watch-stale"),
        support::fresh_key("cli-watch-fenced"),
    );
    let (u1, u2) = (s.url(&k1), s.url(&k2));
    let dir = scratch_dir("watch-metrics");
    let path = format!("{dir}/watch.prom");
    // A holder with a 2 s lease, killed while holding: its record goes stale.
    let mut killed = TestCommand::new(&s)
        .env("XDG_CACHE_HOME", &scratch_dir("cache"))
        .args(["--lease", "2s", &u1, "sleep", "30"])
        .spawn();
    let o = run(&s, &["--fenced", &u2, "true"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let mut watcher = TestCommand::new(&s)
        .args([
            "watch",
            "--interval",
            "300ms",
            "--metrics-textfile",
            &path,
            "--metrics-label",
            "env=test",
            &u1,
            &u2,
        ])
        .spawn();
    let started = Instant::now();
    let mut killed_at = None;
    let text = loop {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no stale holder in the textfile: {:?}",
            std::fs::read_to_string(&path)
        );
        std::thread::sleep(Duration::from_millis(100));
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let got = samples(&text);
        let one = format!(r#"lock="{u1}""#);
        if killed_at.is_none() && sum(&got, "sets3lock_watch_held", &[&one]) == 1.0 {
            let _ = killed.kill(); // SIGKILL: nothing releases the lock
            killed_at = Some(Instant::now());
        }
        if sum(&got, "sets3lock_watch_stale", &[&one]) == 1.0 {
            break text;
        }
    };
    let _ = killed.wait();
    let killed_at = killed_at.expect("held, then killed");
    assert!(
        killed_at.elapsed() >= Duration::from_secs(1),
        "stale only once unrenewed for a lease"
    );
    let _ = nix_kill_int(&watcher);
    let _ = watcher.wait();
    promtool(&path);
    let got = samples(&text);
    let (one, two) = (format!(r#"lock="{u1}""#), format!(r#"lock="{u2}""#));
    let env = r#"env="test""#;
    assert_eq!(
        sum(&got, "sets3lock_watch_held", &[&one, env]),
        1.0,
        "{text}"
    );
    assert!(
        sum(&got, "sets3lock_watch_holder_age_seconds", &[&one]) >= 1.0,
        "{text}"
    );
    assert_eq!(sum(&got, "sets3lock_watch_up", &[&one]), 1.0, "{text}");
    assert_eq!(sum(&got, "sets3lock_watch_held", &[&two]), 0.0, "{text}");
    assert_eq!(sum(&got, "sets3lock_watch_stale", &[&two]), 0.0, "{text}");
    assert_eq!(sum(&got, "sets3lock_watch_token", &[&two]), 1.0, "{text}");
    assert!(
        sum(
            &got,
            "sets3lock_watch_last_change_timestamp_seconds",
            &[&two]
        ) > 1.7e9
    );
    assert!(
        sum(&got, "sets3lock_holder_changes_total", &[&one]) >= 1.0,
        "held, then stale: {text}"
    );
    assert!(
        sum(
            &got,
            "sets3lock_store_requests_total",
            &[&two, r#"method="GET""#]
        ) >= 1.0
    );
}

/// SIGINT, the normal way to end a watch.
fn nix_kill_int(child: &std::process::Child) -> std::io::Result<std::process::ExitStatus> {
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
}

/// The example alerting rules in docs/alerts.yml are valid rules.
#[test]
fn the_example_alert_rules_pass_promtool() {
    let rules = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/alerts.yml");
    match Command::new("promtool")
        .args(["check", "rules", rules])
        .output()
    {
        Ok(o) => assert!(
            o.status.success(),
            "promtool check rules: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => support::raw::unavailable(
            &format!("promtool cannot run ({e})"),
            "apt-get install prometheus (scripts/test.sh does)",
        ),
    }
}
