//! Virtual time: one real timeline, and per-process clocks that run fast or slow.

use core::time::Duration;
use sets3lock_proto::Instant;

/// A process's monotonic clock: `local = offset + real × (1 + ppm / 10⁶)`.
///
/// Rates differ by `ppm` parts per million from real time; offsets are arbitrary, as on real
/// machines (the protocol must not care).
///
/// ```
/// use core::time::Duration;
/// use sets3lock_mock::DriftClock;
/// let fast = DriftClock::new(Duration::from_secs(1000), 10_000); // 1% fast
/// let t = Duration::from_secs(100);
/// assert_eq!(fast.local(t).since_origin(), Duration::from_secs(1101));
/// assert!(fast.local(fast.real_at(fast.local(t))) >= fast.local(t));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DriftClock {
    offset: u64,
    ppm: i32,
}

const MILLION: i128 = 1_000_000;

impl DriftClock {
    /// A clock starting at `offset` when real time is zero, running `ppm` parts per million
    /// fast (positive) or slow (negative). `ppm` is clamped to ±500 000.
    pub fn new(offset: Duration, ppm: i32) -> DriftClock {
        DriftClock {
            offset: u64::try_from(offset.as_nanos()).unwrap_or(u64::MAX / 4),
            ppm: ppm.clamp(-500_000, 500_000),
        }
    }

    /// The drift in parts per million.
    pub fn ppm(&self) -> i32 {
        self.ppm
    }

    /// This clock's reading at real time `real`.
    pub fn local(&self, real: Duration) -> Instant {
        let r = real.as_nanos() as i128;
        let local = i128::from(self.offset) + r + r * i128::from(self.ppm) / MILLION;
        Instant::from_nanos(local.clamp(0, i128::from(u64::MAX)) as u64)
    }

    /// The earliest real time at which this clock reads `local` or later.
    pub fn real_at(&self, local: Instant) -> Duration {
        let target = i128::from(local.as_nanos()) - i128::from(self.offset);
        if target <= 0 {
            return Duration::ZERO;
        }
        let rate = MILLION + i128::from(self.ppm);
        let mut real = (target * MILLION / rate).max(0);
        let to_duration = |n: i128| Duration::from_nanos(n.clamp(0, i128::from(u64::MAX)) as u64);
        while self.local(to_duration(real)) < local {
            real += 1;
        }
        while real > 0 && self.local(to_duration(real - 1)) >= local {
            real -= 1;
        }
        to_duration(real)
    }
}
