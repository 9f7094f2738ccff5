//! The `sets3lock` command, the real binary, against the real local server: exit codes,
//! serialization across processes, signals, a lock lost while the program runs, bad input,
//! and the operator commands. A small `TestCommand` harness in the manner of ripgrep's.

use crate::support;

use crate::support::command::{code, one_line, stderr, stdout, TestCommand};
use crate::support::{scratch_dir, RawAccess, Server};
use std::io::Write;
use std::process::Output;
use std::time::{Duration, Instant};

/// Waits (20 s at most) until the lock object exists: a loaded machine starts processes slowly.
fn until_held(s: &Server, key: &str) {
    let started = Instant::now();
    while s.raw_get(key).is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the holder never got the lock"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Reads the child's stderr until it says it is waiting for the lock.
fn until_waiting(child: &mut std::process::Child) {
    use std::io::BufRead;
    let stderr = child.stderr.take().expect("piped stderr");
    for line in std::io::BufReader::new(stderr).lines() {
        if line.expect("stderr line").contains("waiting for") {
            return;
        }
    }
    panic!("the waiter never said it was waiting");
}

fn seaweedfs() -> Option<Server> {
    support::real("seaweedfs")
}

fn kill(child: &std::process::Child, sig: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), sig).expect("kill");
}

#[test]
fn exit_codes() {
    let Some(s) = seaweedfs() else { return };
    let key = support::fresh_key("cli-codes");
    let url = s.url(&key);
    // The program's own status, and 128+N for a signal.
    let o = TestCommand::new(&s)
        .args([&url, "sh", "-c", "exit 7"])
        .output();
    assert_eq!(code(&o), 7, "{}", stderr(&o));
    let o = TestCommand::new(&s)
        .args([&url, "sh", "-c", "kill -9 $$"])
        .output();
    assert_eq!(code(&o), 137);
    let o = TestCommand::new(&s).args([&url, "true"]).output();
    assert_eq!(code(&o), 0);
    // The program cannot start: 111, and the lock is released.
    let o = TestCommand::new(&s)
        .args([&url, "/no/such/program"])
        .output();
    assert_eq!(code(&o), 111);
    one_line(&o, "cannot run /no/such/program");
    assert!(s
        .raw_get(
            &url[url
                .find('/')
                .map(|i| i + 2 + s.bucket.len() + 1)
                .unwrap_or(0)..]
        )
        .is_none());
    // Busy: 111, or 0 with -x; -n and -x cluster, and the last of a pair wins.
    let mut holder = TestCommand::new(&s).args([&url, "sleep", "5"]).spawn();
    until_held(&s, &key);
    let o = TestCommand::new(&s).args(["-n", &url, "true"]).output();
    assert_eq!(code(&o), 111);
    one_line(&o, "held by");
    let o = TestCommand::new(&s).args(["-nx", &url, "true"]).output();
    assert_eq!(code(&o), 0);
    assert!(stderr(&o).is_empty(), "-x is silent: {}", stderr(&o));
    let o = TestCommand::new(&s).args(["-nxX", &url, "true"]).output();
    assert_eq!(code(&o), 111);
    let o = TestCommand::new(&s)
        .args(["-q", "--timeout", "1s", &url, "true"])
        .output();
    assert_eq!(code(&o), 111);
    assert!(stderr(&o).is_empty(), "-q: {}", stderr(&o));
    assert!(holder.wait().expect("holder").success());
}

#[test]
fn bad_input_gets_one_clear_line_and_the_right_code() {
    let Some(s) = seaweedfs() else { return };
    let url = s.url(&support::fresh_key("cli-bad"));
    let cases: Vec<(Vec<&str>, i32, &str)> = vec![
        (vec!["s3:/bucket/key", "true"], 100, "not an s3:// URL"),
        (vec!["s3://b/key", "true"], 100, "bucket"),
        (vec!["s3://My_Bucket/key", "true"], 100, "lower-case"),
        (
            vec!["--poll-max", "50ms", "s3://bucket/key", "true"],
            100,
            "--poll-max 50ms",
        ),
        (vec!["s3://bucket", "true"], 100, "no object key"),
        (vec!["--bogus", &url, "true"], 100, "--bogus"),
        (vec![&url], 100, "no program"),
        (vec!["--timeout", "soon", &url, "true"], 100, "duration"),
        (
            vec!["--timeout", "-1", &url, "true"],
            100,
            "invalid duration",
        ),
        (
            vec!["--lease", "3s", "--kill-after", "10s", &url, "true"],
            100,
            "--kill-after",
        ),
        (vec!["--lease", "5ms", &url, "true"], 100, "too short"),
        (
            vec!["--endpoint", "localhost:9000", &url, "true"],
            100,
            "endpoint",
        ),
        (
            vec!["s3://no-such-bucket-sets3lock/k", "true"],
            111,
            "create the bucket",
        ),
    ];
    for (args, want, mentions) in cases {
        let o = TestCommand::new(&s).args(&args).output();
        assert_eq!(code(&o), want, "{args:?}: {}", stderr(&o));
        one_line(&o, mentions);
    }
    let o = TestCommand::new(&s)
        .args([&url, "true"])
        .env("AWS_SECRET_ACCESS_KEY", "wrong")
        .output();
    assert_eq!(code(&o), 111);
    one_line(&o, "AWS_SECRET_ACCESS_KEY");
    let o = TestCommand::new(&s)
        .args([&url, "true"])
        .env("AWS_ACCESS_KEY_ID", "")
        .env("AWS_SECRET_ACCESS_KEY", "")
        .output();
    assert_eq!(code(&o), 111);
    one_line(&o, "no AWS credentials");
    // Nothing listens on port 9 of 127.0.0.1.
    let started = Instant::now();
    let o = TestCommand::new(&s)
        .args(["--endpoint", "http://127.0.0.1:9", &url, "true"])
        .output();
    assert_eq!(code(&o), 111);
    one_line(&o, "connection");
    assert!(
        !stderr(&o).contains("X-Amz-Signature") && !stderr(&o).contains("X-Amz-Credential"),
        "a presigned URL (a credential until it expires) in a message: {}",
        stderr(&o)
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "gave up after {:?}",
        started.elapsed()
    );
}

#[test]
fn the_program_gets_the_lock_in_its_environment_and_its_argv_untouched() {
    let Some(s) = seaweedfs() else { return };
    let url = s.url(&support::fresh_key("cli-env"));
    let o = TestCommand::new(&s)
        .args([
            &url,
            "sh",
            "-c",
            "echo \"$SETS3LOCK_URL $SETS3LOCK_OWNER $SETS3LOCK_ETAG $*\"",
            "sh",
            "-n",
            "--",
            "-x",
        ])
        .output();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    let words: Vec<&str> = out.split_whitespace().collect();
    assert_eq!(words[0], url);
    assert_eq!(words[1].len(), 32, "owner id: {out}");
    assert_eq!(words[2].len(), 32, "ETag: {out}");
    assert_eq!(&words[3..], ["-n", "--", "-x"]);
}

fn serialized(s: &Server, processes: usize) {
    let url = s.url(&support::fresh_key("cli-serial"));
    let dir = std::env::temp_dir().join(format!("sets3lock-cli-{}", support::rand_u64()));
    std::fs::create_dir_all(&dir).expect("dir");
    let witness = dir.join("witness");
    let script = format!(
        "echo \"S $$\" >> {w}; sleep 0.2; echo \"E $$\" >> {w}",
        w = witness.display()
    );
    let children: Vec<_> = (0..processes)
        .map(|_| {
            TestCommand::new(s)
                .args(["-q", &url, "sh", "-c", &script])
                .spawn()
        })
        .collect();
    for child in children {
        let o = child.wait_with_output().expect("wait");
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
    let log = std::fs::read_to_string(&witness).expect("witness");
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 2 * processes);
    for pair in lines.chunks(2) {
        assert!(
            pair[0].starts_with("S ") && pair[1].starts_with("E ") && pair[0][2..] == pair[1][2..],
            "overlap: {log}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn two_then_eight_processes_are_serialized() {
    let Some(s) = seaweedfs() else { return };
    serialized(&s, 2);
    serialized(&s, 8);
}

#[test]
fn sigterm_reaches_the_program_and_the_lock_is_released() {
    let Some(s) = seaweedfs() else { return };
    let key = support::fresh_key("cli-term");
    let url = s.url(&key);
    let child = TestCommand::new(&s)
        .args([
            &url,
            "sh",
            "-c",
            "trap 'echo got-term; kill $!; exit 3' TERM; sleep 30 & wait",
        ])
        .spawn();
    until_held(&s, &key);
    assert!(s.raw_get(&key).is_some(), "held while the program runs");
    kill(&child, nix::sys::signal::Signal::SIGTERM);
    let o = child.wait_with_output().expect("wait");
    assert_eq!(code(&o), 3, "the program's own status: {}", stderr(&o));
    assert!(stdout(&o).contains("got-term"));
    assert!(s.raw_get(&key).is_none(), "released on the way out");
}

#[test]
fn sigkill_leaves_the_lock_and_a_waiter_takes_over_after_the_lease_not_before() {
    let Some(s) = seaweedfs() else { return };
    let key = support::fresh_key("cli-kill");
    let url = s.url(&key);
    let holder = TestCommand::new(&s)
        .args(["--lease", "3s", "--kill-after", "1s", &url, "sleep", "60"])
        .spawn();
    until_held(&s, &key);
    kill(&holder, nix::sys::signal::Signal::SIGKILL);
    let mut holder = holder;
    let _ = holder.wait(); // (its orphaned `sleep` keeps the pipes open: do not read them)
    assert!(
        s.raw_get(&key).is_some(),
        "SIGKILL cannot release: the lock stays"
    );
    let started = Instant::now();
    let o = TestCommand::new(&s).args(["-q", &url, "true"]).output();
    let waited = started.elapsed();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        waited >= Duration::from_secs(3),
        "took over after {waited:?}: before a full lease"
    );
    assert!(waited < Duration::from_secs(15), "took {waited:?}");
}

#[test]
fn a_lock_lost_while_running_stops_the_program_with_112() {
    let Some(s) = seaweedfs() else { return };
    for tamper in ["delete", "overwrite"] {
        let key = support::fresh_key("cli-lost");
        let url = s.url(&key);
        let child = TestCommand::new(&s)
            .args([
                "--lease",
                "3s",
                "--kill-after",
                "1s",
                &url,
                "sh",
                "-c",
                "trap 'echo stopping; kill $!; exit 0' TERM; sleep 60 & wait",
            ])
            .spawn();
        until_held(&s, &key);
        match tamper {
            "delete" => s.raw_delete(&key),
            _ => {
                s.raw_put(&key, b"someone else");
            }
        }
        let started = Instant::now();
        let o = child.wait_with_output().expect("wait");
        assert_eq!(code(&o), 112, "{tamper}: {}", stderr(&o));
        assert!(stdout(&o).contains("stopping"), "the program got SIGTERM");
        assert!(started.elapsed() < Duration::from_secs(10));
        one_line(&o, "stopping the program");
        if tamper == "overwrite" {
            assert_eq!(
                s.raw_get(&key).map(|(_, b)| b),
                Some(b"someone else".to_vec()),
                "left the new holder alone"
            );
        }
    }
}

#[test]
fn status_and_a_force_unlock_that_cannot_delete_a_newer_lock() {
    let Some(s) = seaweedfs() else { return };
    let key = support::fresh_key("cli-status");
    let url = s.url(&key);
    let o = TestCommand::new(&s).args(["status", &url]).output();
    assert_eq!(code(&o), 0);
    assert!(stdout(&o).contains("free"));
    let stale = s.raw_put(
        &key,
        b"{\"id\":\"abc\",\"created_at\":\"2026-11-30T10:00:00Z\"}",
    );
    let o = TestCommand::new(&s)
        .args(["status", "--json", &url])
        .output();
    assert_eq!(code(&o), 1);
    assert!(
        stdout(&o).contains(&format!("\"etag\":\"{}\"", stale.as_str())),
        "{}",
        stdout(&o)
    );
    assert!(stdout(&o).contains("go-sets3lock"));
    // `watch --json` describes the same holder with the same object as `status --json`.
    let status: serde_json::Value = serde_json::from_str(stdout(&o).trim()).expect("JSON");
    let watcher = TestCommand::new(&s)
        .args(["watch", "--json", "--interval", "200ms", &url])
        .spawn();
    std::thread::sleep(Duration::from_millis(1500));
    kill(&watcher, nix::sys::signal::Signal::SIGINT);
    let o = watcher.wait_with_output().expect("watcher");
    let first = stdout(&o)
        .lines()
        .next()
        .map(str::to_owned)
        .unwrap_or_default();
    let watched: serde_json::Value = serde_json::from_str(&first).unwrap_or_else(|e| {
        panic!(
            "watch --json's first line {first:?}: {e}; stderr {}",
            stderr(&o)
        )
    });
    assert_eq!(watched["state"], "held", "{first}");
    assert_eq!(watched["holder"], status["holder"], "{first}");
    assert_eq!(watched["holder"]["kind"], "go-sets3lock", "{first}");
    assert_eq!(watched["holder"]["id"], "abc", "{first}");
    // The operator saw `stale`; meanwhile a new holder took the lock.
    let newer = s.raw_put(
        &key,
        b"{\"id\":\"def\",\"created_at\":\"2026-11-30T11:00:00Z\"}",
    );
    let o = TestCommand::new(&s)
        .args(["unlock", &url, "--etag", stale.as_str()])
        .output();
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(
        s.raw_get(&key).map(|(e, _)| e),
        Some(newer.clone()),
        "the newer lock survives"
    );
    let o = TestCommand::new(&s)
        .args(["unlock", &url, "--etag", newer.as_str()])
        .output();
    assert_eq!(code(&o), 0);
    assert!(s.raw_get(&key).is_none());
}

#[test]
fn doctor_passes_on_seaweedfs_and_fails_on_a_store_that_ignores_conditions() {
    let Some(s) = seaweedfs() else { return };
    let o = TestCommand::new(&s)
        .args(["doctor", &format!("s3://{}/doctor/", s.bucket)])
        .output();
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(stdout(&o).matches("  ok ").count(), 4, "{}", stdout(&o));
    let Some(bad) = support::real("s3rver") else {
        return;
    };
    let o = TestCommand::new(&bad)
        .args(["doctor", &format!("s3://{}/doctor/", bad.bucket)])
        .output();
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    let out = stdout(&o);
    for check in [
        "If-None-Match",
        "PUT If-Match",
        "DELETE If-Match",
        "parallel",
    ] {
        assert!(
            out.lines()
                .any(|l| l.contains("FAILED") && l.contains(check)),
            "{check}: {out}"
        );
    }
}

#[test]
fn help_version_and_completions() {
    let s = support::offline();
    let o = TestCommand::new(&s).args(["--help"]).output();
    assert_eq!(code(&o), 0);
    assert!(
        stdout(&o).contains("112"),
        "the exit code table is in --help"
    );
    // Every store, in the usage line and in the environment it reads.
    for word in [
        "s3://bucket/key",
        "az://container/key",
        "gs://bucket/key",
        "AWS_ACCESS_KEY_ID",
        "AZURE_STORAGE_CONNECTION_STRING",
        "GOOGLE_APPLICATION_CREDENTIALS",
    ] {
        assert!(stdout(&o).contains(word), "--help lacks {word}");
    }
    let o = TestCommand::new(&s).args(["--version"]).output();
    assert_eq!(code(&o), 0);
    for shell in ["bash", "zsh", "fish"] {
        let o = TestCommand::new(&s).args(["completions", shell]).output();
        assert_eq!(code(&o), 0);
        let out = stdout(&o);
        for word in [
            "sets3lock",
            "lease",
            "status",
            "unlock",
            "doctor",
            "completions",
        ] {
            assert!(out.contains(word), "{shell} completions lack {word}: {out}");
        }
    }
    let _ = std::io::stdout().flush();
}

#[test]
fn a_configuration_error_is_111_even_with_x_and_only_the_urls_store_is_configured() {
    let s = support::offline();
    // A malformed connection string breaks an az:// lock, with -x too: -x makes a lock held
    // elsewhere a success, never a configuration that cannot work.
    for flags in [&[][..], &["-x"][..]] {
        let o = TestCommand::new(&s)
            .args(flags)
            .args(["az://container/key", "true"])
            .env("AZURE_STORAGE_CONNECTION_STRING", "not a connection string")
            .output();
        assert_eq!(code(&o), 111, "{flags:?}: {}", stderr(&o));
        one_line(&o, "AZURE_STORAGE_CONNECTION_STRING");
    }
    // It never breaks an s3:// lock: only the URL's store's variables are read (here the
    // lock fails for its own reason, at once).
    let o = TestCommand::new(&s)
        .args(["s3://bucket/key", "true"])
        .env("AWS_ACCESS_KEY_ID", "")
        .env("AWS_SECRET_ACCESS_KEY", "")
        .env("AZURE_STORAGE_CONNECTION_STRING", "not a connection string")
        .output();
    assert_eq!(code(&o), 111, "{}", stderr(&o));
    one_line(&o, "no AWS credentials");
}

#[test]
fn credentials_from_a_named_profile() {
    let Some(s) = seaweedfs() else { return };
    let dir = std::env::temp_dir().join(format!("sets3lock-profile-{}", support::rand_u64()));
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("credentials");
    std::fs::write(
        &file,
        format!("[default]\naws_access_key_id = nope\naws_secret_access_key = nope\n\n[ci]\naws_access_key_id = {}\naws_secret_access_key = {}\n", s.access_key, s.secret),
    )
    .expect("write");
    let url = s.url(&support::fresh_key("cli-profile"));
    let o = TestCommand::new(&s)
        .env("AWS_ACCESS_KEY_ID", "")
        .env("AWS_SECRET_ACCESS_KEY", "")
        .env(
            "AWS_SHARED_CREDENTIALS_FILE",
            file.to_str().expect("utf-8 path"),
        )
        .args(["--profile", "ci", &url, "true"])
        .output();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = TestCommand::new(&s)
        .env(
            "AWS_SHARED_CREDENTIALS_FILE",
            file.to_str().expect("utf-8 path"),
        )
        .args(["--profile", "missing", &url, "true"])
        .output();
    assert_eq!(code(&o), 111);
    one_line(&o, "profile \"missing\"");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_signal_stops_the_wait_cleanly() {
    let Some(s) = seaweedfs() else { return };
    let key = support::fresh_key("cli-wait-signal");
    let url = s.url(&key);
    let holder = TestCommand::new(&s).args([&url, "sleep", "4"]).spawn();
    until_held(&s, &key);
    let held_etag = s.raw_get(&key).map(|(e, _)| e);
    let mut waiter = TestCommand::new(&s).args([&url, "echo", "ran"]).spawn();
    until_waiting(&mut waiter);
    kill(&waiter, nix::sys::signal::Signal::SIGINT);
    let o = waiter.wait_with_output().expect("waiter");
    assert_eq!(code(&o), 130, "128 + SIGINT: {}", stderr(&o));
    assert!(!stdout(&o).contains("ran"), "the program never ran");
    assert_eq!(
        s.raw_get(&key).map(|(e, _)| e),
        held_etag,
        "the holder's lock is untouched"
    );
    assert!(holder.wait_with_output().expect("holder").status.success());
}

#[test]
fn a_closed_stdout_loses_the_output_not_the_exit_status() {
    let Some(s) = seaweedfs() else { return };
    let key = support::fresh_key("cli-closed-stdout");
    let url = s.url(&key);
    let held = s.raw_put(
        &key,
        b"{\"id\":\"abc\",\"created_at\":\"2026-11-30T10:00:00Z\"}",
    );
    let cases: Vec<(Vec<&str>, i32)> = vec![
        (vec!["status", &url], 1),
        (vec!["status", "--json", &url], 1),
        (vec!["unlock", &url, "--etag", held.as_str()], 0),
        (vec!["status", &url], 0),
        (vec!["completions", "bash"], 0),
        (vec!["--help"], 0),
        (vec!["--version"], 0),
    ];
    for (args, want) in cases {
        let o = TestCommand::new(&s).args(&args).output_into_a_closed_pipe();
        assert!(!stderr(&o).contains("panicked"), "{args:?}: {}", stderr(&o));
        assert_eq!(code(&o), want, "{args:?}: {}", stderr(&o));
    }
    assert!(s.raw_get(&key).is_none(), "unlock deleted it");
}

/// The token the program printed, from `sh -c 'echo $SETS3LOCK_TOKEN'`.
fn token_of(o: &Output) -> u64 {
    assert_eq!(code(o), 0, "{}", stderr(o));
    stdout(o)
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("not a token: {:?}", stdout(o)))
}

#[test]
fn fenced_runs_get_tokens_1_2_3_and_a_takeover_after_kill_9_gets_the_next() {
    let Some(s) = seaweedfs() else { return };
    let key = support::fresh_key("cli-fenced");
    let url = s.url(&key);
    let print_token = ["sh", "-c", "echo $SETS3LOCK_TOKEN"];
    for n in 1..=3 {
        let o = TestCommand::new(&s)
            .args(["--fenced", &url])
            .args(print_token)
            .output();
        assert_eq!(token_of(&o), n);
        let status = TestCommand::new(&s).args(["status", &url]).output();
        assert_eq!(code(&status), 0, "free is exit 0: {}", stdout(&status));
        assert!(
            stdout(&status).contains(&format!("free, last token {n}")),
            "{}",
            stdout(&status)
        );
    }
    // A fenced holder killed with -9 keeps the lock until its lease runs out; the next
    // holder takes over with the next token (without --fenced: the key decides).
    let holder = TestCommand::new(&s)
        .args(["--lease", "3s", "--kill-after", "1s", &url, "sleep", "60"])
        .spawn();
    let started = Instant::now();
    loop {
        let status = TestCommand::new(&s).args(["status", &url]).output();
        if stdout(&status).contains("held, token 4") {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "never held with token 4: {}",
            stdout(&status)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    kill(&holder, nix::sys::signal::Signal::SIGKILL);
    let mut holder = holder;
    let _ = holder.wait();
    let o = TestCommand::new(&s)
        .args(["-q", &url])
        .args(print_token)
        .output();
    assert_eq!(token_of(&o), 5);
    // unlock frees a fenced lock and keeps its token.
    let holder = TestCommand::new(&s)
        .args(["--lease", "3s", "--kill-after", "1s", &url, "sleep", "60"])
        .spawn();
    let (etag, _) = loop {
        if let Some((etag, body)) = s.raw_get(&key) {
            if !sets3lock::proto::Holder::decode(&body).is_free() {
                break (etag, body);
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "never held again"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    kill(&holder, nix::sys::signal::Signal::SIGKILL);
    let mut holder = holder;
    let _ = holder.wait();
    let o = TestCommand::new(&s)
        .args(["unlock", &url, "--etag", etag.as_str()])
        .output();
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("token 6 kept"), "{}", stdout(&o));
    let started = Instant::now();
    let o = TestCommand::new(&s)
        .args(["-n", &url])
        .args(print_token)
        .output();
    assert_eq!(token_of(&o), 7);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "a freed lock is taken at once"
    );
}

#[test]
fn on_a_store_that_ignores_conditions_the_command_refuses_unless_told_not_to_check() {
    let Some(bad) = support::real("s3rver") else {
        return;
    };
    let url = bad.url(&support::fresh_key("cli-store-check"));
    let o = TestCommand::new(&bad)
        .env("XDG_CACHE_HOME", &scratch_dir("refuse"))
        .args([&url, "true"])
        .output();
    assert_eq!(code(&o), 111, "{}", stderr(&o));
    one_line(&o, "ignores If-None-Match");
    assert!(stderr(&o).contains("--no-store-check"), "{}", stderr(&o));
    let o = TestCommand::new(&bad)
        .args(["--no-store-check", &url, "true"])
        .output();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

#[test]
fn a_passed_store_check_is_cached_for_the_endpoint_and_bucket() {
    let Some(s) = seaweedfs() else { return };
    let cache = scratch_dir("cache");
    let url = s.url(&support::fresh_key("cli-cached-check"));
    let o = TestCommand::new(&s)
        .env("XDG_CACHE_HOME", &cache)
        .args(["-v", &url, "true"])
        .output();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let files: Vec<_> = std::fs::read_dir(std::path::Path::new(&cache).join("sets3lock"))
        .expect("the cache directory was made")
        .collect();
    assert_eq!(files.len(), 1, "one verdict file: {files:?}");
    assert!(
        stderr(&o).contains("store-check: conditional writes honoured"),
        "{}",
        stderr(&o)
    );
    let o = TestCommand::new(&s)
        .env("XDG_CACHE_HOME", &cache)
        .args(["-v", &url, "true"])
        .output();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        !stderr(&o).contains("store-check"),
        "the second run probed again: {}",
        stderr(&o)
    );
}

/// A fresh directory under the system's temporary directory.
/// docs/GUIDE.md's recipe for fencing a resource with the token, as a script: the resource is a
/// file, written only by `fenced-write`, which refuses a token lower than the one recorded
/// (under flock, the file's own lock, so that check and write are one step).
const FENCED_WRITE: &str = r#"
resource=$1; line=$2
exec 9>>"$resource.lock"; flock 9
last=$(cat "$resource.token" 2>/dev/null || echo 0)
if [ "$SETS3LOCK_TOKEN" -lt "$last" ]; then
  echo "refused: token $SETS3LOCK_TOKEN < $last" >&2; exit 1
fi
echo "$SETS3LOCK_TOKEN" > "$resource.token"
echo "$line" >> "$resource"
"#;

/// A holder frozen (SIGSTOP) past its lease loses the lock to another, which writes to the
/// resource; thawed, the first holder's late write is refused by the resource, because its
/// token is older. The lease alone cannot stop it: it checked before it froze.
#[test]
fn a_frozen_holders_late_write_is_refused_by_a_resource_fenced_with_the_token() {
    let Some(s) = seaweedfs() else { return };
    let dir = scratch_dir("fence");
    let script = format!("{dir}/fenced-write");
    std::fs::write(&script, FENCED_WRITE).expect("script");
    let resource = format!("{dir}/resource");
    let key = support::fresh_key("cli-frozen");
    let url = s.url(&key);
    // The first holder: ready, then (once thawed and told to go) it writes, ignoring the
    // SIGTERM its wrapper sends on finding the lock lost.
    let first = TestCommand::new(&s)
        .args(["--fenced", "--lease", "3s", "--kill-after", "1s", &url])
        .args([
            "sh",
            "-c",
            "trap '' TERM; touch \"$0.ready\"; while [ ! -e \"$0.go\" ]; do sleep 0.05; done; \
             sh \"$1\" \"$0\" \"first, token $SETS3LOCK_TOKEN\" && touch \"$0.written\" || touch \"$0.refused\"",
            &resource,
            &script,
        ])
        .spawn();
    let started = Instant::now();
    while !std::path::Path::new(&format!("{resource}.ready")).exists() {
        assert!(started.elapsed() < Duration::from_secs(20), "never ready");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Freeze the wrapper (so nothing renews) and its program, past the lease.
    let frozen = [nix::unistd::Pid::from_raw(first.id() as i32)];
    for p in &frozen {
        nix::sys::signal::kill(*p, nix::sys::signal::Signal::SIGSTOP).expect("stop");
    }
    let children = children_of(first.id());
    for c in &children {
        let _ = nix::sys::signal::kill(*c, nix::sys::signal::Signal::SIGSTOP);
    }
    // The second holder takes over after the lease and writes with the next token.
    let o = TestCommand::new(&s)
        .args(["--timeout", "30s", &url, "sh", "-c"])
        .args([
            "sh \"$0\" \"$1\" \"second, token $SETS3LOCK_TOKEN\"",
            &script,
            &resource,
        ])
        .output();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(format!("{resource}.token"))
            .expect("token")
            .trim(),
        "2"
    );
    // Thaw the first's program before its wrapper (which, thawed, kills it at once: its
    // lease has run out), and let it write: the resource refuses its token 1.
    std::fs::write(format!("{resource}.go"), "").expect("go");
    for c in &children {
        let _ = nix::sys::signal::kill(*c, nix::sys::signal::Signal::SIGCONT);
    }
    let started = Instant::now();
    while !std::path::Path::new(&format!("{resource}.refused")).exists() {
        assert!(
            !std::path::Path::new(&format!("{resource}.written")).exists(),
            "the frozen holder's late write was accepted: {}",
            std::fs::read_to_string(&resource).unwrap_or_default()
        );
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the thawed holder never tried to write"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    for p in &frozen {
        nix::sys::signal::kill(*p, nix::sys::signal::Signal::SIGCONT).expect("cont");
    }
    let mut first = first;
    let _ = first.wait();
    assert_eq!(
        std::fs::read_to_string(&resource).expect("resource"),
        "second, token 2\n",
        "only the current holder's write is in the resource"
    );
}

/// The pids whose parent is `pid` (from /proc).
fn children_of(pid: u32) -> Vec<nix::unistd::Pid> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default();
        // pid (comm) state ppid ...: the fields after the last ')'.
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        if fields.get(1).and_then(|p| p.parse::<u32>().ok()) == Some(pid) {
            out.push(nix::unistd::Pid::from_raw(child));
            out.extend(children_of(child as u32));
        }
    }
    out
}

#[test]
fn rough_edges_the_help_example_options_before_a_command_and_a_short_lease_alone() {
    let Some(s) = seaweedfs() else { return };
    let url = s.url(&support::fresh_key("cli-edges"));
    // The --help example's shape: `--` after the URL separates it from the program.
    let o = TestCommand::new(&s)
        .args([
            "--timeout",
            "5m",
            "--lease",
            "2m",
            &url,
            "--",
            "sh",
            "-c",
            "echo ran",
        ])
        .output();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "ran");
    // Options before a command word, as git, aws and cargo allow.
    let o = TestCommand::new(&s)
        .args(["--endpoint", &s.endpoint, "status", &url])
        .output();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("free"), "{}", stdout(&o));
    // A short lease alone: the default --kill-after fits it, and -v says what it is.
    let o = TestCommand::new(&s)
        .args(["-v", "--lease", "4s", &url, "true"])
        .output();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("SIGTERM 1.29s before the lease could run out (--kill-after, the default that fits this lease)"),
        "{}",
        stderr(&o)
    );
    // A --kill-after that does not fit is refused with durations as people write them.
    let o = TestCommand::new(&s)
        .args(["--lease", "4s", "--kill-after", "3s", &url, "true"])
        .output();
    assert_eq!(code(&o), 100);
    one_line(&o, "use less than 2.58s");
}

/// With `--slots 2`, one slot held by the Go tool (no lease) and the other by a leased
/// sets3lock holder: the waiting line names each holder with its own clause.
#[test]
fn the_slots_waiting_line_says_of_each_holder_whether_it_can_be_taken_over() {
    let Some(s) = seaweedfs() else { return };
    let key = support::fresh_key("cli-slots-line");
    let url = s.url(&key);
    s.raw_put(
        &format!("{key}/slot-0"),
        b"{\"id\":\"go-holder\",\"created_at\":\"2026-11-30T10:00:00Z\"}",
    );
    let o = TestCommand::new(&s)
        .args(["acquire", "--lease", "1m", &s.url(&format!("{key}/slot-1"))])
        .output();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let handle = stdout(&o).trim().to_owned();
    let o = TestCommand::new(&s)
        .args(["--slots", "2", "--timeout", "2s", &url, "true"])
        .output();
    assert_eq!(code(&o), 111, "{}", stderr(&o));
    let said = stderr(&o);
    let line = said
        .lines()
        .filter(|l| l.contains("waiting for a slot"))
        .find(|l| l.contains("go-holder") && l.contains("pid"))
        .unwrap_or_else(|| panic!("no waiting line names both holders:\n{said}"));
    let (go, ours) = line
        .split_once("; by ")
        .map(|(a, b)| {
            if a.contains("go-holder") {
                (a, b)
            } else {
                (b, a)
            }
        })
        .unwrap_or_else(|| panic!("one clause per holder: {line}"));
    assert!(go.contains("never taken over: no lease"), "{line}");
    assert!(
        ours.contains("taken over if it stops renewing for a full lease"),
        "{line}"
    );
    let o = TestCommand::new(&s).args(["release", &handle]).output();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    s.raw_delete(&format!("{key}/slot-0"));
}

/// Terraform's own lock, as the command shows and removes it: `status` names its holder (and
/// `--json` carries its seven fields), `-n` is refused naming it, `unlock` takes one of
/// `--etag`, `--id` or `--if-stale`, `--if-stale` refuses a lock without a lease, and `--id`
/// removes only the lock with that ID.
#[test]
fn a_terraform_lock_is_shown_and_unlocked_by_its_id_only() {
    let Some(s) = seaweedfs() else { return };
    let key = support::fresh_key("cli-tflock") + ".tflock";
    let url = s.url(&key);
    let body = br#"{"ID":"22e43534-8fa7-3aa9-810d-3d7afbf2ae6d","Operation":"OperationTypeApply","Info":"","Who":"root@ci-7","Version":"1.15.5","Created":"2026-12-07T23:58:05.787576221Z","Path":"b/state.tfstate"}"#;
    s.raw_put(&key, body);
    let o = TestCommand::new(&s).args(["status", &url]).output();
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    for word in [
        "Terraform or OpenTofu",
        "root@ci-7",
        "OperationTypeApply",
        "22e43534-8fa7-3aa9-810d-3d7afbf2ae6d",
    ] {
        assert!(stdout(&o).contains(word), "{word}: {}", stdout(&o));
    }
    let o = TestCommand::new(&s)
        .args(["status", "--json", &url])
        .output();
    let status: serde_json::Value = serde_json::from_str(stdout(&o).trim()).expect("JSON");
    assert_eq!(status["holder"]["kind"], "terraform", "{status}");
    assert_eq!(
        status["holder"]["terraform"]["Who"], "root@ci-7",
        "{status}"
    );
    let o = TestCommand::new(&s).args(["-n", &url, "true"]).output();
    assert_eq!(code(&o), 111);
    one_line(&o, "OperationTypeApply");
    for args in [
        vec!["unlock", &url],
        vec!["unlock", &url, "--etag", "abc", "--id", "x"],
        vec!["unlock", &url, "--id", "x", "--if-stale"],
    ] {
        let o = TestCommand::new(&s).args(&args).output();
        assert_eq!(code(&o), 100, "{args:?}: {}", stderr(&o));
    }
    let o = TestCommand::new(&s)
        .args(["unlock", "--if-stale", &url])
        .output();
    assert_eq!(code(&o), 100, "{}", stderr(&o));
    one_line(&o, "declares no lease");
    let o = TestCommand::new(&s)
        .args([
            "unlock",
            "--id",
            "00000000-0000-4000-8000-000000000000",
            &url,
        ])
        .output();
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    one_line(&o, "not deleted");
    assert_eq!(
        s.raw_get(&key).map(|(_, b)| b),
        Some(body.to_vec()),
        "left as it was"
    );
    let o = TestCommand::new(&s)
        .args([
            "unlock",
            "--id",
            "22e43534-8fa7-3aa9-810d-3d7afbf2ae6d",
            &url,
        ])
        .output();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(s.raw_get(&key).is_none());
}
