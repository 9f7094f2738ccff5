//! The event loop against SeaweedFS (started by `bash scripts/test.sh`): two processes, each one
//! thread driving several locks, exclude each other, renew, cancel a waiting acquisition and
//! release; and a store that never answers is given up on within the request limit.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// One running event loop: its input, and its output lines as they come.
struct Loop {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Loop {
    fn start(store: &Store, args: &[&str]) -> Loop {
        let mut child = Command::new(env!("CARGO_BIN_EXE_sets3lock-example-event-loop"))
            .args(args)
            .env("AWS_ENDPOINT_URL", &store.endpoint)
            .env("AWS_ACCESS_KEY_ID", &store.key)
            .env("AWS_SECRET_ACCESS_KEY", &store.secret)
            .env("AWS_REGION", "us-east-1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the example runs");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let mut l = Loop {
            child,
            stdin,
            lines,
            seen: Vec::new(),
        };
        l.expect("ready", Duration::from_secs(10));
        l
    }

    fn say(&mut self, command: &str) {
        writeln!(self.stdin, "{command}").expect("the loop reads its input");
    }

    /// Waits (at most `within`) for the line `want`, which may have come already (the locks
    /// of one loop print in no set order); fails with every line seen.
    fn expect(&mut self, want: &str, within: Duration) {
        if self.printed(want) {
            return;
        }
        let end = Instant::now() + within;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line == want {
                        return;
                    }
                }
                Err(_) => panic!("no {want:?} within {within:?}; saw {:?}", self.seen),
            }
        }
    }

    /// Whether `line` was printed so far (without waiting).
    fn printed(&mut self, line: &str) -> bool {
        self.seen.extend(self.lines.try_iter());
        self.seen.iter().any(|l| l == line)
    }

    /// Quits and waits for the process to end (at most 20 s).
    fn quit(&mut self) {
        self.say("quit");
        self.expect("bye", Duration::from_secs(20));
        let end = Instant::now() + Duration::from_secs(5);
        while self.child.try_wait().ok().flatten().is_none() {
            assert!(Instant::now() < end, "the loop did not exit after bye");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Where the loops lock, and with which keys.
struct Store {
    endpoint: String,
    key: String,
    secret: String,
}

/// SeaweedFS, and its bucket; `None` (the test skips) when it is not running and not required.
fn seaweedfs() -> Option<(Store, String)> {
    let endpoint = std::env::var("SETS3LOCK_SEAWEEDFS_ENDPOINT").ok();
    let Some(endpoint) = endpoint else {
        if std::env::var("SETS3LOCK_REQUIRE_S3").as_deref() == Ok("1") {
            panic!("SeaweedFS is not running: bash scripts/s3-server.sh start seaweedfs (SETS3LOCK_REQUIRE_S3=1 requires it)");
        }
        eprintln!("skipped: SeaweedFS is not running (bash scripts/s3-server.sh start seaweedfs)");
        return None;
    };
    let var = |n: &str| std::env::var(n).unwrap_or_else(|_| panic!("{n} is set with the endpoint"));
    let store = Store {
        endpoint,
        key: var("SETS3LOCK_SEAWEEDFS_ACCESS_KEY"),
        secret: var("SETS3LOCK_SEAWEEDFS_SECRET"),
    };
    Some((store, var("SETS3LOCK_SEAWEEDFS_BUCKET")))
}

fn fresh(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("event-loop/{name}-{}-{nanos}", std::process::id())
}

#[test]
fn two_loops_exclude_each_other_renew_cancel_and_release_many_locks() {
    let Some((store, bucket)) = seaweedfs() else {
        return;
    };
    let (k1, k2) = (fresh("one"), fresh("two"));
    let secs = Duration::from_secs;
    // A: a 3 s lease, so renewals come every second.
    let mut a = Loop::start(&store, &[&bucket, "3"]);
    a.say(&format!("acquire {k1}"));
    a.say(&format!("acquire {k2}"));
    a.expect(&format!("{k1} acquired token=-"), secs(10));
    a.expect(&format!("{k2} acquired token=-"), secs(10));
    // B cannot have k1 while A holds it: a bounded wait ends not acquired.
    let mut b = Loop::start(&store, &[&bucket, "3"]);
    b.say(&format!("acquire {k1} 2"));
    b.expect(&format!("{k1} not-acquired"), secs(10));
    // B waits for k2 without bound, then gives up: the acquisition is cancelled.
    b.say(&format!("acquire {k2}"));
    b.expect(&format!("{k2} contended"), secs(10));
    b.say(&format!("release {k2}"));
    b.expect(&format!("{k2} cancelled"), secs(10));
    // Meanwhile A's one thread renewed both, several times (three leases have passed).
    std::thread::sleep(secs(4));
    a.expect(&format!("{k1} renewed"), secs(1));
    a.expect(&format!("{k2} renewed"), secs(1));
    assert!(!a.printed(&format!("{k1} expired")) && !a.printed(&format!("{k1} lost")));
    // A lets k1 go; B takes it at once.
    a.say(&format!("release {k1}"));
    a.expect(&format!("{k1} released"), secs(10));
    b.say(&format!("acquire {k1} 0"));
    b.expect(&format!("{k1} acquired token=-"), secs(10));
    // Quitting releases what each holds and ends when every lock is idle.
    a.quit();
    b.quit();
    assert!(!b.printed(&format!("{k1} lost")) && !b.printed(&format!("{k1} expired")));
    assert!(b.printed(&format!("{k1} released")), "{:?}", b.seen);
}

#[test]
fn a_store_that_never_answers_is_given_up_on_within_the_request_limit() {
    // A server that takes connections and requests and never says a word.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let silent = Store {
        endpoint: format!("http://{}", listener.local_addr().expect("addr")),
        key: "AKIDEXAMPLE".into(),
        secret: "secret".into(),
    };
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().map_while(Result::ok) {
            held.push(stream); // open, unanswered
        }
    });
    // Requests wait 300 ms at most; the acquisition waits 2 s at most.
    let mut l = Loop::start(&silent, &["bucket", "60", "300"]);
    let started = Instant::now();
    l.say("acquire k 2");
    l.expect("k not-acquired", Duration::from_secs(15));
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(6),
        "gave up after {took:?}: each request must end within its limit"
    );
    l.quit();
}
