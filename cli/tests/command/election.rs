//! Beyond one mutex, on the real server, with an O_APPEND witness file that the programs write
//! to: a semaphore of 3 slots shared by 10 processes, and 8 processes campaigning for one
//! key through crashes (the whole process group killed with SIGKILL) and resignations, while
//! `sets3lock watch` observers follow every change of leader.

use crate::support;

use crate::support::command::{code, stderr, TestCommand};
use crate::support::{scratch_dir, Server};
use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::process::Child;
use std::time::{Duration, Instant};

fn seaweedfs() -> Option<Server> {
    support::real("seaweedfs")
}

/// Appends a line to the witness (one `write` with O_APPEND, as the programs' `echo >>`).
fn append(witness: &str, line: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(witness)
        .expect("witness");
    f.write_all(format!("{line}\n").as_bytes()).expect("append");
}

/// Replays a witness of `S <who> ...` (entered) and `E <who>` / `K <who>` (left, or killed)
/// lines: the most inside at once, or the first line that breaks the rules.
fn most_inside(log: &str, limit: usize) -> Result<usize, String> {
    let mut inside = BTreeMap::new();
    let mut most = 0;
    for (n, line) in log.lines().enumerate() {
        let mut words = line.split_whitespace();
        let (Some(what), Some(who)) = (words.next(), words.next()) else {
            return Err(format!("line {n}: {line:?}"));
        };
        match what {
            "S" => {
                if inside.insert(who.to_owned(), n).is_some() {
                    return Err(format!("line {n}: {who} entered twice"));
                }
                most = most.max(inside.len());
                if inside.len() > limit {
                    return Err(format!(
                        "line {n}: {} inside: {inside:?}\n{log}",
                        inside.len()
                    ));
                }
            }
            "E" | "K" => {
                inside.remove(who);
            }
            _ => return Err(format!("line {n}: {line:?}")),
        }
    }
    Ok(most)
}

#[test]
fn the_witness_replay_catches_one_too_many() {
    assert_eq!(most_inside("S a\nS b\nE a\nS c\nE b\nE c\n", 2), Ok(2));
    assert!(most_inside("S a\nS b\nS c\n", 2).is_err());
    assert!(most_inside("S a\nK a\nS a\nS a\n", 2).is_err());
}

#[test]
fn a_semaphore_of_three_never_has_more_than_three_inside_through_a_crash() {
    let Some(s) = seaweedfs() else { return };
    let url = s.url(&support::fresh_key("cli-slots"));
    let dir = scratch_dir("slots");
    let witness = format!("{dir}/witness");
    // Each program: enter (with its slot), stay a second, leave.
    let script = format!(
        "echo \"S $$ slot-$SETS3LOCK_SLOT\" >> {witness}; sleep 1; echo \"E $$\" >> {witness}"
    );
    let run = |extra: &[&str]| {
        let mut args = vec!["-q", "--slots", "3", "--lease", "3s"];
        args.extend_from_slice(extra);
        args.extend([url.as_str(), "sh", "-c", &script]);
        let mut command = TestCommand::new(&s).args(args);
        command.cmd.process_group(0);
        command.spawn()
    };
    // A holder that crashes, machine and all: its slot must wait out the lease.
    let crasher = run(&[]);
    let started = Instant::now();
    while !std::fs::read_to_string(&witness).is_ok_and(|w| w.contains("S ")) {
        assert!(started.elapsed() < Duration::from_secs(20), "never entered");
        std::thread::sleep(Duration::from_millis(20));
    }
    nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(crasher.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("killpg");
    let crashed = std::fs::read_to_string(&witness).expect("witness");
    let pid = crashed.split_whitespace().nth(1).expect("pid").to_owned();
    append(&witness, &format!("K {pid}"));
    let mut crasher = crasher;
    let _ = crasher.wait();
    let children: Vec<Child> = (0..10).map(|_| run(&[])).collect();
    for child in children {
        let o = child.wait_with_output().expect("wait");
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
    let log = std::fs::read_to_string(&witness).expect("witness");
    // Safety, strictly: never more than three inside (`most_inside` fails on a fourth).
    let most = most_inside(&log, 3).unwrap_or_else(|e| panic!("{e}"));
    // Liveness, with a bound a loaded two-core machine meets: the slots were used side by
    // side (all three at once is likely, not guaranteed: ten one-second programs may leave
    // one slot's next holder still starting while the others finish).
    assert!(most >= 2, "the slots were never used side by side:\n{log}");
    assert_eq!(log.lines().filter(|l| l.starts_with("S ")).count(), 11);
    // Each slot had one holder at a time, and all three were used.
    for slot in 0..3 {
        let lines: String = log
            .lines()
            .filter_map(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                (w[0] != "S" || w[2] == format!("slot-{slot}")).then(|| format!("{l}\n"))
            })
            .collect();
        // Ends of other slots' holders are in `lines` too: harmless, they were never inside.
        assert_eq!(
            most_inside(&lines, 1).map(|m| m > 0),
            Ok(true),
            "slot {slot}:\n{log}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn try_once_on_a_full_semaphore_gives_up_naming_the_slots() {
    let Some(s) = seaweedfs() else { return };
    let url = s.url(&support::fresh_key("cli-slots-full"));
    let holders: Vec<Child> = (0..2)
        .map(|_| {
            TestCommand::new(&s)
                .args(["-q", "--slots", "2", &url, "sleep", "5"])
                .spawn()
        })
        .collect();
    let started = Instant::now();
    let o = loop {
        let o = TestCommand::new(&s)
            .args(["-n", "--slots", "2", &url, "true"])
            .output();
        if code(&o) == 111 || started.elapsed() > Duration::from_secs(20) {
            break o;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(code(&o), 111, "{}", stderr(&o));
    assert_eq!(
        stderr(&o).trim(),
        format!("sets3lock: {url}: all 2 slots are held")
    );
    for child in holders {
        let o = child.wait_with_output().expect("wait");
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
}

/// One leadership term in the witness: who (the owner id), and how it ended.
#[derive(Debug)]
struct Term {
    owner: String,
}

#[test]
fn eight_campaigners_through_crashes_and_resignations_one_leader_and_observers_see_each() {
    let Some(s) = seaweedfs() else { return };
    let key = support::fresh_key("cli-leader");
    let url = s.url(&key);
    let dir = scratch_dir("leader");
    let witness = format!("{dir}/witness");
    // A leader: enter, lead 1.5 s, resign (the program ends, the lock is released).
    let script = format!(
        "echo \"S $$ $SETS3LOCK_OWNER\" >> {witness}; sleep 1.5; echo \"E $$\" >> {witness}"
    );
    let campaign = || {
        let mut command = TestCommand::new(&s).args([
            "-q",
            "--lease",
            "2s",
            "--poll-max",
            "300ms",
            &url,
            "sh",
            "-c",
            &script,
        ]);
        command.cmd.process_group(0);
        command.spawn()
    };
    let observers: Vec<Child> = (0..2)
        .map(|_| {
            let mut command =
                TestCommand::new(&s).args(["watch", "--json", "--interval", "200ms", &url]);
            command.cmd.process_group(0);
            command.spawn()
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let mut campaigners: Vec<Child> = (0..8).map(|_| campaign()).collect();
    let started = Instant::now();
    let (mut terms, mut crashes) = (0usize, 0usize);
    // Every third leader crashes (its whole process group, SIGKILL) a moment into its term;
    // the others resign. A campaigner that ended campaigns again; 12 terms in all.
    let mut seen_leaders = 0;
    while terms < 12 {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "only {terms} terms in 120 s"
        );
        let log = std::fs::read_to_string(&witness).unwrap_or_default();
        let leaders: Vec<&str> = log.lines().filter(|l| l.starts_with("S ")).collect();
        if leaders.len() > seen_leaders {
            seen_leaders = leaders.len();
            terms = seen_leaders;
            if seen_leaders % 3 == 0 {
                std::thread::sleep(Duration::from_millis(300));
                let pid: i32 = leaders[seen_leaders - 1]
                    .split_whitespace()
                    .nth(1)
                    .and_then(|p| p.parse().ok())
                    .expect("pid");
                // The leader's program is in its sets3lock's process group. (A leader that
                // resigned before we got here is not crashed: the next one may be.)
                let group = nix::unistd::getpgid(Some(nix::unistd::Pid::from_raw(pid)));
                let killed = group
                    .and_then(|g| nix::sys::signal::killpg(g, nix::sys::signal::Signal::SIGKILL));
                if killed.is_ok() {
                    append(&witness, &format!("K {pid}"));
                    crashes += 1;
                }
            }
        }
        for c in &mut campaigners {
            if c.try_wait().expect("try_wait").is_some() {
                *c = campaign();
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    for c in &mut campaigners {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(c.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let _ = c.wait();
    }
    // The observers see the end of the last term too, then stop on SIGINT (exit 0). The last
    // term (the 12th) ended in a crash with nobody left to take over: its record goes stale
    // 2 s (a lease) after its last renewal was first seen; 4 s leaves room for a slow poll.
    std::thread::sleep(Duration::from_millis(4_000));
    let log = std::fs::read_to_string(&witness).expect("witness");
    most_inside(&log, 1).unwrap_or_else(|e| panic!("two leaders: {e}"));
    let leaders: Vec<Term> = log
        .lines()
        .filter(|l| l.starts_with("S "))
        .map(|l| Term {
            owner: l.split_whitespace().nth(2).expect("owner").to_owned(),
        })
        .collect();
    assert!(crashes >= 2, "{crashes} crashes");
    for observer in observers {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(observer.id() as i32),
            nix::sys::signal::Signal::SIGINT,
        )
        .expect("kill");
        let o = observer.wait_with_output().expect("wait");
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let lines = String::from_utf8_lossy(&o.stdout).into_owned();
        let mut seen: Vec<String> = Vec::new();
        for line in lines.lines() {
            let v: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            if v["state"] == "held" || v["state"] == "stale" {
                let owner = v["owner"].as_str().expect("owner").to_owned();
                if seen.last() != Some(&owner) {
                    seen.push(owner);
                }
            }
        }
        let expected: Vec<&str> = leaders.iter().map(|t| t.owner.as_str()).collect();
        assert_eq!(
            seen, expected,
            "an observer saw every leader, in order\n{lines}\n{log}"
        );
        // At least the last leader, crashed with no successor, is seen stale (mid-run crashes
        // are usually taken over before an observer's next poll).
        assert!(
            lines.contains("\"state\":\"stale\""),
            "a crashed leader was seen stale: {lines}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
