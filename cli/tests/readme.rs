//! The README's examples, run as written against the project's SeaweedFS: each fenced block
//! after a `<!-- readme-example: NAME -->` line, with the command on `PATH` and the server's
//! variables set as `. .local/seaweedfs/env` sets them.

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

/// The marked examples: (name, script).
fn examples() -> Vec<(String, String)> {
    let readme = include_str!("../../README.md");
    let mut out = Vec::new();
    let mut lines = readme.lines();
    while let Some(line) = lines.next() {
        let Some(name) = line
            .strip_prefix("<!-- readme-example: ")
            .and_then(|l| l.strip_suffix(" -->"))
        else {
            continue;
        };
        assert_eq!(
            lines.next(),
            Some("```bash"),
            "{name}: a bash block follows"
        );
        let script: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
        out.push((name.to_owned(), script.join("\n")));
    }
    out
}

#[test]
fn the_readme_marks_its_examples() {
    let names: Vec<String> = examples().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [
            "leader election",
            "semaphores",
            "pipeline",
            "workflow",
            "cron",
            "metrics"
        ]
    );
}

#[test]
fn the_readme_examples_run_against_seaweedfs() {
    let Some(s) = support::real("seaweedfs") else {
        return;
    };
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_sets3lock"));
    let path = format!(
        "{}:{}",
        bin.parent().expect("bin dir").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for (name, script) in examples() {
        let started = Instant::now();
        let mut command = Command::new("bash");
        command
            .args(["-euo", "pipefail", "-c"])
            .arg(format!(
                "B=s3://{}/{}\n{script}",
                s.bucket,
                support::fresh_key("readme")
            ))
            .env("PATH", &path)
            .env("HOME", std::env::temp_dir());
        for (k, _) in std::env::vars() {
            if k.starts_with("AWS_") {
                command.env_remove(k);
            }
        }
        let o = command
            .env("AWS_ACCESS_KEY_ID", &s.access_key)
            .env("AWS_SECRET_ACCESS_KEY", &s.secret)
            .env("AWS_ENDPOINT_URL", &s.endpoint)
            .env("AWS_REGION", "us-east-1")
            .output()
            .expect("bash");
        let (out, err) = (
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr),
        );
        assert!(o.status.success(), "{name}: {:?}\n{out}\n{err}", o.status);
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{name} took too long"
        );
        match name.as_str() {
            "leader election" => {
                let leaders = out.lines().filter(|l| l.starts_with("leader ")).count();
                let changes = out.lines().filter(|l| l.contains(": held by ")).count();
                assert_eq!(leaders, 3, "{out}");
                assert_eq!(changes, 3, "the watcher saw each leader: {out}");
            }
            "semaphores" => {
                let jobs: Vec<&str> = out.lines().filter(|l| l.starts_with("job ")).collect();
                assert_eq!(jobs.len(), 5, "{out}");
                assert!(
                    jobs.iter()
                        .all(|j| j.ends_with("slot 0") || j.ends_with("slot 1")),
                    "{out}"
                );
            }
            "pipeline" => {
                assert!(out.lines().any(|l| l.starts_with("deploying as ")), "{out}");
                assert_eq!(out.lines().last(), Some("released"), "{out}");
            }
            "workflow" => {
                let steps: Vec<&str> = out.lines().filter(|l| l.starts_with("step ")).collect();
                assert_eq!(
                    steps,
                    [
                        "step 1 with token 1",
                        "step 2 with token 1",
                        "step 3 with token 1"
                    ],
                    "{out}"
                );
                assert_eq!(out.lines().last(), Some("released"), "{out}");
            }
            "cron" => {
                let runs: Vec<&str> = out.lines().filter(|l| l.starts_with("ran on ")).collect();
                assert_eq!(runs, ["ran on a"], "one run in the period: {out}");
            }
            "metrics" => {
                assert!(
                    out.lines()
                        .any(|l| l == r#"sets3lock_job_exit_code{task="backup"} 0"#),
                    "{out}"
                );
                assert!(
                    out.lines()
                        .any(|l| l.starts_with("sets3lock_releases_total{")
                            && l.contains(r#"outcome="deleted""#)
                            && l.ends_with(" 1")),
                    "{out}"
                );
            }
            other => panic!("an example without a check: {other}"),
        }
    }
}
