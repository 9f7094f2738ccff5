//! What every phase works with: the settings, the random source and the events for the user.

use super::retry;
use crate::rng::Rng;
use crate::{Config, Event, Instant};
use std::collections::VecDeque;

/// The settings, the random source and the event queue, lent to the phase handling an input.
#[derive(Debug)]
pub(super) struct Context {
    pub(super) cfg: Config,
    pub(super) rng: Rng,
    pub(super) events: VecDeque<Event>,
}

impl Context {
    pub(super) fn emit(&mut self, event: Event) {
        self.events.push_back(event);
    }

    /// When retry number `attempt` goes out, by the retry backoff (see [`retry::pace`]).
    pub(super) fn retry_at(&mut self, now: Instant, attempt: u32, at_once: u32) -> Instant {
        retry::pace(&self.cfg.retry, &mut self.rng, now, attempt, at_once)
    }

    /// When the next poll of a held lock goes out.
    pub(super) fn poll_at(&mut self, now: Instant, polls: u32) -> Instant {
        now + self.cfg.poll.draw(polls, &mut self.rng)
    }

    /// The end of validity of a write sent at `sent`; `None` with a zero lease.
    pub(super) fn valid_until(&self, sent: Instant) -> Option<Instant> {
        (!self.cfg.lease.is_zero()).then(|| sent + self.cfg.validity())
    }
}
