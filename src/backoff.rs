//! Exponential backoff with full jitter.

use crate::rng::Rng;
use core::time::Duration;

/// The range that waits are drawn from: the `n`th wait (from 0) is uniform in
/// `floor ..= min(cap, floor * 2^n)`.
///
/// Randomising the whole range ("full jitter") spreads contending clients apart so that they
/// do not poll, or retry a 409, in lockstep.
///
/// ```
/// use core::time::Duration;
/// use sets3lock_proto::Backoff;
/// let b = Backoff::new(Duration::from_millis(100), Duration::from_secs(3));
/// assert_eq!(b.ceiling(0), Duration::from_millis(100));
/// assert_eq!(b.ceiling(3), Duration::from_millis(800));
/// assert_eq!(b.ceiling(40), Duration::from_secs(3));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    /// The shortest wait.
    pub floor: Duration,
    /// The longest wait.
    pub cap: Duration,
}

impl Backoff {
    /// A backoff between `floor` and `cap` ([`Config::validate`](crate::Config::validate)
    /// requires `0 < floor <= cap`).
    pub const fn new(floor: Duration, cap: Duration) -> Backoff {
        Backoff { floor, cap }
    }

    /// The longest wait for attempt `n` (counting from 0).
    ///
    /// ```
    /// # use core::time::Duration;
    /// let b = sets3lock_proto::Backoff::new(Duration::from_millis(10), Duration::from_millis(15));
    /// assert_eq!(b.ceiling(1), Duration::from_millis(15));
    /// ```
    pub fn ceiling(&self, n: u32) -> Duration {
        let factor = 1u32.checked_shl(n.min(31)).unwrap_or(u32::MAX);
        self.floor
            .checked_mul(factor)
            .unwrap_or(Duration::MAX)
            .min(self.cap)
            .max(self.floor)
    }

    /// A random wait for attempt `n`.
    pub(crate) fn draw(&self, n: u32, rng: &mut Rng) -> Duration {
        let floor = self.floor.min(self.cap);
        let ceiling = self.ceiling(n);
        let spread = u64::try_from((ceiling - floor).as_nanos()).unwrap_or(u64::MAX);
        floor + Duration::from_nanos(rng.up_to(spread))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_stay_between_floor_and_ceiling() {
        let b = Backoff::new(Duration::from_millis(100), Duration::from_secs(2));
        let mut rng = Rng::from_seed([3; 32]);
        for n in 0..40 {
            for _ in 0..50 {
                let d = b.draw(n, &mut rng);
                assert!(d >= b.floor && d <= b.ceiling(n), "attempt {n}: {d:?}");
            }
        }
    }

    #[test]
    fn draws_are_spread_not_constant() {
        let b = Backoff::new(Duration::from_millis(100), Duration::from_secs(2));
        let mut rng = Rng::from_seed([4; 32]);
        let draws: Vec<Duration> = (0..20).map(|_| b.draw(5, &mut rng)).collect();
        let min = draws.iter().min().copied().unwrap_or_default();
        let max = draws.iter().max().copied().unwrap_or_default();
        assert!(max - min > Duration::from_millis(500), "{min:?}..{max:?}");
    }
}
