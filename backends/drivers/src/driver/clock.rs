//! The drivers' clock: monotonic, and counting through system suspend.
//!
//! A lease is measured on this clock. `std::time::Instant` is CLOCK_MONOTONIC on Linux, which
//! stops while the machine is suspended: a laptop that sleeps for five minutes would wake up
//! believing its lock still valid while a waiter, whose clock ran, took it over. So on Linux
//! the drivers read CLOCK_BOOTTIME; elsewhere they fall back to `Instant`. (A virtual machine
//! paused by its hypervisor may stop even CLOCK_BOOTTIME; that case the lease cannot cover.)

use std::time::Duration;

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

#[cfg(any(target_os = "linux", target_os = "android"))]
fn read() -> Duration {
    use nix::time::{clock_gettime, ClockId};
    match clock_gettime(ClockId::CLOCK_BOOTTIME) {
        Ok(t) => Duration::new(
            u64::try_from(t.tv_sec()).unwrap_or(0),
            u32::try_from(t.tv_nsec()).unwrap_or(0),
        ),
        Err(_) => fallback(),
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn read() -> Duration {
    fallback()
}

fn fallback() -> Duration {
    static ORIGIN: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    ORIGIN.get_or_init(std::time::Instant::now).elapsed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_moves_forward() {
        let a = Stamp::now();
        std::thread::sleep(Duration::from_millis(5));
        let b = Stamp::now();
        assert!(b.since(a) >= Duration::from_millis(5));
        assert_eq!(a.since(b), Duration::ZERO);
        assert!(nap_until(a.plus(Duration::from_secs(60))) <= Duration::from_secs(1));
    }
}
