//! Time, as the command meets it: a wall clock minutes off the server's, a wall clock stepped
//! back while a lock is held (the real binary under libfaketime, against SeaweedFS), and a
//! `--timeout` that holds against an endpoint that never answers.

use crate::support;

use crate::support::command::{code, stderr, stdout, TestCommand};
use crate::support::{scratch_dir, RawAccess, Server};
use std::io::Write as _;
use std::net::TcpListener;
use std::time::{Duration, Instant};

/// libfaketime's preload library (Debian's `faketime` package; `scripts/test.sh` installs
/// it). Without it the clock tests skip, unless the test script requires them.
fn libfaketime() -> Option<String> {
    let found = ["x86_64-linux-gnu", "aarch64-linux-gnu"]
        .iter()
        .map(|arch| format!("/usr/lib/{arch}/faketime/libfaketime.so.1"))
        .find(|p| std::path::Path::new(p).exists());
    if found.is_none() {
        support::raw::unavailable(
            "libfaketime is not installed",
            "apt-get install faketime (bash scripts/test.sh does)",
        );
    }
    found
}

/// The command with its wall clock (only: the monotonic clocks the leases use are left
/// alone) as `faketime` says: an offset such as `-75s`, or a file holding one.
fn faked(s: &Server, lib: &str, offset: &str) -> TestCommand {
    TestCommand::new(s)
        .env("LD_PRELOAD", lib)
        .env("FAKETIME", offset)
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
        .env("XDG_CACHE_HOME", &scratch_dir("cache"))
}

#[test]
fn a_clock_minutes_behind_or_ahead_of_the_server_still_locks() {
    let Some(s) = support::real("seaweedfs") else {
        return;
    };
    let Some(lib) = libfaketime() else { return };
    // Before signing at the server's time, the first two were refused (403 "Request has
    // expired") with a hint about permissions.
    for offset in ["-75s", "-10m", "+20m"] {
        let key = support::fresh_key("cli-skew");
        let o = faked(&s, &lib, offset)
            .args(["-v", &s.url(&key), "true"])
            .output();
        let err = stderr(&o);
        assert_eq!(code(&o), 0, "clock {offset}: {err}");
        assert!(
            err.contains("the server's clock is"),
            "clock {offset}: the -v log says what it corrected: {err}"
        );
        assert!(!err.contains("X-Amz-Signature"), "{err}");
        assert!(s.raw_get(&key).is_none(), "clock {offset}: released");
    }
}

#[test]
fn a_wall_clock_stepped_back_two_minutes_while_holding_keeps_the_lock() {
    let Some(s) = support::real("seaweedfs") else {
        return;
    };
    let Some(lib) = libfaketime() else { return };
    let dir = scratch_dir("step");
    let clock = format!("{dir}/faketime");
    std::fs::write(&clock, "+0s\n").expect("clock file");
    let key = support::fresh_key("cli-clock-step");
    // A 3 s lease renews every second; the step comes after the first renewal.
    let child = TestCommand::new(&s)
        .env("LD_PRELOAD", &lib)
        .env("FAKETIME_TIMESTAMP_FILE", &clock)
        .env("FAKETIME_NO_CACHE", "1")
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
        .env("XDG_CACHE_HOME", &scratch_dir("cache"))
        .args(["-v", "--lease", "3s", &s.url(&key), "sleep", "4"])
        .spawn();
    let started = Instant::now();
    while s.raw_get(&key).is_none() {
        assert!(started.elapsed() < Duration::from_secs(20), "never held");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1500));
    let mut f = std::fs::File::create(&clock).expect("clock file");
    f.write_all(b"-120s\n").expect("step the clock");
    drop(f);
    let o = child.wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    // Before: every renewal after the step was refused as expired, the program was stopped
    // (112) and the lock was left behind.
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("the server's clock is"), "{err}");
    assert!(!err.contains("X-Amz-Signature"), "{err}");
    assert!(s.raw_get(&key).is_none(), "released after the step");
}

/// A port that accepts connections and never answers: an endpoint behind a hung proxy, a
/// black-holed load balancer.
fn silent_endpoint() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let endpoint = format!("http://{}", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in listener.incoming().flatten() {
            held.push(c); // never read, never answered, never closed
        }
    });
    endpoint
}

/// What docs/GUIDE.md promises: `--timeout D` ends within D + 3 s, whatever the endpoint does (one
/// second at least for a request sent at the deadline, two for the cleanup of a write that
/// may have landed), with a message about what the user did.
const BOUND: Duration = Duration::from_secs(3);

fn times_out_on_a_silent_endpoint(extra: &[&str], mentions: &[&str]) {
    let server = Server {
        endpoint: silent_endpoint(),
        access_key: "AKIDSILENT".into(),
        secret: "silent-secret".into(),
        bucket: "silent-bucket".into(),
    };
    let timeout = Duration::from_secs(3);
    let started = Instant::now();
    let o = TestCommand::new(&server)
        .env("XDG_CACHE_HOME", &scratch_dir("cache"))
        .args(["--timeout", "3s"])
        .args(extra)
        .args([&server.url("k"), "true"])
        .output();
    let took = started.elapsed();
    let err = stderr(&o);
    assert_eq!(code(&o), 111, "{err}");
    // A second for starting the process (two at once) on a loaded machine.
    assert!(
        took <= timeout + BOUND + Duration::from_secs(1),
        "{extra:?}: took {took:?}: {err}"
    );
    assert!(
        took >= timeout,
        "{extra:?}: gave up early, after {took:?}: {err}"
    );
    for m in mentions {
        assert!(err.contains(m), "{extra:?}: {err:?} should mention {m:?}");
    }
    assert!(!err.contains("release"), "nothing was held: {err}");
    assert!(!err.contains("X-Amz-Signature"), "{err}");
}

#[test]
fn timeout_holds_against_an_endpoint_that_never_answers() {
    // Before: 70 s (a 20 s request timeout, a 20 s read-back, a 30 s wait for a "release").
    let a = std::thread::spawn(|| {
        times_out_on_a_silent_endpoint(&[], &["timed out", "no clear answer to the store check"])
    });
    let b = std::thread::spawn(|| {
        times_out_on_a_silent_endpoint(
            &["--no-store-check"],
            &["timed out", "did not answer", "expires after its lease"],
        )
    });
    let (a, b) = (a.join(), b.join());
    if let Err(e) = a.and(b) {
        std::panic::resume_unwind(e);
    }
}

/// The operator commands have `--timeout` too: `status`, `unlock` and `doctor` end within it
/// (and up to three seconds to start on a loaded machine) against an endpoint that never
/// answers, exit 111 and say so;
/// `watch` reports the silence after it and keeps watching. Before: `status` and `unlock`
/// took 20 s, `doctor` more than 100 s, `watch` 20 s per read.
#[test]
fn the_operator_commands_end_within_their_timeout_against_an_endpoint_that_never_answers() {
    let server = Server {
        endpoint: silent_endpoint(),
        access_key: "AKIDSILENT".into(),
        secret: "silent-secret".into(),
        bucket: "silent-bucket".into(),
    };
    let url = server.url("k");
    let cases: [(Vec<&str>, &str); 3] = [
        (vec!["status", "--timeout", "2s", &url], "no reply"),
        (
            vec!["unlock", "--timeout", "2s", "--etag", "abc", &url],
            "outcome is unknown",
        ),
        (
            vec!["doctor", "--timeout", "2s", "s3://silent-bucket/p/"],
            "--timeout 2s ran out",
        ),
    ];
    let runs: Vec<_> = cases
        .into_iter()
        .map(|(args, mentions)| {
            let shown = format!("{args:?}");
            let cmd = TestCommand::new(&server).args(args);
            std::thread::spawn(move || {
                let started = Instant::now();
                let o = cmd.output();
                (shown, mentions, started.elapsed(), o)
            })
        })
        .collect();
    for run in runs {
        let (args, mentions, took, o) = run.join().expect("a run");
        let all = format!("{}{}", stdout(&o), stderr(&o));
        assert_eq!(code(&o), 111, "{args}: {all}");
        assert!(
            took >= Duration::from_secs(2) && took <= Duration::from_secs(5),
            "{args}: took {took:?}: {all}"
        );
        assert!(
            all.contains(mentions),
            "{args}: {all:?} should mention {mentions:?}"
        );
    }
    // watch: the silence is reported after the timeout, and the watch goes on.
    let mut watch = TestCommand::new(&server)
        .args(["watch", "--timeout", "1s", &url])
        .spawn();
    let started = Instant::now();
    let mut lines = std::io::BufReader::new(watch.stdout.take().expect("stdout"));
    let mut first = String::new();
    let read = std::io::BufRead::read_line(&mut lines, &mut first);
    let took = started.elapsed();
    let _ = watch.kill();
    let _ = watch.wait();
    assert!(read.is_ok_and(|n| n > 0), "watch printed nothing");
    assert!(first.contains("cannot read the lock"), "{first}");
    assert!(
        took <= Duration::from_secs(3),
        "watch said so after {took:?}: {first}"
    );
}
