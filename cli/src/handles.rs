//! Holds across processes: `sets3lock acquire` (prints a handle), `renew HANDLE` and
//! `release HANDLE`. Run mode's `--handle` is in `run`.

use crate::cli::{LockFlags, LEASE};
use crate::exit_codes::{signalled, CANNOT_LOCK, LOST, OK};
use crate::log::Log;
use sets3lock::proto::{Handle, LockUrl, ReleaseOutcome};
use sets3lock::Locker;
use sets3lock::{Error, Options, StoreCheck, Wait};
use std::time::Duration;

/// `sets3lock acquire`: acquires, lets go without releasing, prints the handle.
pub(crate) fn acquire(
    url: &LockUrl,
    mut options: Options,
    flags: &LockFlags,
    no_store_check: bool,
    verbose: bool,
) -> u8 {
    let log = Log::new(verbose, false, url.clone());
    options.observer = Some(log.observer());
    let lease = flags.lease.unwrap_or(LEASE);
    options.lock.lease = lease;
    options.lock.fenced = flags.fenced;
    options.lock.value = flags.value.clone();
    options.lock.poll.cap = flags.poll_max;
    options.lock.terraform_lease = flags.terraform_lease;
    options.lock_format = flags.lock_format;
    options.operation = Some("sets3lock acquire".into());
    options.store_check = store_check(no_store_check);
    let mut check = options.lock.clone();
    if flags.lock_format.is_terraform(url.key()) {
        check.terraform = Some(sets3lock::proto::TerraformFormat::default());
    }
    if let Err(e) = check.validate() {
        say!("{e}");
        return crate::exit_codes::USAGE;
    }
    let wait = match (flags.no_wait, flags.timeout) {
        (true, _) => Wait::No,
        (false, Some(t)) => Wait::Timeout(t),
        (false, None) => Wait::Forever,
    };
    let Some(runtime) = crate::runtime() else {
        return CANNOT_LOCK;
    };
    let code = runtime.block_on(async {
        let locker = match Locker::new(&url.to_string(), options) {
            Ok(l) => l,
            Err(e) => {
                say!("{url}: {e}");
                return CANNOT_LOCK;
            }
        };
        let mut signals = match crate::run::catch_signals() {
            Ok(s) => s,
            Err(e) => {
                say!("cannot handle signals: {e}");
                return CANNOT_LOCK;
            }
        };
        let mut acquiring = Box::pin(locker.acquire(wait));
        let held = tokio::select! {
            result = acquiring.as_mut() => result,
            Some(sig) = signals.recv() => {
                drop(acquiring);
                say!("{url}: {sig} while waiting for the lock: stopped");
                let _ = tokio::time::timeout(crate::run::CLEANUP_BOUND, locker.shutdown()).await;
                return signalled(sig as i32);
            }
        };
        drop(acquiring);
        let before = log.failures();
        let code = match held {
            Ok(held) => match held.detach().await {
                Ok(handle) => {
                    out!("{handle}");
                    log.unparked_since(before, lease);
                    OK
                }
                Err(e) => {
                    say!("{url}: {e}");
                    LOST
                }
            },
            Err(e) => {
                say!("{url}: {e}");
                CANNOT_LOCK
            }
        };
        let _ = tokio::time::timeout(crate::run::CLEANUP_BOUND, locker.shutdown()).await;
        code
    });
    runtime.shutdown_background();
    code
}

/// `sets3lock renew HANDLE`: one renewal, then nobody renews it again.
pub(crate) fn renew(
    handle: &Handle,
    mut options: Options,
    lease: Option<Duration>,
    no_store_check: bool,
    verbose: bool,
) -> u8 {
    let url = &handle.url;
    let log = Log::new(verbose, false, url.clone());
    options.observer = Some(log.observer());
    options.store_check = store_check(no_store_check);
    let handle = Handle {
        lease: lease.unwrap_or(handle.lease),
        ..handle.clone()
    };
    with_locker(url, options, async |locker: &Locker| {
        let before = log.failures();
        match locker.renew_handle(&handle).await {
            Ok(valid) => {
                log.unparked_since(before, handle.lease);
                if let Some(v) = valid {
                    log.note(&format!(
                        "renewed: held for {} more",
                        crate::output::human(v)
                    ));
                }
                OK
            }
            Err(e) => refused(url, &e),
        }
    })
}

/// `sets3lock release HANDLE`: releases it and says what it found.
pub(crate) fn release(handle: &Handle, mut options: Options, verbose: bool) -> u8 {
    let url = &handle.url;
    let log = Log::new(verbose, false, url.clone());
    options.observer = Some(log.observer());
    options.store_check = StoreCheck::Off;
    with_locker(url, options, async |locker: &Locker| {
        match locker.release_handle(handle).await {
            Ok(ReleaseOutcome::Deleted | ReleaseOutcome::Freed) => OK,
            Ok(ReleaseOutcome::TakenOver) => {
                say!("{url}: the lock belonged to someone else by the time of the release; left it alone");
                LOST
            }
            Ok(ReleaseOutcome::AlreadyGone) => {
                say!("{url}: the lock object was already gone");
                LOST
            }
            Ok(ReleaseOutcome::Overdue) => {
                say!("{url}: released, but its lease had run out before this release: anyone could have taken it over meanwhile (nobody did); renew more often than the lease");
                LOST
            }
            Ok(ReleaseOutcome::Resting) => {
                say!("{url}: released, but its record was not parked (a process may still be running under this handle, or died while it did): the lock rests until that process's lease is surely over, about {:?} from now", handle.lease);
                OK
            }
            Ok(ReleaseOutcome::HeldElsewhere) => {
                say!("{url}: another process continued this hold from its handle meanwhile; left it to that process");
                LOST
            }
            Ok(other) => {
                say!("{url}: released ({other:?})");
                OK
            }
            Err(e) => refused(url, &e),
        }
    })
}

/// Runs `work` with a locker for `url` on a runtime of its own, then lets what is in flight
/// finish (bounded).
fn with_locker(url: &LockUrl, options: Options, work: impl AsyncFnOnce(&Locker) -> u8) -> u8 {
    let Some(runtime) = crate::runtime() else {
        return CANNOT_LOCK;
    };
    let code = runtime.block_on(async {
        let locker = match Locker::new(&url.to_string(), options) {
            Ok(l) => l,
            Err(e) => {
                say!("{url}: {e}");
                return CANNOT_LOCK;
            }
        };
        let code = work(&locker).await;
        let _ = tokio::time::timeout(crate::run::CLEANUP_BOUND, locker.shutdown()).await;
        code
    });
    runtime.shutdown_background();
    code
}

/// A handle's hold that has ended is 112, with what became of it; anything else (the store
/// refused, unreachable) is 111.
pub(crate) fn refused(url: &LockUrl, e: &Error) -> u8 {
    say!("{url}: {e}");
    match e {
        // Ended before we came, or lost between our renewal and our letting go.
        Error::HoldEnded(_) | Error::AlreadyLost(_) | Error::AlreadyExpired => LOST,
        _ => CANNOT_LOCK,
    }
}

fn store_check(off: bool) -> StoreCheck {
    if off {
        StoreCheck::Off
    } else {
        StoreCheck::in_user_cache()
    }
}
