//! What every phase works with: the settings, the random source and the events for the user.

use super::retry;
use crate::rng::Rng;
use crate::{Config, Event, Fence, Instant, LockState};
use std::collections::VecDeque;

/// The settings, the random source and the event queue, lent to the phase handling an input.
#[derive(Debug)]
pub(super) struct Context {
    pub(super) cfg: Config,
    pub(super) rng: Rng,
    pub(super) events: VecDeque<Event>,
    /// The highest fencing token this lock has seen on its key, over all its acquisitions, if
    /// it saw the key fenced: a key once fenced stays fenced, and a grant never writes a token
    /// at or below one it has seen, even over a record someone else removed or rewrote.
    pub(super) seen_token: Option<u64>,
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

    /// Notes the fence of a record seen on the key, or granted by us.
    pub(super) fn saw(&mut self, fence: Option<Fence>) {
        if let Some(f) = fence {
            self.seen_token = Some(self.seen_token.map_or(f.token, |t| t.max(f.token)));
        }
    }

    /// The fence a grant over a record with fence `over` writes: the next token after it, or,
    /// over an absent, presence-mode or foreign record, the next after the highest token seen,
    /// if the key is fenced (by configuration, or because we saw it fenced).
    pub(super) fn grant_fence(&self, over: Option<Fence>) -> Option<Fence> {
        let last = match (over, self.seen_token) {
            (Some(f), seen) => Some(seen.map_or(f.token, |t| t.max(f.token))),
            (None, Some(seen)) => Some(seen),
            (None, None) if self.cfg.fenced => Some(0),
            (None, None) => None,
        }?;
        Some(Fence {
            state: LockState::Held,
            token: last.saturating_add(1),
        })
    }

    /// The end of validity of a write sent at `sent`; `None` with a zero lease.
    pub(super) fn valid_until(&self, sent: Instant) -> Option<Instant> {
        (!self.cfg.lease.is_zero()).then(|| sent + self.cfg.validity())
    }
}
