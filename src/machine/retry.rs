//! Counting setbacks and pacing the next try: the one rule every phase uses.

use crate::rng::Rng;
use crate::{Backoff, Instant};

/// Tries of one kind in a row.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Tries(u32);

impl Tries {
    /// Counts one more try and returns its number (1 for the first).
    pub(super) fn count(&mut self) -> u32 {
        self.0 = self.0.saturating_add(1);
        self.0
    }

    /// Starts counting again (the trouble is over).
    pub(super) fn reset(&mut self) {
        self.0 = 0;
    }
}

/// When try number `attempt` (1-based) goes out: the first `at_once` tries immediately, later
/// ones after a jittered pause that grows with each try.
pub(super) fn pace(
    backoff: &Backoff,
    rng: &mut Rng,
    now: Instant,
    attempt: u32,
    at_once: u32,
) -> Instant {
    if attempt <= at_once {
        now
    } else {
        now + backoff.draw(attempt - at_once - 1, rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::time::Duration;

    #[test]
    fn the_first_tries_go_at_once_and_later_ones_are_paced_by_the_backoff() {
        let b = Backoff::new(Duration::from_millis(100), Duration::from_secs(10));
        let mut rng = Rng::from_seed([3; 32]);
        let now = Instant::ZERO + Duration::from_secs(1);
        assert_eq!(pace(&b, &mut rng, now, 1, 1), now);
        assert_eq!(pace(&b, &mut rng, now, 2, 2), now);
        for attempt in 1..8 {
            let at = pace(&b, &mut rng, now, attempt, 0);
            let pause = at.saturating_duration_since(now);
            assert!(pause >= b.floor, "try {attempt}: {pause:?}");
            assert!(pause <= b.ceiling(attempt - 1), "try {attempt}: {pause:?}");
        }
    }

    #[test]
    fn the_first_paced_try_after_the_ones_at_once_waits_the_backoffs_first_step() {
        // Floor 100 ms, no spread at the first step: after one try at once, the second waits
        // exactly the floor, whatever the generator draws.
        let b = Backoff::new(Duration::from_millis(100), Duration::from_secs(10));
        let mut rng = Rng::from_seed([5; 32]);
        let now = Instant::ZERO;
        for _ in 0..20 {
            assert_eq!(pace(&b, &mut rng, now, 2, 1), now + b.floor);
        }
    }

    #[test]
    fn tries_count_from_one_and_reset() {
        let mut t = Tries::default();
        assert_eq!(t.count(), 1);
        assert_eq!(t.count(), 2);
        t.reset();
        assert_eq!(t.count(), 1);
    }
}
