//! The `sets3lock` command, the real binary, against the two other stores it speaks, each on
//! its local emulator: Azure Blob Storage (`az://`, Azurite) and Google Cloud Storage (`gs://`,
//! fake-gcs-server). Run mode, the operator commands, semaphores and fencing, contention
//! across processes with an O_APPEND witness file, and bad input.
//!
//! fake-gcs-server 1.54 ignores `ifGenerationMatch` on DELETE, so there only fenced locks are
//! safe: the store check refuses plain run mode, and everything else runs with `--fenced`.

use crate::support;

use crate::support::command::{code, one_line, stderr, stdout};
use crate::support::scratch_dir;
use std::io::BufRead;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// One store on its emulator, as the command is pointed at it, with a store-check cache of
/// its own (so that one test's verdict does not leak into another's).
pub(crate) struct Store {
    /// The emulator, for messages.
    pub(crate) name: &'static str,
    /// `s3`, `az` or `gs`.
    pub(crate) scheme: &'static str,
    /// The container or bucket.
    bucket: String,
    /// The child's environment for this store.
    env: Vec<(&'static str, String)>,
    /// Only fenced locks are safe here: every lock in these tests is taken with `--fenced`.
    fenced_only: bool,
    /// `XDG_CACHE_HOME` for the child.
    cache: String,
    /// The emulator's own variables (endpoint, account, key), for the tests that need them.
    vars: std::collections::HashMap<&'static str, String>,
}

/// The emulator's variables, all of them, or `None` (skipped, or a panic under
/// `SETS3LOCK_REQUIRE_S3=1`: the rule of `backends/drivers/tests/support/raw.rs`).
fn vars(
    name: &str,
    prefix: &str,
    suffixes: &[&'static str],
) -> Option<std::collections::HashMap<&'static str, String>> {
    let mut out = std::collections::HashMap::new();
    for suffix in suffixes {
        match std::env::var(format!("{prefix}_{suffix}")) {
            Ok(v) if !v.is_empty() => {
                out.insert(*suffix, v);
            }
            _ => {
                support::raw::missing(name, prefix);
                return None;
            }
        }
    }
    Some(out)
}

fn azurite() -> Option<Store> {
    let vars = vars(
        "azurite",
        "SETS3LOCK_AZURITE",
        &[
            "ENDPOINT",
            "ACCOUNT",
            "KEY",
            "CONTAINER",
            "CONNECTION_STRING",
        ],
    )?;
    Some(Store {
        name: "azurite",
        scheme: "az",
        bucket: vars["CONTAINER"].clone(),
        env: vec![(
            "AZURE_STORAGE_CONNECTION_STRING",
            vars["CONNECTION_STRING"].clone(),
        )],
        fenced_only: false,
        cache: scratch_dir("stores-cache"),
        vars,
    })
}

fn fake_gcs() -> Option<Store> {
    let vars = vars(
        "fake-gcs-server",
        "SETS3LOCK_FAKEGCS",
        &["ENDPOINT", "BUCKET"],
    )?;
    probe_fake_gcs(&vars["ENDPOINT"], &vars["BUCKET"]);
    Some(Store {
        name: "fake-gcs",
        scheme: "gs",
        bucket: vars["BUCKET"].clone(),
        env: vec![("STORAGE_EMULATOR_HOST", vars["ENDPOINT"].clone())],
        fenced_only: true,
        cache: scratch_dir("stores-cache"),
        vars,
    })
}

/// fake-gcs-server must refuse a second create of one object, or every test on it would
/// pass by testing nothing: checked by hand (a multipart upload with `ifGenerationMatch=0`,
/// twice) before it is used.
fn probe_fake_gcs(endpoint: &str, bucket: &str) {
    let name = support::fresh_key("stores-emulator-probe").replace('/', "-");
    let create = || {
        let body = format!(
            "--b\r\nContent-Type: application/json\r\n\r\n{{\"name\":\"{name}\"}}\r\n--b\r\nContent-Type: application/json\r\n\r\n{{}}\r\n--b--\r\n"
        );
        reqwest::blocking::Client::new()
            .post(format!(
                "{endpoint}/upload/storage/v1/b/{bucket}/o?uploadType=multipart&name={name}&ifGenerationMatch=0"
            ))
            .header("content-type", "multipart/related; boundary=b")
            .body(body)
            .send()
            .map(|r| r.status().as_u16())
            .unwrap_or(0)
    };
    let (first, second) = (create(), create());
    assert!(
        first == 200 && second == 412,
        "fake-gcs-server answered two creates of one object with {first} and {second}, not 200 and 412: tests on it would prove nothing"
    );
}

/// Every store whose emulator is running.
fn stores() -> Vec<Store> {
    azurite().into_iter().chain(fake_gcs()).collect()
}

/// SeaweedFS, as an `s3://` store of the same shape (for the fault suite, which runs on every
/// store).
fn seaweedfs() -> Option<Store> {
    let s = support::real("seaweedfs")?;
    let vars = [("ENDPOINT", s.endpoint.clone())].into_iter().collect();
    Some(Store {
        name: "seaweedfs",
        scheme: "s3",
        bucket: s.bucket,
        env: vec![
            ("AWS_ENDPOINT_URL", s.endpoint),
            ("AWS_ACCESS_KEY_ID", s.access_key),
            ("AWS_SECRET_ACCESS_KEY", s.secret),
            ("AWS_REGION", "us-east-1".into()),
        ],
        fenced_only: false,
        cache: scratch_dir("stores-cache"),
        vars,
    })
}

/// SeaweedFS, Azurite and fake-gcs-server: each whose server is running.
pub(crate) fn every_store() -> Vec<Store> {
    seaweedfs().into_iter().chain(stores()).collect()
}

impl Store {
    /// A lock URL on a key no other test uses.
    pub(crate) fn url(&self, scenario: &str) -> String {
        format!(
            "{}://{}/{}",
            self.scheme,
            self.bucket,
            support::fresh_key(&format!("stores-{scenario}"))
        )
    }

    /// The flags every lock here is taken with: `--fenced` where only fenced locks are safe.
    pub(crate) fn lock_flags(&self) -> &'static [&'static str] {
        if self.fenced_only {
            &["--fenced"]
        } else {
            &[]
        }
    }

    /// The binary with this store's environment and nothing else from any store's.
    pub(crate) fn cmd(&self) -> StoreCommand {
        let mut cmd = StoreCommand::bare(&self.cache);
        for (k, v) in &self.env {
            cmd.cmd.env(k, v);
        }
        cmd
    }

    /// A proxy in front of this store, and the command that reaches the store through it
    /// (with the flags that point it there, which go before the lock's URL).
    pub(crate) fn via_proxy(&self) -> (support::proxy::FaultProxy, StoreCommand) {
        // Azurite's endpoint carries the account in its path: the proxy fronts the host.
        let parsed = url::Url::parse(&self.vars["ENDPOINT"]).expect("endpoint");
        let proxy = support::proxy::FaultProxy::start(&parsed.origin().ascii_serialization());
        let through = format!("{}{}", proxy.endpoint, parsed.path().trim_end_matches('/'));
        let cmd = match self.scheme {
            // The connection string's endpoint is replaced by --endpoint: account and key
            // from the emulator's variables.
            "az" => StoreCommand::bare(&self.cache)
                .env("AZURE_STORAGE_ACCOUNT", &self.vars["ACCOUNT"])
                .env("AZURE_STORAGE_KEY", &self.vars["KEY"])
                .args(["--endpoint", &through]),
            "gs" => StoreCommand::bare(&self.cache).env("STORAGE_EMULATOR_HOST", &proxy.endpoint),
            _ => self.cmd().args(["--endpoint", &through]),
        };
        (proxy, cmd)
    }

    /// Runs `status` until it exits `want` (0 free, 1 held), 20 s at most.
    pub(crate) fn until_status(&self, url: &str, want: i32) -> Output {
        let started = Instant::now();
        loop {
            let o = self.cmd().args(["status", url]).output();
            if code(&o) == want {
                return o;
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "{}: status never exited {want}: exit {}, {}{}",
                self.name,
                code(&o),
                stdout(&o),
                stderr(&o)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The binary, with no store's variables from the test's environment.
pub(crate) struct StoreCommand {
    pub(crate) cmd: Command,
}

impl StoreCommand {
    /// No credentials for any store; its own HOME and store-check cache.
    pub(crate) fn bare(cache: &str) -> StoreCommand {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_sets3lock"));
        for (k, _) in std::env::vars() {
            if k.starts_with("AWS_")
                || k.starts_with("AZURE_")
                || k.starts_with("GOOGLE_")
                || k.starts_with("SETS3LOCK_")
                || k == "STORAGE_EMULATOR_HOST"
            {
                cmd.env_remove(k);
            }
        }
        cmd.env("HOME", std::env::temp_dir())
            .env("XDG_CACHE_HOME", cache)
            // No metadata service off this machine, whatever a test leaves out.
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env("AZURE_IMDS_DISABLED", "true")
            .env("NO_GCE_CHECK", "true");
        StoreCommand { cmd }
    }

    pub(crate) fn args<I: IntoIterator<Item = S>, S: AsRef<std::ffi::OsStr>>(
        mut self,
        args: I,
    ) -> StoreCommand {
        self.cmd.args(args);
        self
    }

    pub(crate) fn env(mut self, k: &str, v: &str) -> StoreCommand {
        self.cmd.env(k, v);
        self
    }

    pub(crate) fn output(mut self) -> Output {
        self.cmd
            .stdin(Stdio::null())
            .output()
            .expect("run sets3lock")
    }

    pub(crate) fn spawn(mut self) -> Child {
        self.cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn sets3lock")
    }
}

/// A pipe's lines, read on a thread of their own, so that waiting for one can be bounded.
struct Lines {
    rx: mpsc::Receiver<String>,
    seen: String,
}

impl Lines {
    fn of<R: std::io::Read + Send + 'static>(pipe: R) -> Lines {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(pipe).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Lines {
            rx,
            seen: String::new(),
        }
    }

    /// The first line from here on that contains `needle`, within `bound`; or what was seen.
    fn until(&mut self, needle: &str, bound: Duration) -> Result<String, String> {
        let deadline = Instant::now() + bound;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push_str(&line);
                    self.seen.push('\n');
                    if line.contains(needle) {
                        return Ok(line);
                    }
                }
                Err(_) => return Err(self.seen.clone()),
            }
        }
    }
}

/// A holder whose program runs until told to stop (a `go` file), 60 s at most; killed and
/// told to stop if the test fails first.
struct Holder {
    child: Option<Child>,
    go: String,
}

/// A program that waits for the file `$0` (60 s at most).
const UNTIL_GO: &str =
    "i=0; while [ ! -e \"$0\" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done";

impl Holder {
    /// Takes the lock at `url` (with `extra` flags) and returns once `status` says it is held.
    fn take(store: &Store, url: &str, extra: &[&str]) -> Holder {
        let dir = scratch_dir("stores-holder");
        let go = format!("{dir}/go");
        let child = store
            .cmd()
            .args(store.lock_flags())
            .args(extra)
            .args([url, "sh", "-c", UNTIL_GO, &go])
            .spawn();
        let holder = Holder {
            child: Some(child),
            go,
        };
        store.until_status(url, 1);
        holder
    }

    /// Lets the program finish; the wrapper's output.
    fn release(mut self) -> Output {
        std::fs::write(&self.go, "").expect("go");
        self.child
            .take()
            .expect("running")
            .wait_with_output()
            .expect("wait for the holder")
    }

    /// SIGKILL for the wrapper (its lock stays), then lets its orphaned program finish.
    fn kill_9(mut self) {
        let mut child = self.child.take().expect("running");
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child.id() as i32),
            nix::sys::signal::Signal::SIGKILL,
        )
        .expect("kill -9");
        let _ = child.wait();
        std::fs::write(&self.go, "").expect("go");
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.go, "");
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_str(stdout(o).trim())
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(o)))
}

#[test]
fn run_mode_runs_the_program_under_the_lock_and_releases_it() {
    for s in stores() {
        let url = s.url("run");
        let o = s
            .cmd()
            .args(s.lock_flags())
            .args([&url, "sh", "-c", "echo \"ran $SETS3LOCK_URL\""])
            .output();
        assert_eq!(code(&o), 0, "{}: {}", s.name, stderr(&o));
        assert_eq!(stdout(&o).trim(), format!("ran {url}"), "{}", s.name);
        let o = s.cmd().args(["status", &url]).output();
        assert_eq!(code(&o), 0, "{}: free is exit 0: {}", s.name, stdout(&o));
        assert!(stdout(&o).contains("free"), "{}: {}", s.name, stdout(&o));
    }
}

#[test]
fn plain_run_mode_is_refused_on_fake_gcs_which_ignores_delete_preconditions() {
    let Some(s) = fake_gcs() else { return };
    let url = s.url("plain");
    let o = s.cmd().args([&url, "echo", "ran"]).output();
    assert_eq!(code(&o), 111, "{}", stderr(&o));
    assert!(!stdout(&o).contains("ran"), "the program never ran");
    one_line(&o, "--fenced");
}

#[test]
fn azure_account_and_key_with_an_endpoint_work_like_a_connection_string() {
    let Some(s) = azurite() else { return };
    let url = s.url("account-key");
    let with_key = || {
        StoreCommand::bare(&s.cache)
            .env("AZURE_STORAGE_ACCOUNT", &s.vars["ACCOUNT"])
            .env("AZURE_STORAGE_KEY", &s.vars["KEY"])
            .args(["--endpoint", &s.vars["ENDPOINT"]])
    };
    let o = with_key().args([&url, "echo", "ran"]).output();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "ran");
    let o = with_key().args(["status", &url]).output();
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("free"), "{}", stdout(&o));
}

#[test]
fn a_held_lock_refuses_n_times_out_and_status_shows_the_holder_and_etag() {
    for s in stores() {
        let url = s.url("held");
        let holder = Holder::take(&s, &url, &[]);
        // -n: at once, naming the holder.
        let o = s
            .cmd()
            .args(s.lock_flags())
            .args(["-n", &url, "echo", "ran"])
            .output();
        assert_eq!(code(&o), 111, "{}: {}", s.name, stderr(&o));
        assert!(!stdout(&o).contains("ran"), "{}", s.name);
        one_line(&o, "held by");
        // --timeout 1s: gives up within a few seconds.
        let started = Instant::now();
        let o = s
            .cmd()
            .args(s.lock_flags())
            .args(["-q", "--timeout", "1s", &url, "echo", "ran"])
            .output();
        let waited = started.elapsed();
        assert_eq!(code(&o), 111, "{}: {}", s.name, stderr(&o));
        assert!(!stdout(&o).contains("ran"), "{}", s.name);
        assert!(
            waited >= Duration::from_secs(1) && waited < Duration::from_secs(6),
            "{}: --timeout 1s gave up after {waited:?}",
            s.name
        );
        // status: exit 1, the holder and its ETag.
        let o = s.cmd().args(["status", &url]).output();
        assert_eq!(code(&o), 1, "{}: {}{}", s.name, stdout(&o), stderr(&o));
        assert!(stdout(&o).contains("held"), "{}: {}", s.name, stdout(&o));
        let o = s.cmd().args(["status", "--json", &url]).output();
        assert_eq!(code(&o), 1, "{}: {}", s.name, stderr(&o));
        let record = json(&o);
        assert_eq!(record["held"], true, "{}: {record}", s.name);
        assert_eq!(record["url"], url.as_str(), "{}: {record}", s.name);
        let etag = record["etag"].as_str().unwrap_or_default();
        assert!(!etag.is_empty(), "{}: no etag: {record}", s.name);
        assert!(
            stdout(&s.cmd().args(["status", &url]).output()).contains(etag),
            "{}: the text status names the same ETag",
            s.name
        );
        if s.fenced_only {
            assert_eq!(record["token"], 1, "{}: {record}", s.name);
        }
        let o = holder.release();
        assert_eq!(code(&o), 0, "{}: {}", s.name, stderr(&o));
        s.until_status(&url, 0);
    }
}

/// A wrong ETag like the right one: the same length and alphabet, one digit changed.
fn wrong(etag: &str) -> String {
    let mut s = etag.to_owned();
    let last = s.pop().expect("non-empty");
    s.push(if last == '0' { '1' } else { '0' });
    s
}

#[test]
fn unlock_with_the_etag_frees_a_lock_whose_holder_was_killed_and_refuses_a_wrong_etag() {
    for s in stores() {
        let url = s.url("unlock");
        let holder = Holder::take(&s, &url, &[]);
        holder.kill_9();
        let o = s.cmd().args(["status", "--json", &url]).output();
        assert_eq!(
            code(&o),
            1,
            "{}: SIGKILL cannot release: {}",
            s.name,
            stdout(&o)
        );
        let etag = json(&o)["etag"].as_str().expect("etag").to_owned();
        // A wrong ETag: nothing deleted, exit 1.
        let bad = wrong(&etag);
        let o = s.cmd().args(["unlock", &url, "--etag", &bad]).output();
        assert_eq!(code(&o), 1, "{}: {}{}", s.name, stdout(&o), stderr(&o));
        one_line(&o, "not deleted");
        let o = s.cmd().args(["status", "--json", &url]).output();
        assert_eq!(code(&o), 1, "{}: still held: {}", s.name, stdout(&o));
        assert_eq!(json(&o)["etag"], etag.as_str(), "{}: untouched", s.name);
        // The right one: freed, and taken at once.
        let o = s.cmd().args(["unlock", &url, "--etag", &etag]).output();
        assert_eq!(code(&o), 0, "{}: {}{}", s.name, stdout(&o), stderr(&o));
        let o = s.cmd().args(["status", &url]).output();
        assert_eq!(code(&o), 0, "{}: {}", s.name, stdout(&o));
        assert!(stdout(&o).contains("free"), "{}: {}", s.name, stdout(&o));
        let started = Instant::now();
        let o = s
            .cmd()
            .args(s.lock_flags())
            .args(["-n", &url, "true"])
            .output();
        assert_eq!(code(&o), 0, "{}: {}", s.name, stderr(&o));
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{}: a freed lock is taken at once, not after {:?}",
            s.name,
            started.elapsed()
        );
    }
}

#[test]
fn doctor_passes_on_azurite_and_says_fake_gcs_is_safe_for_fenced_locks_only() {
    if let Some(s) = azurite() {
        let o = s
            .cmd()
            .args(["doctor", &format!("az://{}/doctor/", s.bucket)])
            .output();
        assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
        assert_eq!(stdout(&o).matches("  ok ").count(), 4, "{}", stdout(&o));
    }
    if let Some(s) = fake_gcs() {
        let o = s
            .cmd()
            .args(["doctor", &format!("gs://{}/doctor/", s.bucket)])
            .output();
        assert_ne!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
        let out = stdout(&o);
        assert!(
            out.lines()
                .any(|l| l.contains("FAILED") && l.contains("DELETE If-Match")),
            "{out}"
        );
        assert!(
            out.lines()
                .any(|l| l.starts_with("verdict:") && l.contains("--fenced")),
            "{out}"
        );
    }
}

/// `doctor`'s race, when the store throttles it as S3 answers simultaneous PUTs to one key
/// (`503 SlowDown`): a throttled racer sends its create again, and the verdict is the
/// store's, not "inconclusive" (as it was when each such racer counted as unknown). When
/// replies are lost on the way, the creates may have been applied and then overwritten,
/// which nothing can show afterwards: the verdict stays "inconclusive" and says why, never
/// a pass.
#[test]
fn doctor_sends_again_the_racers_answered_slow_down_and_never_passes_on_lost_replies() {
    use support::proxy::{Fate, Plan};
    let Some(s) = seaweedfs() else { return };
    for (fate, count) in [(Fate::SlowDown, 8), (Fate::LoseReply, 3)] {
        let (proxy, cmd) = s.via_proxy();
        proxy.fault(Plan {
            method: "PUT",
            path: "-race".into(),
            count,
            fate,
        });
        let o = cmd
            .args(["doctor", &format!("s3://{}/doctor/", s.bucket)])
            .output();
        let out = stdout(&o);
        assert_eq!(
            proxy.faulted(),
            count,
            "{fate:?}: the plan faulted as many racers as it names: {out}"
        );
        let race = out
            .lines()
            .find(|l| l.contains("parallel"))
            .unwrap_or_else(|| panic!("no line for the race: {out}"));
        match fate {
            Fate::SlowDown => {
                assert_eq!(code(&o), 0, "{out}{}", stderr(&o));
                assert!(
                    race.starts_with("  ok")
                        && race.contains("sent again")
                        && race.contains("HTTP 503 SlowDown"),
                    "{race}"
                );
            }
            Fate::LoseReply => {
                assert_eq!(code(&o), 111, "{out}{}", stderr(&o));
                assert!(
                    race.starts_with("  ERROR") && race.contains("may have been applied"),
                    "{race}"
                );
            }
        }
    }
}

/// Replays a witness of `S <who>` / `E <who>` lines: how many entered, and the most inside at
/// once; or the first line that breaks the rules.
fn replay(log: &str) -> Result<(usize, usize), String> {
    let mut inside = std::collections::BTreeSet::new();
    let (mut entered, mut most) = (0, 0);
    for (n, line) in log.lines().enumerate() {
        match line.split_whitespace().collect::<Vec<_>>()[..] {
            ["S", who, ..] => {
                if !inside.insert(who.to_owned()) {
                    return Err(format!("line {n}: {who} entered twice:\n{log}"));
                }
                entered += 1;
                most = most.max(inside.len());
            }
            ["E", who] => {
                if !inside.remove(who) {
                    return Err(format!("line {n}: {who} left without entering:\n{log}"));
                }
            }
            _ => return Err(format!("line {n}: {line:?}\n{log}")),
        }
    }
    Ok((entered, most))
}

#[test]
fn two_slots_let_two_programs_in_at_once_and_a_third_waits() {
    for s in stores() {
        let url = s.url("slots");
        let dir = scratch_dir("stores-slots");
        let witness = format!("{dir}/witness");
        let go = format!("{dir}/go");
        let script = format!(
            "echo \"S $$ slot-$SETS3LOCK_SLOT\" >> {witness}; {UNTIL_GO}; echo \"E $$\" >> {witness}"
        );
        let mut children: Vec<Child> = (0..3)
            .map(|_| {
                s.cmd()
                    .args(s.lock_flags())
                    .args(["--slots", "2", &url, "sh", "-c", &script, &go])
                    .spawn()
            })
            .collect();
        // Every waiter's stderr, on one channel.
        let (tx, rx) = mpsc::channel();
        for child in &mut children {
            let tx = tx.clone();
            let pipe = child.stderr.take().expect("piped stderr");
            std::thread::spawn(move || {
                for line in std::io::BufReader::new(pipe).lines().map_while(Result::ok) {
                    let _ = tx.send(line);
                }
            });
        }
        drop(tx);
        let mut stderr_lines = Lines {
            rx,
            seen: String::new(),
        };
        let entered = || std::fs::read_to_string(&witness).unwrap_or_default();
        let started = Instant::now();
        while entered().lines().count() < 2 {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "{}: two never got in: {}\n{}",
                s.name,
                entered(),
                stderr_lines.seen
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        if let Err(seen) = stderr_lines.until("waiting for a slot", Duration::from_secs(20)) {
            let _ = std::fs::write(&go, "");
            panic!("{}: the third never said it was waiting: {seen}", s.name);
        }
        let log = entered();
        let _ = std::fs::write(&go, "");
        assert_eq!(
            log.lines().count(),
            2,
            "{}: two inside, the third waiting: {log}",
            s.name
        );
        let slots: std::collections::BTreeSet<_> = log
            .lines()
            .filter_map(|l| l.split_whitespace().nth(2))
            .collect();
        assert_eq!(
            slots,
            ["slot-0", "slot-1"].into_iter().collect(),
            "{}: {log}",
            s.name
        );
        for child in children {
            let o = child.wait_with_output().expect("wait");
            assert_eq!(code(&o), 0, "{}: {}", s.name, stdout(&o));
        }
        let log = entered();
        assert_eq!(replay(&log), Ok((3, 2)), "{}: {log}", s.name);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn fenced_runs_get_tokens_1_2_3_in_sets3lock_token() {
    for s in stores() {
        let url = s.url("fenced");
        for n in 1..=3u64 {
            let o = s
                .cmd()
                .args(["--fenced", &url, "sh", "-c", "echo $SETS3LOCK_TOKEN"])
                .output();
            assert_eq!(code(&o), 0, "{}: {}", s.name, stderr(&o));
            assert_eq!(stdout(&o).trim(), n.to_string(), "{}", s.name);
            let status = s.cmd().args(["status", &url]).output();
            assert_eq!(code(&status), 0, "{}: {}", s.name, stdout(&status));
            assert!(
                stdout(&status).contains(&format!("free, last token {n}")),
                "{}: {}",
                s.name,
                stdout(&status)
            );
        }
    }
}

#[test]
fn watch_prints_the_holder_then_the_release() {
    for s in stores() {
        let url = s.url("watch");
        let holder = Holder::take(&s, &url, &[]);
        let mut watch = s.cmd().args(["watch", "--interval", "200ms", &url]).spawn();
        let mut lines = Lines::of(watch.stdout.take().expect("piped stdout"));
        let seen = lines.until("held by", Duration::from_secs(20));
        let released = holder.release();
        let freed = lines.until(": free", Duration::from_secs(20));
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(watch.id() as i32),
            nix::sys::signal::Signal::SIGINT,
        )
        .expect("kill");
        let o = watch.wait_with_output().expect("wait for watch");
        let line = seen.unwrap_or_else(|seen| panic!("{}: no holder in: {seen}", s.name));
        assert!(line.contains(&url), "{}: {line}", s.name);
        assert_eq!(code(&released), 0, "{}: {}", s.name, stderr(&released));
        freed.unwrap_or_else(|seen| panic!("{}: never saw it freed: {seen}", s.name));
        assert_eq!(code(&o), 0, "{}: watch on SIGINT: {}", s.name, stderr(&o));
    }
}

/// `processes` processes, each running `sections` sections one after another under the lock;
/// each section appends `enter PID` and `exit PID` to the witness with O_APPEND.
fn contend(s: &Store, processes: usize, sections: usize) {
    let url = s.url("contend");
    let dir = scratch_dir("stores-contend");
    let witness = format!("{dir}/witness");
    let script =
        format!("echo \"enter $$\" >> {witness}; sleep 0.01; echo \"exit $$\" >> {witness}");
    let started = Instant::now();
    let workers: Vec<_> = (0..processes)
        .map(|_| {
            let args: Vec<String> = s
                .lock_flags()
                .iter()
                .map(|f| f.to_string())
                .chain(
                    [
                        "-q",
                        "--poll-max",
                        "300ms",
                        "--timeout",
                        "90s",
                        &url,
                        "sh",
                        "-c",
                        &script,
                    ]
                    .map(String::from),
                )
                .collect();
            let cache = s.cache.clone();
            let env = s.env.clone();
            std::thread::spawn(move || {
                for _ in 0..sections {
                    let mut cmd = StoreCommand::bare(&cache);
                    for (k, v) in &env {
                        cmd = cmd.env(k, v);
                    }
                    let o = cmd.args(&args).output();
                    if code(&o) != 0 {
                        return Err(format!("exit {}: {}", code(&o), stderr(&o)));
                    }
                }
                Ok(())
            })
        })
        .collect();
    for w in workers {
        w.join()
            .expect("worker")
            .unwrap_or_else(|e| panic!("{}: {e}", s.name));
    }
    let wall = started.elapsed();
    let log = std::fs::read_to_string(&witness).expect("witness");
    let lines: Vec<&str> = log.lines().collect();
    let mut overlaps = 0;
    for pair in lines.chunks(2) {
        let ok = pair.len() == 2
            && pair[0].starts_with("enter ")
            && pair[1].starts_with("exit ")
            && pair[0]["enter ".len()..] == pair[1]["exit ".len()..];
        if !ok {
            overlaps += 1;
        }
    }
    assert_eq!(overlaps, 0, "{}: {overlaps} overlaps:\n{log}", s.name);
    assert_eq!(
        lines.len(),
        2 * processes * sections,
        "{}: every section ran:\n{log}",
        s.name
    );
    eprintln!(
        "{}: {processes} processes x {sections} sections, no overlap, in {wall:?}",
        s.name
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn six_processes_by_fifteen_sections_never_overlap() {
    for s in stores() {
        contend(&s, 6, 15);
    }
}

#[test]
fn bad_input_gets_one_clear_line_and_the_right_code() {
    let cache = scratch_dir("stores-bad");
    let bare = || StoreCommand::bare(&cache);
    // No store needed: these are refused before any request.
    let o = bare().args(["az://some-container/k", "true"]).output();
    assert_eq!(code(&o), 111, "{}", stderr(&o));
    one_line(&o, "AZURE_STORAGE_CONNECTION_STRING");
    let o = bare()
        .env("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")
        .env("AWS_SECRET_ACCESS_KEY", "secret")
        .args([
            "--endpoint",
            "https://storage.googleapis.com",
            "s3://some-bucket/k",
            "true",
        ])
        .output();
    assert_eq!(code(&o), 111, "{}", stderr(&o));
    one_line(&o, "gs://");
    // An account (or endpoint) whose host does not resolve: `.invalid` never does.
    let o = bare()
        .env("AZURE_STORAGE_ACCOUNT", "nosuchaccount")
        .env("AZURE_STORAGE_KEY", "a2V5")
        .args([
            "-n",
            "--endpoint",
            "https://nosuchaccount.invalid",
            "az://c-1/k",
            "true",
        ])
        .output();
    assert_eq!(code(&o), 111, "{}", stderr(&o));
    one_line(&o, "does not resolve: check the account name");
    if let Some(s) = azurite() {
        let url = s.url("bad");
        let with_key = |key: &str| {
            StoreCommand::bare(&s.cache)
                .env("AZURE_STORAGE_ACCOUNT", &s.vars["ACCOUNT"])
                .env("AZURE_STORAGE_KEY", key)
                .args(["--endpoint", &s.vars["ENDPOINT"], &url, "true"])
        };
        let cases: Vec<(&str, StoreCommand, &str)> = vec![
            (
                "a malformed connection string",
                bare()
                    .env("AZURE_STORAGE_CONNECTION_STRING", "garbage")
                    .args([&url, "true"]),
                "AZURE_STORAGE_CONNECTION_STRING",
            ),
            (
                "a key that is not base64",
                with_key("not base64!"),
                "base64",
            ),
            (
                "a wrong key",
                // Base64 of 64 zero bytes: the right length, and wrong.
                with_key(&format!("{}==", "A".repeat(86))),
                "403",
            ),
            (
                "a missing container",
                s.cmd().args(["az://no-such-container-sets3lock/k", "true"]),
                "az storage container create",
            ),
        ];
        for (what, cmd, mentions) in cases {
            let o = cmd.output();
            assert_eq!(code(&o), 111, "{what}: {}", stderr(&o));
            one_line(&o, mentions);
        }
    }
    if let Some(s) = fake_gcs() {
        let o = s
            .cmd()
            .args(["--fenced", "gs://no-such-bucket-sets3lock/k", "true"])
            .output();
        assert_eq!(code(&o), 111, "a missing bucket: {}", stderr(&o));
        one_line(&o, "bucket");
    }
}

/// Renewals that stop getting through (a proxy that drops every reply from some moment on)
/// end the program before the lease can run out, and the next holder starts only after it
/// stopped: on every store, SeaweedFS included.
#[test]
fn the_program_is_stopped_before_its_lease_can_expire_when_renewals_fail_on_every_store() {
    for s in every_store() {
        let url = s.url("blackout");
        let (proxy, holder) = s.via_proxy();
        let dir = scratch_dir("stores-blackout");
        let witness = format!("{dir}/witness");
        let script = format!(
            "trap 'echo stopped $(date +%s.%N) >> {witness}; kill $!; exit 0' TERM; sleep 60 & wait"
        );
        let holder = holder
            .args(s.lock_flags())
            .args(["--lease", "3s", "--kill-after", "1s"])
            .args([url.as_str(), "sh", "-c", &script])
            .spawn();
        s.until_status(&url, 1);
        proxy.blackout(); // from now on no reply reaches the holder
        let dark = Instant::now();
        let waiter_script = format!("echo acquired $(date +%s.%N) >> {witness}");
        let mut waiter_args: Vec<&str> = s.lock_flags().to_vec();
        waiter_args.extend(["-q", url.as_str(), "sh", "-c", &waiter_script]);
        let waiter = s.cmd().args(&waiter_args).spawn();
        let o = holder.wait_with_output().expect("holder");
        assert_eq!(code(&o), 112, "{}: {}", s.name, stderr(&o));
        // Reported within about a second of the 3 s lease's end, however silent the store.
        assert!(
            dark.elapsed() <= Duration::from_millis(4500),
            "{}: exited {:?} after the silence began",
            s.name,
            dark.elapsed()
        );
        // The first line says why the program was stopped, the second what became of the lock.
        let err = stderr(&o);
        let lines: Vec<&str> = err.lines().collect();
        assert!(
            lines.len() == 2
                && lines[0].contains("no renewal got through")
                && lines[1].contains("left"),
            "{}: {err}",
            s.name
        );
        let w = waiter.wait_with_output().expect("waiter");
        assert_eq!(code(&w), 0, "{}: {}", s.name, stderr(&w));
        let log = std::fs::read_to_string(&witness).expect("witness");
        let lines: Vec<&str> = log.lines().collect();
        assert!(
            lines.len() == 2 && lines[0].starts_with("stopped") && lines[1].starts_with("acquired"),
            "{}: the program must stop before the next holder starts: {log}",
            s.name
        );
    }
}

/// A port that accepts connections and never answers (a hung proxy, a black-holed load
/// balancer): `--timeout` still ends the wait on time, on Azure and on GCS alike. Needs no
/// emulator.
#[test]
fn timeout_holds_against_an_azure_or_gcs_endpoint_that_never_answers() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let silent = format!("http://{}", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in listener.incoming().flatten() {
            held.push(c); // never read, never answered, never closed
        }
    });
    let cache = scratch_dir("stores-silent");
    for (what, cmd, url) in [
        (
            "azure",
            StoreCommand::bare(&cache)
                .env("AZURE_STORAGE_ACCOUNT", "devstoreaccount1")
                .env("AZURE_STORAGE_KEY", "a2V5")
                .args(["--endpoint", &format!("{silent}/devstoreaccount1")]),
            "az://silent-container/k",
        ),
        (
            "gcs",
            StoreCommand::bare(&cache)
                .env("STORAGE_EMULATOR_HOST", &silent)
                .args(["--fenced"]),
            "gs://silent-bucket/k",
        ),
    ] {
        let started = Instant::now();
        let o = cmd.args(["--timeout", "2s", url, "true"]).output();
        let took = started.elapsed();
        assert_eq!(code(&o), 111, "{what}: {}", stderr(&o));
        assert!(stderr(&o).contains("timed out"), "{what}: {}", stderr(&o));
        // docs/GUIDE.md's promise: within the timeout plus 3 s.
        assert!(took < Duration::from_secs(5), "{what}: {took:?}");
    }
}

/// On a store whose DELETE ignores its condition (fake-gcs-server), `unlock` with an ETag that
/// is not the current one must not send a DELETE at all: it would delete the holder's lock. A
/// presence-mode lock there (the store check skipped, as an operator might) stays held.
#[test]
fn unlock_never_deletes_a_lock_whose_etag_is_not_the_one_given_even_where_delete_ignores_it() {
    let Some(s) = fake_gcs() else { return };
    let url = s.url("unlock-presence");
    // A presence-mode holder: `Holder::take` adds --fenced here, so start it by hand.
    let dir = scratch_dir("stores-holder");
    let go = format!("{dir}/go");
    let child = StoreCommand::bare(&s.cache)
        .env("STORAGE_EMULATOR_HOST", &s.vars["ENDPOINT"])
        .args(["--no-store-check", &url, "sh", "-c", UNTIL_GO, &go])
        .spawn();
    let holder = Holder {
        child: Some(child),
        go,
    };
    s.until_status(&url, 1);
    let o = s.cmd().args(["status", "--json", &url]).output();
    let etag = json(&o)["etag"].as_str().expect("etag").to_owned();
    let o = s
        .cmd()
        .args(["unlock", &url, "--etag", &wrong(&etag)])
        .output();
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    one_line(&o, "not deleted");
    let o = s.cmd().args(["status", "--json", &url]).output();
    assert_eq!(code(&o), 1, "still held: {}", stdout(&o));
    assert_eq!(json(&o)["etag"], etag.as_str(), "untouched");
    // A gs:// ETag is a generation: anything else is a usage error, before any request.
    let o = s.cmd().args(["unlock", &url, "--etag", "abc"]).output();
    assert_eq!(code(&o), 100, "{}", stderr(&o));
    one_line(&o, "generation, a decimal number");
    drop(holder);
}

/// Holds across processes on Azure and GCS: acquire, renew, a program under the handle,
/// release; a handle past its lease by the store's clock is refused (exit 112) and nothing is
/// written; `--hold-at-least` lets one `-n` run in per period and the next right after. Both
/// emulators send `Date` and `Last-Modified`, which the last two read.
#[test]
fn handles_and_hold_at_least_on_every_store() {
    for s in stores() {
        let name = s.name;
        let url = s.url("handle");
        let mut acquire = vec!["acquire", "--lease", "4s"];
        acquire.extend(s.lock_flags());
        acquire.push(&url);
        let o = s.cmd().args(&acquire).output();
        assert_eq!(code(&o), 0, "{name}: {}", stderr(&o));
        let handle = stdout(&o).trim().to_owned();
        assert!(
            handle.contains("#sets3lock-hold:owner="),
            "{name}: {handle}"
        );
        std::thread::sleep(Duration::from_secs(2));
        let o = s.cmd().args(["renew", &handle]).output();
        assert_eq!(code(&o), 0, "{name}: renew: {}", stderr(&o));
        let o = s
            .cmd()
            .args([
                "--handle",
                &handle,
                "--keep",
                "sh",
                "-c",
                "sleep 5; echo $SETS3LOCK_TOKEN",
            ])
            .output();
        assert_eq!(code(&o), 0, "{name}: --handle: {}", stderr(&o));
        if s.fenced_only {
            assert_eq!(stdout(&o).trim(), "1", "{name}: the grant's token");
        }
        s.until_status(&url, 1);
        // Past its lease (4 s) by the store's clock: refused, and the record is unchanged.
        std::thread::sleep(Duration::from_secs(7));
        let before = s.cmd().args(["status", "--json", &url]).output();
        let o = s.cmd().args(["renew", &handle]).output();
        assert_eq!(code(&o), 112, "{name}: {}", stderr(&o));
        one_line(&o, "its lease ran out");
        let after = s.cmd().args(["status", "--json", &url]).output();
        assert_eq!(
            stdout(&before),
            stdout(&after),
            "{name}: a refused renewal wrote"
        );
        // Release still removes it, and says it was overdue.
        let o = s.cmd().args(["release", &handle]).output();
        assert_eq!(code(&o), 112, "{name}: {}", stderr(&o));
        one_line(&o, "lease had run out");
        s.until_status(&url, 0);

        // At most one -n run per 5 s.
        let url = s.url("hourly");
        let mut job = vec!["-n", "--hold-at-least", "5s", "--lease", "3s"];
        job.extend(s.lock_flags());
        job.extend([url.as_str(), "true"]);
        let o = s.cmd().args(&job).output();
        let first_done = Instant::now();
        assert_eq!(code(&o), 0, "{name}: {}", stderr(&o));
        let o = s.cmd().args(&job).output();
        assert_eq!(
            code(&o),
            111,
            "{name}: a second run within the period: {}",
            stderr(&o)
        );
        std::thread::sleep(
            (first_done + Duration::from_secs(7)).saturating_duration_since(Instant::now()),
        );
        let o = s.cmd().args(&job).output();
        assert_eq!(
            code(&o),
            0,
            "{name}: the run after the period: {}",
            stderr(&o)
        );
    }
}

/// A store check's verdict is remembered for the credentials that passed it, not for the
/// container: after the account key passed, a SAS that may not delete (`sp=rcw`) is still
/// checked, and refused at once in one line that names the permission (its program never
/// runs), with no probe object left behind. Run past the check, its release is refused: a
/// loud failure (exit 111, one line naming the permission), not the program's 0. In fenced
/// mode, which never deletes, the same SAS locks, and every check uses one kept probe.
#[test]
fn a_verdict_is_kept_for_its_credentials_and_a_refused_release_is_loud() {
    let Some(s) = azurite() else { return };
    let url = format!(
        "az://{}/{}",
        s.bucket,
        support::fresh_key("cli-sas-identity")
    );
    let cache = scratch_dir("stores-identity");
    let endpoint = s.vars["ENDPOINT"].clone();
    let account = s.vars["ACCOUNT"].clone();
    let with_key = StoreCommand::bare(&cache)
        .env("AZURE_STORAGE_ACCOUNT", &account)
        .env("AZURE_STORAGE_KEY", &s.vars["KEY"])
        .args(["--endpoint", &endpoint, &url, "true"])
        .output();
    assert_eq!(code(&with_key), 0, "{}", stderr(&with_key));
    let sas = support::sas::service_sas(&account, &s.vars["KEY"], &s.bucket, "rcw");
    let witness = format!("{}/ran", scratch_dir("stores-identity-witness"));
    let no_delete = |extra: &[&str]| {
        let mut args: Vec<&str> = vec!["--endpoint", &endpoint];
        args.extend(extra);
        let script = format!("touch {witness}");
        StoreCommand::bare(&cache)
            .env("AZURE_STORAGE_ACCOUNT", &account)
            .env("AZURE_STORAGE_SAS_TOKEN", &sas)
            .args(&args)
            .args([url.as_str(), "sh", "-c", &script])
            .output()
    };
    let o = no_delete(&[]);
    assert_eq!(code(&o), 111, "{}", stderr(&o));
    one_line(&o, "may not delete");
    one_line(&o, "sp=rwd");
    assert!(
        !std::path::Path::new(&witness).exists(),
        "the program ran under a SAS that cannot release"
    );
    let key = url.trim_start_matches(&format!("az://{}/", s.bucket));
    assert_eq!(
        blobs_beside(&s, key),
        Vec::<String>::new(),
        "the refusal left something behind"
    );
    let o = no_delete(&["--no-store-check"]);
    assert!(std::path::Path::new(&witness).exists(), "{}", stderr(&o));
    assert_eq!(code(&o), 111, "{}", stderr(&o));
    one_line(&o, "refused the release");
    // Fenced, on a lock of its own (the last one is held until its lease ends): locked, and
    // each check (a fresh cache each time) uses the one kept probe.
    let fenced = support::fresh_key("cli-sas-fenced");
    let url = format!("az://{}/{fenced}", s.bucket);
    for run in 0..2 {
        let fresh_cache = scratch_dir(&format!("stores-identity-fenced-{run}"));
        let o = StoreCommand::bare(&fresh_cache)
            .env("AZURE_STORAGE_ACCOUNT", &account)
            .env("AZURE_STORAGE_SAS_TOKEN", &sas)
            .args(["--endpoint", &endpoint, "--fenced", "-v", &url, "true"])
            .output();
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        assert!(
            stderr(&o).contains("store-check: conditional writes honoured"),
            "run {run}: {}",
            stderr(&o)
        );
        assert_eq!(
            blobs_beside(&s, &fenced),
            vec![fenced.clone(), format!("{fenced}.sets3lock-store-check")],
            "run {run}"
        );
    }
}

/// The names of the blobs whose names start with `key`, listed with the account key.
fn blobs_beside(s: &Store, key: &str) -> Vec<String> {
    let list = support::sas::service_sas(&s.vars["ACCOUNT"], &s.vars["KEY"], &s.bucket, "rl");
    let url = format!(
        "{}/{}?restype=container&comp=list&prefix={key}&{list}",
        s.vars["ENDPOINT"], s.bucket
    );
    let text = reqwest::blocking::get(&url)
        .and_then(|r| r.error_for_status())
        .and_then(|r| r.text())
        .unwrap_or_else(|e| panic!("listing {url}: {e}"));
    text.split("<Name>")
        .skip(1)
        .filter_map(|rest| rest.split_once("</Name>").map(|(name, _)| name.to_owned()))
        .collect()
}
