//! The documentation, checked: every page's bash examples (each fenced block after a
//! `<!-- example: NAME -->` line) run as written against the project's SeaweedFS, with the
//! command on `PATH` and the server's variables set as `. .local/seaweedfs/env` sets them;
//! every other code block is either Rust (compiled as a doc test of `sets3lock`) or marked
//! `<!-- not run: why -->`; and every link between pages lands on a file and a heading.

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::time::{Duration, Instant};

/// Every page: its path from the repository's root, and its text.
const PAGES: [(&str, &str); 16] = [
    ("README.md", include_str!("../../../README.md")),
    ("docs/GUIDE.md", include_str!("../../../docs/GUIDE.md")),
    ("docs/LIBRARY.md", include_str!("../../../docs/LIBRARY.md")),
    (
        "docs/PROTOCOL.md",
        include_str!("../../../docs/PROTOCOL.md"),
    ),
    (
        "docs/VERIFICATION.md",
        include_str!("../../../docs/VERIFICATION.md"),
    ),
    (
        "docs/BENCHMARKS.md",
        include_str!("../../../docs/BENCHMARKS.md"),
    ),
    ("docs/FAQ.md", include_str!("../../../docs/FAQ.md")),
    (
        "bindings/python/README.md",
        include_str!("../../../bindings/python/README.md"),
    ),
    (
        "backends/drivers/README.md",
        include_str!("../../../backends/drivers/README.md"),
    ),
    ("src/README.md", include_str!("../../../src/README.md")),
    (
        "differential/README.md",
        include_str!("../../../differential/README.md"),
    ),
    (
        "backends/mock/README.md",
        include_str!("../../../backends/mock/README.md"),
    ),
    ("cli/README.md", include_str!("../../README.md")),
    (
        "backends/wire/README.md",
        include_str!("../../../backends/wire/README.md"),
    ),
    (
        "docs/vectors/README.md",
        include_str!("../../../docs/vectors/README.md"),
    ),
    (
        "examples/event-loop/README.md",
        include_str!("../../../examples/event-loop/README.md"),
    ),
];

/// The repository's root.
fn root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the repository")
        .to_path_buf()
}

/// The marked examples of every page: (name, script).
fn examples() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (page, text) in PAGES {
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            let Some(name) = line
                .strip_prefix("<!-- example: ")
                .and_then(|l| l.strip_suffix(" -->"))
            else {
                continue;
            };
            assert_eq!(
                lines.next(),
                Some("```bash"),
                "{page}: {name}: a bash block follows"
            );
            let script: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
            out.push((name.to_owned(), script.join("\n")));
        }
    }
    out
}

#[test]
fn the_docs_mark_their_examples() {
    let names: Vec<String> = examples().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [
            "quick start",
            "leader election",
            "semaphores",
            "pipeline",
            "workflow",
            "cron",
            "metrics"
        ]
    );
}

/// Every fenced code block is run by a test or says it is not: an example (above), Rust
/// (a doc test; `ignore` only with a marker), or a `<!-- not run: why -->` line right before.
#[test]
fn every_code_block_is_run_by_a_test_or_marked_as_not_run() {
    let mut unmarked = Vec::new();
    let mut blocks = 0;
    for (page, text) in PAGES {
        let lines: Vec<&str> = text.lines().collect();
        let mut inside = false;
        for (i, line) in lines.iter().enumerate() {
            let Some(info) = line.trim_start().strip_prefix("```") else {
                continue;
            };
            if inside {
                inside = false;
                continue;
            }
            inside = true;
            blocks += 1;
            let before = if i > 0 { lines[i - 1] } else { "" };
            let marked = before.starts_with("<!-- not run: ") && before.ends_with(" -->");
            let example = before.starts_with("<!-- example: ") && info == "bash";
            let rust = info.starts_with("rust") && !info.contains("ignore");
            if !(marked || example || rust) {
                unmarked.push(format!("{page}:{}: ```{info}", i + 1));
            }
        }
        assert!(!inside, "{page}: a code block is never closed");
    }
    assert!(
        blocks > 30,
        "only {blocks} code blocks found: is the scan broken?"
    );
    assert!(
        unmarked.is_empty(),
        "blocks neither run nor marked:\n{}",
        unmarked.join("\n")
    );
}

/// A heading's anchor, as GitHub makes it: lower case; letters, digits, spaces, hyphens and
/// underscores kept; spaces become hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a page's headings (a repeated heading gets `-1`, `-2`, ...), outside code
/// blocks.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    let mut inside = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            inside = !inside;
            continue;
        }
        if inside || !line.starts_with('#') {
            continue;
        }
        let base = slug(line.trim_start_matches('#').replace('`', "").as_str());
        let n = seen.entry(base.clone()).or_insert(0);
        out.insert(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    out
}

/// The targets of a page's Markdown links (`[text](target)`), outside code blocks and code
/// spans: (line, target).
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut inside = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            inside = !inside;
            continue;
        }
        if inside {
            continue;
        }
        // Code spans hold no links.
        let prose: String = line
            .split('`')
            .enumerate()
            .filter(|(n, _)| n % 2 == 0)
            .map(|(_, part)| part)
            .collect::<Vec<_>>()
            .join(" ");
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            out.push((i + 1, after[..end].to_owned()));
            rest = &after[end..];
        }
    }
    out
}

/// Every link between pages lands: the file exists, and the anchor is a heading of it.
#[test]
fn every_link_between_pages_lands_on_a_file_and_a_heading() {
    let root = root();
    let mut broken = Vec::new();
    let mut checked = 0;
    for (page, text) in PAGES {
        let dir = std::path::Path::new(page)
            .parent()
            .unwrap_or(std::path::Path::new(""));
        for (line, target) in links(text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let file = if path.is_empty() {
                root.join(page)
            } else {
                root.join(dir).join(path)
            };
            let Ok(file) = file.canonicalize() else {
                broken.push(format!("{page}:{line}: {target}: no such file"));
                continue;
            };
            if let Some(anchor) = anchor {
                let text = std::fs::read_to_string(&file).unwrap_or_default();
                if !anchors(&text).contains(anchor) {
                    broken.push(format!("{page}:{line}: {target}: no such heading"));
                }
            }
        }
    }
    assert!(
        checked > 40,
        "only {checked} links found: is the scan broken?"
    );
    assert!(
        broken.is_empty(),
        "links that land nowhere:\n{}",
        broken.join("\n")
    );
}

#[test]
fn the_link_check_finds_a_dangling_anchor() {
    let text =
        "# A heading\n## `code` and words\n[ok](#a-heading) [ok](#code-and-words) [bad](#nowhere)";
    let anchors = anchors(text);
    let dangling: Vec<String> = links(text)
        .into_iter()
        .map(|(_, t)| t)
        .filter(|t| !anchors.contains(t.trim_start_matches('#')))
        .collect();
    assert_eq!(dangling, ["#nowhere"]);
}

#[test]
fn the_doc_examples_run_against_seaweedfs() {
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
                support::fresh_key("docs")
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
            "quick start" => {
                let at = |what: &str| {
                    out.lines()
                        .position(|l| l.starts_with(what))
                        .unwrap_or_else(|| panic!("no {what:?} line: {out}"))
                };
                assert!(at("first: holding") < at("second: got the lock"), "{out}");
                assert!(at("token 1") < at("token 2"), "{out}");
            }
            other => panic!("an example without a check: {other}"),
        }
    }
}
