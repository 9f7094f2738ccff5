//! The core's clock: one origin, counting through suspend (the driver contract's rule 1).

use core::time::Duration;
use sets3lock_proto::Instant;

/// Time since this clock was made, as the core's `Instant`: from `CLOCK_BOOTTIME` on Linux
/// (it keeps counting while the machine sleeps), from `std::time::Instant` elsewhere (which
/// may stop in sleep: a real driver picks its platform's suspend-counting clock).
pub(crate) struct Clock {
    origin: Duration,
    #[cfg(not(target_os = "linux"))]
    started: std::time::Instant,
}

impl Clock {
    pub(crate) fn new() -> Clock {
        Clock {
            origin: boot_time().unwrap_or_default(),
            #[cfg(not(target_os = "linux"))]
            started: std::time::Instant::now(),
        }
    }

    pub(crate) fn now(&self) -> Instant {
        #[cfg(target_os = "linux")]
        let elapsed = boot_time().unwrap_or_default().saturating_sub(self.origin);
        #[cfg(not(target_os = "linux"))]
        let elapsed = self.started.elapsed();
        Instant::from_duration(elapsed)
    }
}

#[cfg(target_os = "linux")]
fn boot_time() -> Option<Duration> {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_BOOTTIME).ok()?;
    Some(Duration::new(
        u64::try_from(t.tv_sec()).ok()?,
        u32::try_from(t.tv_nsec()).ok()?,
    ))
}

#[cfg(not(target_os = "linux"))]
fn boot_time() -> Option<Duration> {
    None
}
