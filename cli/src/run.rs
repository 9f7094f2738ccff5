//! Run mode: acquire, run the program as a child while the lease is renewed, forward signals,
//! stop the program if the lock is lost, release on every way out.

use crate::cli::Run;
use crate::exit_codes::{signalled, CANNOT_LOCK, LOST, OK};
use crate::log::Log;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use sets3lock::proto::{LockUrl, ReleaseOutcome};
use sets3lock::{Error, ErrorKind, Loss, Options, StoreCheck, Wait};
use sets3lock::{Held, Locker, Semaphore};
use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::time::Duration;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;

/// The signals that are forwarded to the program, and that stop a wait.
const FORWARDED: [(SignalKind, Signal); 4] = [
    (SignalKind::hangup(), Signal::SIGHUP),
    (SignalKind::interrupt(), Signal::SIGINT),
    (SignalKind::terminate(), Signal::SIGTERM),
    (SignalKind::quit(), Signal::SIGQUIT),
];

/// Catches the forwarded signals from now on, as one stream.
pub(crate) fn catch_signals() -> std::io::Result<mpsc::UnboundedReceiver<Signal>> {
    let (tx, rx) = mpsc::unbounded_channel();
    for (kind, sig) in FORWARDED {
        let mut stream = signal(kind)?;
        let tx = tx.clone();
        tokio::spawn(async move {
            while stream.recv().await.is_some() {
                if tx.send(sig).is_err() {
                    break;
                }
            }
        });
    }
    Ok(rx)
}

pub(crate) async fn run(args: Run, mut options: Options, program: Vec<OsString>) -> u8 {
    let Some(url) = args.url() else {
        return crate::exit_codes::USAGE;
    };
    // Handlers first: from here on no HUP/INT/TERM/QUIT can kill us and leave the lock behind.
    let mut signals = match catch_signals() {
        Ok(s) => s,
        Err(e) => {
            say!("cannot handle signals: {e}");
            return CANNOT_LOCK;
        }
    };
    let log = Log::new(args.check.log.verbose, args.quiet, url.clone()).with_slots(args.slots);
    options.observer = Some(log.observer());
    options.lock = args.config(options.lock);
    options.lock_format = args.lock.lock_format;
    // Terraform's Operation names the program, never its arguments: anyone who may read the
    // lock object reads it.
    let name = std::path::Path::new(&program[0])
        .file_name()
        .map_or_else(|| program[0].to_string_lossy(), |n| n.to_string_lossy());
    options.operation = Some(format!("sets3lock {name}"));
    let terraform = options.lock_format;
    options.store_check = if args.check.no_store_check {
        StoreCheck::Off
    } else {
        StoreCheck::in_user_cache()
    };
    let unavailable = if args.exit_zero { OK } else { CANNOT_LOCK };
    let gate = match (&args.handle, args.slots) {
        (Some(h), _) => Locker::new(&url.to_string(), options).map(|l| Gate::Adopt(l, h.clone())),
        (None, None) => Locker::new(&url.to_string(), options).map(Gate::Lock),
        (None, Some(n)) => Semaphore::new(&url.to_string(), n, options).map(Gate::Slots),
    };
    let gate = match gate {
        Ok(l) => l,
        Err(e) => {
            // Never a lock held elsewhere: 111 with -x too.
            say!("{url}: {e}");
            return CANNOT_LOCK;
        }
    };
    if let Gate::Lock(l) | Gate::Adopt(l, _) = &gate {
        // The first credentials of a source that fetches them (fetched since the locker
        // opened, on a thread of their own): no credentials is the same one line and exit.
        if let Err(e) = l.ready().await {
            say!("{url}: {e}");
            return CANNOT_LOCK;
        }
        if let Some(signer) = l.sign_in() {
            log.note(&format!("signed by {signer}"));
        }
    }
    let wait = match (args.lock.no_wait, args.lock.timeout) {
        (true, _) => Wait::No,
        (false, Some(t)) => Wait::Timeout(t),
        (false, None) => Wait::Forever,
    };

    // ---- acquire, unless a signal comes first ----
    // The first reminder a minute from now (awaiting an interval's immediate first tick
    // would park the runtime for a timer-wheel millisecond).
    let minute = Duration::from_secs(60);
    let mut reminder = tokio::time::interval_at(tokio::time::Instant::now() + minute, minute);
    // Boxed so that it can be dropped (which cancels it) before the scope ends.
    let mut acquiring = Box::pin(gate.acquire(wait));
    let held = loop {
        tokio::select! {
            result = acquiring.as_mut() => break result,
            Some(sig) = signals.recv() => {
                // Dropping the acquisition cancels it; shutdown waits for any write of ours
                // that lands to be removed.
                drop(acquiring);
                say!("{url}: {sig} while waiting for the lock: stopped");
                give_up(&gate, &url, args.lease()).await;
                return signalled(sig as i32);
            }
            _ = reminder.tick() => log.remind(),
        }
    };
    let held = match held {
        Ok(h) => h,
        Err(e) => {
            let unanswered = match log.replies() {
                (0, 1) => "; the endpoint did not answer the request sent".to_owned(),
                (0, n @ 2..) => format!("; the endpoint answered none of the {n} requests sent"),
                (0, 0) if log.store_check_unanswered() => {
                    "; the endpoint gave no clear answer to the store check".to_owned()
                }
                _ => String::new(),
            };
            match &e {
                // As setlock: with -x, not getting the lock is not worth a word.
                Error::Busy { .. } | Error::AllSlotsBusy { .. } | Error::TimedOut { .. } => {
                    if !args.quiet && !args.exit_zero {
                        say!("{url}: {e}{unanswered}");
                    }
                }
                _ => say!("{url}: {e}{unanswered}"),
            }
            give_up(&gate, &url, args.lease()).await;
            return if matches!(e, Error::HoldEnded(_)) {
                // The hold a handle names has ended.
                LOST
            } else if matches!(e.kind(), ErrorKind::Busy | ErrorKind::TimedOut) {
                unavailable
            } else {
                // -x makes only a lock held elsewhere a success, never a store or
                // configuration that failed.
                CANNOT_LOCK
            };
        }
    };
    // From here on, messages name the lock held: the slot's, under a semaphore.
    let url = held.url().clone();
    log.acquired(&held);
    if !args.lease().is_zero() {
        log.note(&format!(
            "lease {}, renewed every {}; if renewals stop getting through, the program gets SIGTERM {} before the lease could run out (--kill-after{}), then SIGKILL",
            crate::output::human(args.lease()),
            crate::output::human(args.lease() / 3),
            crate::output::human(args.kill_after()),
            if args.kill_after.is_none() { ", the default that fits this lease" } else { "" }
        ));
    }

    // ---- run the program ----
    let mut command = tokio::process::Command::new(&program[0]);
    command
        .kill_on_drop(true) // if we unwind, the program must not run on unsupervised
        .args(&program[1..])
        .env("SETS3LOCK_URL", url.to_string())
        .env("SETS3LOCK_OWNER", held.owner().to_string())
        .env("SETS3LOCK_ETAG", held.etag().as_str());
    if let Some(token) = held.token() {
        command.env("SETS3LOCK_TOKEN", token.to_string());
    }
    if let Some(slot) = held.slot() {
        command.env("SETS3LOCK_SLOT", slot.to_string());
    }
    // Written in Terraform's format: asked for (or a .tflock key: never a slot's), with a
    // lease, and not fenced (a fenced record never carries Terraform's fields). A hold from a
    // handle keeps the format it was taken in, which this process does not know.
    if terraform.is_terraform(url.key())
        && !args.lease().is_zero()
        && held.token().is_none()
        && args.handle.is_none()
    {
        command.env(
            "SETS3LOCK_TERRAFORM_ID",
            sets3lock::proto::terraform_id(held.owner()),
        );
    }
    crate::tether::to_this_process(&mut command);
    let mut child = match command.spawn() {
        Ok(c) => c,
        Err(e) => {
            say!("cannot run {}: {e}", program[0].to_string_lossy());
            if args.keep {
                // Kept as asked: the handle's next step may still run.
                let before = log.failures();
                match held.detach().await {
                    Ok(_) => log.unparked_since(before, args.lease()),
                    Err(e) => say!("{url}: could not keep the lock: {e}"),
                }
            } else {
                report_release(&url, held.release().await);
            }
            finish(&gate, &url).await;
            return CANNOT_LOCK;
        }
    };
    let ran = std::time::Instant::now();
    crate::textfile::program_started();
    let pid = child.id().map(|p| Pid::from_raw(p as i32));
    // Why the program was stopped, if it was.
    let mut stopped = None;
    // A change in the credentials' standing is said once (a refresh that failed, old
    // credentials kept through an outage of instance metadata), whatever the verbosity.
    let mut sign_in_problem = None;
    let status = loop {
        let problem = gate.sign_in_problem();
        if problem != sign_in_problem {
            if let Some(p) = &problem {
                say!("{url}: signing in: {p}");
            }
            sign_in_problem = problem;
        }
        // SIGKILL must land before the hold's validity ends, so SIGTERM goes `--kill-after`
        // earlier; a renewal moves the deadline on. Naps of at most a second re-read the
        // suspend-aware clock.
        let stop_in = held
            .remaining_validity()
            .map(|r| r.saturating_sub(args.kill_after()));
        tokio::select! {
            status = child.wait() => break status,
            Some(sig) = signals.recv() => {
                if let Some(pid) = pid {
                    let _ = kill(pid, sig);
                }
            }
            loss = held.lost() => {
                stopped = Some(Stopped::Lost(loss.clone()));
                // (Expired: validity has ended, so SIGKILL is due at once.)
                let left = match loss {
                    Loss::Expired => Some(Duration::ZERO),
                    _ => held.remaining_validity(),
                };
                let grace = grace(left, args.kill_after());
                break stop(&url, &describe(&loss), &mut child, pid, grace).await;
            }
            _ = tokio::time::sleep(stop_in.unwrap_or_default().min(Duration::from_secs(1))), if stop_in.is_some() => {
                let left = held.remaining_validity();
                if left.is_none_or(|r| r > args.kill_after()) {
                    continue; // renewed meanwhile, or not yet due
                }
                stopped = Some(Stopped::Unrenewed);
                let grace = grace(left, args.kill_after());
                let why = if left.is_some_and(|l| l.is_zero()) {
                    // Woken past the stop point: this process was frozen, or the machine slept.
                    "the lease ran out before a renewal got through (was this process frozen, or the machine asleep?)".to_owned()
                } else {
                    format!(
                        "no renewal got through and the lease runs out in {}",
                        crate::output::human(grace)
                    )
                };
                break stop(&url, &why, &mut child, pid, grace).await;
            }
        }
    };

    crate::textfile::program_ended(ran.elapsed());
    // A stopped program's lock is released, or reported left to expire, by the end of its
    // validity and a moment: a silent store is not waited on past the lease.
    // (With lease 0 nothing expires: the release is waited for as long as ever.)
    let report_by = tokio::time::Instant::now()
        + match args.lease().is_zero() {
            true => CONFIRM,
            false => held.remaining_validity().unwrap_or_default() + REPORT_SLACK,
        };

    // ---- release, whatever happened ----
    // A release the store refused for permissions: the lock stays held for its lease under
    // a process that is gone, and whoever runs this must hear of it (exit 111, not the
    // program's own status).
    let mut refused = false;
    match &stopped {
        // Not ours any more: nothing to release, and the first line said why.
        Some(Stopped::Lost(Loss::Lost(_))) => drop(held),
        // Renewals were not getting through (or the hold expired): try the release, and say
        // what became of the lock.
        Some(_) => match tokio::time::timeout_at(
            report_by.min(tokio::time::Instant::now() + CONFIRM),
            held.release(),
        )
        .await
        {
            Ok(Ok(ReleaseOutcome::Deleted | ReleaseOutcome::Freed | ReleaseOutcome::Resting)) => {
                say!("{url}: the store answered again: the lock is released")
            }
            Ok(Ok(other)) => report_release(&url, Ok(other)),
            Ok(Err(Error::AlreadyExpired)) => say!(
                "{url}: the lock object is left behind: its lease ran out before a renewal or the release got through, and others may have taken the lock over since"
            ),
            Ok(Err(e)) => {
                say!("{url}: release failed: {e}; the lock object is left to expire after its lease")
            }
            Err(_) => {
                say!(
                    "{url}: the store did not answer before the lease ran out: the lock object is left to expire after its lease, and others may take the lock over now"
                );
                return LOST; // waited long enough: what is left in flight dies with us
            }
        },
        None if args.keep => {
            let before = log.failures();
            match held.detach().await {
                // Left held for the next step: the handle is the same string.
                Ok(_) => {
                    log.unparked_since(before, args.lease());
                    log.note("kept held (--keep): its lease runs, nobody renews it");
                }
                Err(e) => say!("{url}: could not keep the lock: {e}"),
            }
        }
        None => {
            let released = held.release().await;
            refused = matches!(&released, Err(e) if e.kind() == sets3lock::ErrorKind::AccessDenied);
            report_release(&url, released);
        }
    }
    if stopped.is_some() {
        // What became of the lock is said; a cleanup of renewals that may have landed gets
        // a moment (until the report is due, two seconds at most), and what it cannot do
        // expires with the lease.
        let until = report_by.min(tokio::time::Instant::now() + CLEANUP_BOUND);
        let _ = tokio::time::timeout_at(until, gate.shutdown()).await;
        return LOST;
    }
    finish(&gate, &url).await;
    if refused {
        return CANNOT_LOCK;
    }
    match status {
        Ok(s) => match (s.code(), s.signal()) {
            (Some(code), _) => u8::try_from(code).unwrap_or(255),
            (None, Some(sig)) => signalled(sig),
            (None, None) => CANNOT_LOCK,
        },
        Err(e) => {
            say!("waiting for the program failed: {e}");
            CANNOT_LOCK
        }
    }
}

/// The time a stopped program gets between SIGTERM and SIGKILL: `--kill-after`, but never past
/// the end of the hold's validity (`left`; `None` with lease 0), which may have come already
/// (a process frozen, or a machine asleep, past its stop point).
fn grace(left: Option<Duration>, kill_after: Duration) -> Duration {
    left.map_or(kill_after, |left| left.min(kill_after))
}

/// SIGTERM, then SIGKILL after `kill_after` (SIGKILL at once when that is zero: `--kill-after
/// 0`, or a lease already run out); returns the program's status.
async fn stop(
    url: &LockUrl,
    why: &str,
    child: &mut tokio::process::Child,
    pid: Option<Pid>,
    kill_after: Duration,
) -> std::io::Result<std::process::ExitStatus> {
    if kill_after.is_zero() {
        say!("{url}: {why}: stopping the program (SIGKILL at once)");
        let _ = child.start_kill();
        return child.wait().await;
    }
    say!(
        "{url}: {why}: stopping the program (SIGTERM, then SIGKILL after {})",
        crate::output::human(kill_after)
    );
    if let Some(pid) = pid {
        let _ = kill(pid, Signal::SIGTERM);
    }
    match tokio::time::timeout(kill_after, child.wait()).await {
        Ok(status) => status,
        Err(_) => {
            let _ = child.start_kill();
            child.wait().await
        }
    }
}

/// What the program runs under: one lock, or a slot of a semaphore (`--slots`).
#[allow(clippy::large_enum_variant)] // one per process, made once
enum Gate {
    Lock(Locker),
    Slots(Semaphore),
    /// `--handle`: the hold it names, continued.
    Adopt(Locker, sets3lock::proto::Handle),
}

impl Gate {
    async fn acquire(&self, wait: Wait) -> Result<Held, Error> {
        match self {
            Gate::Lock(l) => l.acquire(wait).await,
            Gate::Slots(s) => s.acquire(wait).await,
            Gate::Adopt(l, handle) => l.adopt(handle).await,
        }
    }

    /// What is wrong with the credentials now, if anything (a refresh that failed, old
    /// credentials kept through a failure): never a secret.
    fn sign_in_problem(&self) -> Option<String> {
        match self {
            Gate::Lock(l) | Gate::Adopt(l, _) => l.sign_in().and_then(|s| s.problem),
            Gate::Slots(_) => None,
        }
    }

    /// Waits until every background driver has finished.
    async fn shutdown(&self) {
        match self {
            Gate::Lock(l) | Gate::Adopt(l, _) => l.shutdown().await,
            Gate::Slots(s) => s.shutdown().await,
        }
    }
}

/// Why the program was stopped.
enum Stopped {
    /// The hold ended: taken over, deleted, expired.
    Lost(Loss),
    /// Renewals stopped getting through, and the lease was about to run out.
    Unrenewed,
}

/// How long the command waits for a release (or the cleanup after it) to be confirmed.
const CONFIRM: Duration = Duration::from_secs(30);

/// How long after a stopped program's lease ends the command may still wait for its release
/// before it reports the lock left to expire and exits.
const REPORT_SLACK: Duration = Duration::from_secs(1);

/// How long a command that did not get the lock waits for the cleanup of a write of its own
/// that may have landed (a create or takeover sent at the deadline, or when a signal came).
pub(crate) const CLEANUP_BOUND: Duration = Duration::from_secs(2);

/// After an acquisition that did not get the lock: waits up to [`CLEANUP_BOUND`] (with lease
/// 0, [`CONFIRM`]) for any write of ours that may have landed to be read back and removed; if
/// that does not finish, says what becomes of such a write, if it was applied.
async fn give_up(gate: &Gate, url: &LockUrl, lease: Duration) {
    // With lease 0 such an object would never expire: its cleanup is waited for longer.
    let bound = if lease.is_zero() {
        CONFIRM
    } else {
        CLEANUP_BOUND
    };
    if tokio::time::timeout(bound, gate.shutdown()).await.is_ok() {
        return;
    }
    let fate = if lease.is_zero() {
        "never expires (lease 0)".to_owned()
    } else {
        format!("expires after its lease ({})", crate::output::human(lease))
    };
    say!(
        "{url}: a request that would have taken the lock got no answer; if the store applied it, the lock object it wrote {fate}: remove it with `sets3lock unlock {url}`"
    );
}

/// Waits for the background driver to finish its release or cleanup, but not forever: with
/// S3 unreachable each attempt takes a request timeout, and the lease covers what is left.
async fn finish(gate: &Gate, url: &LockUrl) {
    if tokio::time::timeout(CONFIRM, gate.shutdown())
        .await
        .is_err()
    {
        say!(
            "{url}: could not confirm the release in {}; the lock expires after its lease",
            crate::output::human(CONFIRM)
        );
    }
}

fn describe(loss: &Loss) -> String {
    match loss {
        Loss::Lost(sets3lock::proto::LostReason::Deleted) => "the lock object was deleted".into(),
        Loss::Lost(sets3lock::proto::LostReason::Overwritten { holder: Some(h) }) => {
            format!("the lock was taken by {}", crate::holder::describe(h))
        }
        Loss::Lost(sets3lock::proto::LostReason::Overwritten { holder: None }) => {
            "the lock was taken by another writer".into()
        }
        Loss::Expired => "the lease expired before a renewal got through".into(),
        Loss::DriverStopped => "the lock's background driver stopped".into(),
        other => format!("the lock was lost ({other:?})"),
    }
}

fn report_release(url: &LockUrl, result: Result<ReleaseOutcome, Error>) {
    match result {
        // Resting: kept until --hold-at-least is up, as asked.
        Ok(ReleaseOutcome::Deleted | ReleaseOutcome::Freed | ReleaseOutcome::Resting) => {}
        Ok(ReleaseOutcome::TakenOver) => {
            say!("{url}: at release the lock belonged to someone else; left it alone")
        }
        Ok(ReleaseOutcome::AlreadyGone) => {
            say!("{url}: at release the lock was already gone")
        }
        Ok(ReleaseOutcome::HeldElsewhere) => say!(
            "{url}: at release another process was running under this handle (it continued the hold meanwhile); left it to that process"
        ),
        Ok(other) => say!("{url}: released ({other:?})"),
        Err(e) if e.kind() == sets3lock::ErrorKind::AccessDenied => say!(
            "{url}: the store refused the release: {e}; the lock stays held until its lease runs out"
        ),
        Err(e) => {
            say!("{url}: release failed: {e} (the lock expires after its lease)")
        }
    }
}
