//! Monotonic time as the driver supplies it.

use core::ops::Add;
use core::time::Duration;

/// A reading of a monotonic clock, in nanoseconds since an origin the driver chooses.
///
/// The core never reads a clock: every input carries an `Instant`, and every deadline the core
/// hands out is one. A driver picks one origin (for example the moment it started) and converts
/// its own clock readings with [`Instant::from_duration`]. Only differences between instants
/// matter, so the origin is arbitrary, but it must be the same for every call on one lock.
///
/// ```
/// use core::time::Duration;
/// use sets3lock_proto::Instant;
///
/// let start = Instant::ZERO;
/// let later = start + Duration::from_millis(1500);
/// assert_eq!(later.saturating_duration_since(start), Duration::from_millis(1500));
/// assert_eq!(start.saturating_duration_since(later), Duration::ZERO);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(u64);

impl Instant {
    /// The origin.
    pub const ZERO: Instant = Instant(0);
    /// The latest representable instant (about 584 years after the origin).
    pub const MAX: Instant = Instant(u64::MAX);

    /// The instant `nanos` nanoseconds after the origin.
    pub const fn from_nanos(nanos: u64) -> Instant {
        Instant(nanos)
    }

    /// The instant `elapsed` after the origin, saturating at [`Instant::MAX`].
    ///
    /// ```
    /// use std::time::{Duration, Instant as StdInstant};
    /// // How a driver converts its own clock:
    /// let origin = StdInstant::now();
    /// let now = sets3lock_proto::Instant::from_duration(origin.elapsed());
    /// assert!(now < sets3lock_proto::Instant::from_duration(Duration::from_secs(3600)));
    /// ```
    pub fn from_duration(elapsed: Duration) -> Instant {
        Instant(u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX))
    }

    /// Nanoseconds since the origin.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// The time since the origin.
    pub const fn since_origin(self) -> Duration {
        Duration::from_nanos(self.0)
    }

    /// How long after `earlier` this instant is, or zero if it is not after it.
    ///
    /// ```
    /// use core::time::Duration;
    /// use sets3lock_proto::Instant;
    /// let a = Instant::from_nanos(10);
    /// let b = Instant::from_nanos(25);
    /// assert_eq!(b.saturating_duration_since(a), Duration::from_nanos(15));
    /// ```
    pub const fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;

    /// Saturating addition: far-future deadlines clamp to [`Instant::MAX`] instead of wrapping.
    fn add(self, rhs: Duration) -> Instant {
        let add = u64::try_from(rhs.as_nanos()).unwrap_or(u64::MAX);
        Instant(self.0.saturating_add(add))
    }
}
