//! `--metrics-textfile PATH`: the lock's instruments (see `sets3lock_s3::metrics`) and the
//! job's own, in the Prometheus text format, for node_exporter's textfile collector. The file
//! is written whole and renamed into place (a reader never sees half of it): at the start, at
//! each change of the lock's state, when the program starts and ends, and at exit.

mod recorder;
mod watched;

pub(crate) use watched::{describe_watch, Watched};

use recorder::TextRecorder;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The job's instruments (the command's, beside the library's).
const JOB_RUNNING: &str = "sets3lock_job_running";
const JOB_STARTED: &str = "sets3lock_job_start_timestamp_seconds";
const JOB_ENDED: &str = "sets3lock_job_end_timestamp_seconds";
const JOB_DURATION: &str = "sets3lock_job_duration_seconds";
const JOB_EXIT: &str = "sets3lock_job_exit_code";

/// Labels the library's instruments use: `--metrics-label` may not name them.
const RESERVED: [&str; 8] = [
    "lock",
    "mode",
    "method",
    "result",
    "outcome",
    "reason",
    "contended",
    "le",
];

struct Textfile {
    path: PathBuf,
    recorder: &'static TextRecorder,
    /// A failed write is said once.
    failed: AtomicBool,
}

static TEXTFILE: OnceLock<Textfile> = OnceLock::new();

/// Parses `--metrics-label name=value`.
pub(crate) fn label(s: &str) -> Result<(String, String), String> {
    let Some((name, value)) = s.split_once('=') else {
        return Err(format!("{s:?} is not name=value"));
    };
    let valid = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with("__");
    if !valid {
        return Err(format!(
            "{name:?} is not a label name (letters, digits and _, not starting with a digit or __)"
        ));
    }
    if RESERVED.contains(&name) {
        return Err(format!(
            "the label {name:?} is sets3lock's own: choose another name (job, for one)"
        ));
    }
    Ok((name.to_owned(), value.to_owned()))
}

/// Installs the recorder and writes the file a first time. `Err` says what is wrong with
/// `path` (the command then exits 100).
pub(crate) fn install(path: &Path, labels: Vec<(String, String)>) -> Result<(), String> {
    let recorder: &'static TextRecorder = Box::leak(Box::new(TextRecorder::new(labels)));
    if metrics::set_global_recorder(recorder).is_err() {
        return Err("the metrics recorder was installed twice".into());
    }
    sets3lock_s3::metrics::describe();
    metrics::describe_gauge!(JOB_RUNNING, "1 while the program runs under the lock.");
    metrics::describe_gauge!(JOB_STARTED, "When the program last started (Unix time).");
    metrics::describe_gauge!(JOB_ENDED, "When the command last ended (Unix time).");
    metrics::describe_gauge!(JOB_DURATION, "How long the program ran, in seconds.");
    metrics::describe_gauge!(
        JOB_EXIT,
        "The command's exit status (111: the lock could not be had; 112: it was lost)."
    );
    metrics::gauge!(JOB_RUNNING).set(0.0);
    let textfile = Textfile {
        path: path.to_owned(),
        recorder,
        failed: AtomicBool::new(false),
    };
    textfile.write().map_err(|e| {
        format!(
            "--metrics-textfile {}: {e}: give a file in an existing directory this user can write",
            path.display()
        )
    })?;
    let _ = TEXTFILE.set(textfile);
    Ok(())
}

impl Textfile {
    /// Renders, writes `PATH.tmp-PID` beside it, and renames it over `PATH`.
    fn write(&self) -> std::io::Result<()> {
        use std::io::Write as _;
        let mut tmp = self.path.clone().into_os_string();
        tmp.push(format!(".tmp-{}", std::process::id()));
        let tmp = PathBuf::from(tmp);
        let written = std::fs::File::create(&tmp).and_then(|mut f| {
            f.write_all(self.recorder.render().as_bytes())?;
            f.sync_all()
        });
        match written.and_then(|()| std::fs::rename(&tmp, &self.path)) {
            Ok(()) => Ok(()),
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                Err(e)
            }
        }
    }
}

/// Writes the file again, if there is one (a failure is said once, and the job goes on).
pub(crate) fn changed() {
    let Some(t) = TEXTFILE.get() else { return };
    if let Err(e) = t.write() {
        if !t.failed.swap(true, Ordering::Relaxed) {
            say!(
                "--metrics-textfile {}: {e} (the job goes on)",
                t.path.display()
            );
        }
    }
}

pub(super) fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The program started under the lock.
pub(crate) fn program_started() {
    if TEXTFILE.get().is_none() {
        return;
    }
    metrics::gauge!(JOB_RUNNING).set(1.0);
    metrics::gauge!(JOB_STARTED).set(unix_now());
    changed();
}

/// The program ended after `ran`.
pub(crate) fn program_ended(ran: Duration) {
    if TEXTFILE.get().is_none() {
        return;
    }
    metrics::gauge!(JOB_RUNNING).set(0.0);
    metrics::gauge!(JOB_DURATION).set(ran.as_secs_f64());
    changed();
}

/// The command ends with `code`: the last write.
pub(crate) fn finish(code: u8) {
    if TEXTFILE.get().is_none() {
        return;
    }
    metrics::gauge!(JOB_RUNNING).set(0.0);
    metrics::gauge!(JOB_EXIT).set(f64::from(code));
    metrics::gauge!(JOB_ENDED).set(unix_now());
    changed();
}

#[cfg(test)]
mod tests {
    use super::label;

    #[test]
    fn labels_are_name_value_with_a_name_of_their_own() {
        assert_eq!(label("job=nightly"), Ok(("job".into(), "nightly".into())));
        assert_eq!(label("host=a=b"), Ok(("host".into(), "a=b".into())));
        for (bad, says) in [
            ("job", "not name=value"),
            ("9x=1", "not a label name"),
            ("__x=1", "not a label name"),
            ("a-b=1", "not a label name"),
            ("lock=x", "sets3lock's own"),
        ] {
            let e = label(bad).expect_err(bad);
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
