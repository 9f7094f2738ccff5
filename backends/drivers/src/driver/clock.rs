//! The drivers' clock: monotonic, and counting through system suspend where the platform has
//! such a clock.
//!
//! A lease is measured on this clock. A clock that stops while the machine sleeps would let a
//! laptop that slept for five minutes wake up believing its lock still valid, while a waiter,
//! whose clock ran, took it over. `std::time::Instant` is such a clock on Linux
//! (CLOCK_MONOTONIC) and on Apple platforms (CLOCK_UPTIME_RAW), so there the drivers read
//! another one. Which clock each platform uses is [`choice_for`], one reviewed table with its
//! sources; the clock is chosen once per process, so readings never change origin. (A virtual
//! machine paused by its hypervisor may stop even these clocks; that case no lease can cover.)

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A reading of the suspend-aware clock. (Public only for the sealed `Mode` trait to name it:
/// the module is private.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Stamp(Duration);

impl Stamp {
    pub(crate) fn now() -> Stamp {
        Stamp(read())
    }

    /// How long after `earlier` this is (zero if not after it).
    pub(crate) fn since(self, earlier: Stamp) -> Duration {
        self.0.saturating_sub(earlier.0)
    }

    pub(crate) fn plus(self, d: Duration) -> Stamp {
        Stamp(self.0.saturating_add(d))
    }
}

/// How long to sleep on the way to `deadline`: never more than a second, so that time lost
/// to a suspend (during which sleeping timers do not run) is noticed within a second.
pub(crate) fn nap_until(deadline: Stamp) -> Duration {
    deadline.since(Stamp::now()).min(Duration::from_secs(1))
}

/// A clock the drivers can read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Choice {
    /// `clock_gettime(CLOCK_BOOTTIME)`.
    BootTime,
    /// `clock_gettime(CLOCK_MONOTONIC_RAW)`, on Apple platforms the same clock as
    /// `mach_continuous_time`.
    MonotonicRaw,
    /// `std::time::Instant`.
    Std,
}

/// Whether a platform's clock is known to count while the machine is suspended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ThroughSuspend {
    /// Documented by the platform (the source is in [`choice_for`]).
    Yes,
    /// The documentation says yes and the kernel's code says otherwise.
    Unsettled,
    /// No clock of the platform is documented to.
    Unknown,
}

/// The clock for the operating system `os` (as `std::env::consts::OS` names it), and whether it
/// counts through suspend. Sources, read 2026-12-04:
///
/// - Linux, Android: CLOCK_BOOTTIME is "identical to CLOCK_MONOTONIC, except that it also
///   includes any time that the system is suspended" (clock_gettime(2), man7.org). `Instant` is
///   CLOCK_MONOTONIC there, which does not.
/// - macOS, iOS, tvOS, watchOS, visionOS: `mach_continuous_time` counts "including while the
///   system is asleep", and Apple points to `clock_gettime_nsec_np(CLOCK_MONOTONIC_RAW)` for
///   it; CLOCK_UPTIME_RAW, which `Instant` reads, "does not increment while the system is
///   asleep" (clock_gettime(3), Apple).
/// - Windows: `Instant` is QueryPerformanceCounter, which counts "including the time when the
///   machine was in a sleep state such as standby, hibernate, or connected standby"
///   (Microsoft, "Acquiring high-resolution time stamps").
/// - OpenBSD: `Instant` is CLOCK_MONOTONIC, which "advance[s] continuously", unlike
///   CLOCK_UPTIME, which advances "while the system is not suspended" (clock_gettime(2)).
/// - illumos, Solaris: `Instant` is CLOCK_MONOTONIC (`gethrtime`), which illumos moves
///   forward by the time slept on resume (`tsc_resume`).
/// - FreeBSD: clock_gettime(2) says CLOCK_MONOTONIC counts while suspended, but the kernel
///   serves it and CLOCK_UPTIME from one source, and a 2023 commit says FreeBSD has no
///   monotonic clock that counts suspended time: unsettled.
/// - NetBSD, DragonFly and the rest: no clock is documented to count through suspend.
pub(crate) fn choice_for(os: &str) -> (Choice, ThroughSuspend) {
    match os {
        "linux" | "android" => (Choice::BootTime, ThroughSuspend::Yes),
        "macos" | "ios" | "tvos" | "watchos" | "visionos" => {
            (Choice::MonotonicRaw, ThroughSuspend::Yes)
        }
        "windows" | "openbsd" | "illumos" | "solaris" => (Choice::Std, ThroughSuspend::Yes),
        "freebsd" => (Choice::Std, ThroughSuspend::Unsettled),
        _ => (Choice::Std, ThroughSuspend::Unknown),
    }
}

/// The clock in use in this process: chosen at the first reading, never changed after.
struct Clock {
    choice: Choice,
    /// The chosen clock's first reading, and the `Instant` taken with it: where a later
    /// failed reading continues from.
    base: Duration,
    started: Instant,
    /// The latest reading handed out, in nanoseconds: readings never go back.
    latest: AtomicU64,
}

static CLOCK: OnceLock<Clock> = OnceLock::new();

fn read() -> Duration {
    let clock = CLOCK.get_or_init(|| {
        let (wanted, _) = choice_for(std::env::consts::OS);
        let started = Instant::now();
        // A clock that cannot be read at all is never chosen.
        let (choice, base) = match read_clock(wanted) {
            Some(t) => (wanted, t),
            None => (Choice::Std, Duration::ZERO),
        };
        Clock {
            choice,
            base,
            started,
            latest: AtomicU64::new(0),
        }
    });
    // A reading that fails after the first continues from the first on `Instant`: the
    // origin stays the same either way.
    let now = match clock.choice {
        Choice::Std => None,
        other => read_clock(other),
    }
    .unwrap_or_else(|| clock.base.saturating_add(clock.started.elapsed()));
    let nanos = u64::try_from(now.as_nanos()).unwrap_or(u64::MAX);
    let latest = clock.latest.fetch_max(nanos, Ordering::Relaxed).max(nanos);
    Duration::from_nanos(latest)
}

/// One reading of `choice`, if this platform has that clock and it answers.
fn read_clock(choice: Choice) -> Option<Duration> {
    match choice {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        Choice::BootTime => posix(nix::time::ClockId::CLOCK_BOOTTIME),
        #[cfg(target_vendor = "apple")]
        Choice::MonotonicRaw => posix(nix::time::ClockId::from_raw(nix::libc::CLOCK_MONOTONIC_RAW)),
        Choice::Std => None,
        #[allow(unreachable_patterns)] // the clocks this platform has not
        _ => None,
    }
}

#[cfg(unix)]
#[allow(dead_code)] // on unix platforms that use `Instant`
fn posix(id: nix::time::ClockId) -> Option<Duration> {
    let t = nix::time::clock_gettime(id).ok()?;
    Some(Duration::new(
        u64::try_from(t.tv_sec()).ok()?,
        u32::try_from(t.tv_nsec()).ok()?,
    ))
}

/// The least time a request is given, even at the deadline: a write sent then may land, and
/// its reply says whether we hold the lock.
pub(crate) const LAST_REQUEST: Duration = Duration::from_secs(1);

/// How long a request may take: `timeout`, but ending at `deadline` (if any), though never
/// less than [`LAST_REQUEST`].
pub(crate) fn time_limit(timeout: Duration, deadline: Option<Stamp>) -> Duration {
    match deadline {
        Some(d) => d
            .since(Stamp::now())
            .clamp(LAST_REQUEST.min(timeout), timeout),
        None => timeout,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_ends_at_the_deadline_but_gets_a_second_at_least() {
        let t = Duration::from_secs(20);
        assert_eq!(time_limit(t, None), t);
        let soon = Stamp::now().plus(Duration::from_secs(5));
        let limit = time_limit(t, Some(soon));
        assert!(
            limit <= Duration::from_secs(5) && limit > Duration::from_secs(4),
            "{limit:?}"
        );
        assert_eq!(time_limit(t, Some(Stamp::now())), LAST_REQUEST);
        // Never more than the request timeout, even if that is under a second.
        let short = Duration::from_millis(300);
        assert_eq!(time_limit(short, Some(Stamp::now())), short);
        assert_eq!(time_limit(short, Some(soon)), short);
    }

    #[test]
    fn it_moves_forward() {
        let a = Stamp::now();
        std::thread::sleep(Duration::from_millis(5));
        let b = Stamp::now();
        assert!(b.since(a) >= Duration::from_millis(5));
        assert_eq!(a.since(b), Duration::ZERO);
        assert!(nap_until(a.plus(Duration::from_secs(60))) <= Duration::from_secs(1));
    }

    #[test]
    fn each_platform_has_its_reviewed_clock() {
        use Choice::*;
        use ThroughSuspend::*;
        let table = [
            ("linux", BootTime, Yes),
            ("android", BootTime, Yes),
            ("macos", MonotonicRaw, Yes),
            ("ios", MonotonicRaw, Yes),
            ("windows", Std, Yes),
            ("openbsd", Std, Yes),
            ("illumos", Std, Yes),
            ("freebsd", Std, Unsettled),
            ("netbsd", Std, Unknown),
            ("dragonfly", Std, Unknown),
        ];
        for (os, choice, through) in table {
            assert_eq!(choice_for(os), (choice, through), "{os}");
        }
    }

    /// What can be run here (Linux): the process reads CLOCK_BOOTTIME, the clock that counts
    /// through suspend, and it is at least CLOCK_MONOTONIC (the same clock plus the time
    /// suspended).
    #[cfg(target_os = "linux")]
    #[test]
    fn on_linux_the_lease_clock_is_boottime() {
        let _ = Stamp::now();
        let clock = CLOCK.get().expect("chosen at the first reading");
        assert_eq!(clock.choice, Choice::BootTime);
        let mono = posix(nix::time::ClockId::CLOCK_MONOTONIC).expect("CLOCK_MONOTONIC");
        let boot = read_clock(Choice::BootTime).expect("CLOCK_BOOTTIME");
        assert!(boot >= mono, "BOOTTIME {boot:?} behind MONOTONIC {mono:?}");
        // Readings are BOOTTIME's own (same origin): within a second of a direct read.
        let stamp = Stamp::now().0;
        let direct = read_clock(Choice::BootTime).expect("CLOCK_BOOTTIME");
        assert!(direct.saturating_sub(stamp) < Duration::from_secs(1));
        assert!(stamp.saturating_sub(direct) < Duration::from_secs(1));
    }
}
