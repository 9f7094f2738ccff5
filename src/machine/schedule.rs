//! The one step a phase has scheduled next, and when.

use crate::Instant;

/// At most one scheduled step of type `S`.
#[derive(Clone, Debug)]
pub(super) struct Schedule<S>(Option<(Instant, S)>);

impl<S> Schedule<S> {
    pub(super) fn none() -> Schedule<S> {
        Schedule(None)
    }

    pub(super) fn at(at: Instant, step: S) -> Schedule<S> {
        Schedule(Some((at, step)))
    }

    /// Replaces whatever was scheduled.
    pub(super) fn set(&mut self, at: Instant, step: S) {
        self.0 = Some((at, step));
    }

    /// When the step is due, if one is scheduled.
    pub(super) fn when(&self) -> Option<Instant> {
        self.0.as_ref().map(|(at, _)| *at)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// The step, if it is due at `now` (it is then no longer scheduled).
    pub(super) fn take_due(&mut self, now: Instant) -> Option<S> {
        if self.when().is_some_and(|at| at <= now) {
            self.0.take().map(|(_, step)| step)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::time::Duration;

    #[test]
    fn a_step_is_handed_out_once_and_not_before_it_is_due() {
        let t = Instant::ZERO + Duration::from_secs(5);
        let mut s = Schedule::at(t, 'x');
        assert_eq!(s.take_due(Instant::ZERO), None);
        assert_eq!(s.when(), Some(t));
        assert_eq!(s.take_due(t), Some('x'));
        assert!(s.is_empty());
        assert_eq!(s.take_due(t), None);
    }
}
