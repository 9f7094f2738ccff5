//! `--metrics-textfile PATH`: the lock's instruments (see `sets3lock::metrics`) and the
//! job's own, in the Prometheus text format, for node_exporter's textfile collector. The file
//! is written whole and renamed into place (a reader never sees half of it): at the start, at
//! each change of the lock's state, when the program starts and ends, and at exit.

mod recorder;
mod watched;

pub(crate) use watched::{describe_watch, Watched};

use recorder::TextRecorder;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, OnceLock, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The job's instruments (the command's, beside the library's).
const JOB_RUNNING: &str = "sets3lock_job_running";
const JOB_STARTED: &str = "sets3lock_job_start_timestamp_seconds";
const JOB_ENDED: &str = "sets3lock_job_end_timestamp_seconds";
const JOB_DURATION: &str = "sets3lock_job_duration_seconds";
const JOB_EXIT: &str = "sets3lock_job_exit_code";

/// Labels the library's instruments use, and those Prometheus sets on every scrape (a `job`
/// in the file would be renamed `exported_job`): `--metrics-label` may not name them.
const RESERVED: [&str; 10] = [
    "lock",
    "mode",
    "method",
    "result",
    "outcome",
    "reason",
    "contended",
    "le",
    "job",
    "instance",
];

/// How long the command's exit waits for its last write.
const LAST_WRITE: Duration = Duration::from_secs(5);

struct Textfile {
    path: PathBuf,
    recorder: &'static TextRecorder,
    /// Writes asked for and writes done (generations), for the writer thread.
    writes: Mutex<(u64, u64)>,
    bell: Condvar,
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
            "the label {name:?} is taken (by sets3lock, or by Prometheus on every scrape): choose another name (task, for one)"
        ));
    }
    Ok((name.to_owned(), value.to_owned()))
}

/// Installs the recorder and writes the file a first time. `Err` says what is wrong with
/// `path` (the command then exits 100).
/// The file is written by a thread of its own, so that a slow disk never holds up the
/// lock's driver (which runs the observer that asks for the writes); `run_mode` says whether
/// the job's gauges belong in it.
pub(crate) fn install(
    path: &Path,
    labels: Vec<(String, String)>,
    run_mode: bool,
) -> Result<(), String> {
    let recorder: &'static TextRecorder = Box::leak(Box::new(TextRecorder::new(labels)));
    if metrics::set_global_recorder(recorder).is_err() {
        return Err("the metrics recorder was installed twice".into());
    }
    sets3lock::metrics::describe();
    metrics::describe_gauge!(JOB_RUNNING, "1 while the program runs under the lock.");
    metrics::describe_gauge!(JOB_STARTED, "When the program last started (Unix time).");
    metrics::describe_gauge!(JOB_ENDED, "When the command last ended (Unix time).");
    metrics::describe_gauge!(JOB_DURATION, "How long the program ran, in seconds.");
    metrics::describe_gauge!(
        JOB_EXIT,
        "The command's exit status (111: the lock could not be had; 112: it was lost)."
    );
    if run_mode {
        metrics::gauge!(JOB_RUNNING).set(0.0);
    }
    let textfile = Textfile {
        path: path.to_owned(),
        recorder,
        writes: Mutex::new((0, 0)),
        bell: Condvar::new(),
        failed: AtomicBool::new(false),
    };
    textfile.write().map_err(|e| {
        format!(
            "--metrics-textfile {}: {e}: give a file in an existing directory this user can write",
            path.display()
        )
    })?;
    let textfile = TEXTFILE.get_or_init(|| textfile);
    std::thread::Builder::new()
        .name("metrics-textfile".into())
        .spawn(move || textfile.writer())
        .map_err(|e| format!("--metrics-textfile: cannot start its writer: {e}"))?;
    Ok(())
}

impl Textfile {
    /// Renders, writes a new file beside `PATH` (a name of its own, created new, readable by
    /// all as node_exporter must), and renames it over `PATH`: readers see the old file or the
    /// new one, never part of one.
    fn write(&self) -> std::io::Result<()> {
        use std::io::Write as _;
        use std::os::unix::fs::OpenOptionsExt as _;
        let mut suffix = [0u8; 8];
        getrandom::fill(&mut suffix).map_err(|e| std::io::Error::other(e.to_string()))?;
        let mut tmp = self.path.clone().into_os_string();
        tmp.push(format!(".tmp-{:016x}", u64::from_le_bytes(suffix)));
        let tmp = PathBuf::from(tmp);
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(&tmp)
            .and_then(|mut f| f.write_all(self.recorder.render().as_bytes()));
        match written.and_then(|()| std::fs::rename(&tmp, &self.path)) {
            Ok(()) => Ok(()),
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                Err(e)
            }
        }
    }

    /// Asks for a write of the state as it is now; returns its generation.
    fn ask(&self) -> u64 {
        let mut w = self.writes.lock().unwrap_or_else(PoisonError::into_inner);
        w.0 += 1;
        self.bell.notify_all();
        w.0
    }

    /// The writer thread: writes whenever asked, the newest state each time.
    fn writer(&self) {
        loop {
            let wanted = {
                let w = self.writes.lock().unwrap_or_else(PoisonError::into_inner);
                let w = self
                    .bell
                    .wait_while(w, |w| w.1 >= w.0)
                    .unwrap_or_else(PoisonError::into_inner);
                w.0
            };
            if let Err(e) = self.write() {
                if !self.failed.swap(true, Ordering::Relaxed) {
                    say!(
                        "--metrics-textfile {}: {e} (the job goes on)",
                        self.path.display()
                    );
                }
            }
            let mut w = self.writes.lock().unwrap_or_else(PoisonError::into_inner);
            w.1 = w.1.max(wanted);
            self.bell.notify_all();
        }
    }

    /// Waits (at most `within`) until write `generation` or a later one is done.
    fn wait_for(&self, generation: u64, within: Duration) {
        let w = self.writes.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = self
            .bell
            .wait_timeout_while(w, within, |w| w.1 < generation);
    }
}

/// Asks for the file to be written again, if there is one. It never waits for the disk: the
/// writer thread writes (a failure is said once, and the job goes on).
pub(crate) fn changed() {
    if let Some(t) = TEXTFILE.get() {
        t.ask();
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
    flush();
}

/// Writes the last state and waits for it (bounded): the command is about to exit.
pub(crate) fn flush() {
    if let Some(t) = TEXTFILE.get() {
        let generation = t.ask();
        t.wait_for(generation, LAST_WRITE);
    }
}

#[cfg(test)]
mod tests {
    use super::label;

    #[test]
    fn labels_are_name_value_with_a_name_of_their_own() {
        assert_eq!(label("task=nightly"), Ok(("task".into(), "nightly".into())));
        assert_eq!(label("host=a=b"), Ok(("host".into(), "a=b".into())));
        for (bad, says) in [
            ("job", "not name=value"),
            ("9x=1", "not a label name"),
            ("__x=1", "not a label name"),
            ("a-b=1", "not a label name"),
            ("lock=x", "is taken"),
            ("job=x", "is taken"),
        ] {
            let e = label(bad).expect_err(bad);
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
