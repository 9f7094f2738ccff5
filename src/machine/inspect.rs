//! What a driver or its user may ask a [`Lock`] without changing it: whether it is held and
//! until when, whether it is idle, the hold's owner, ETag and fencing token.

use super::{Lock, Phase};
use crate::{ETag, Fence, Instant, LockState, OwnerId};
use core::time::Duration;

/// The shortest wait [`Lock::request_limit`] gives a hold's request, even at the very end of
/// its validity.
pub const MIN_HOLD_REQUEST_WAIT: Duration = Duration::from_millis(100);

impl Lock {
    /// Whether we hold a valid lock at `now`: acquired, not released, lost or expired, and
    /// `now` is before the end of validity.
    ///
    /// ```
    /// # use sets3lock_proto::{Config, Instant, Lock};
    /// let lock = Lock::new(Config::default(), [7; 32]).unwrap();
    /// assert!(!lock.is_held(Instant::ZERO));
    /// ```
    pub fn is_held(&self, now: Instant) -> bool {
        match &self.phase {
            Phase::Holding(h) => h.is_valid(now),
            _ => false,
        }
    }

    /// Nothing under way: no acquisition, hold, release or cleanup, and no request awaiting
    /// its reply. A driver that is shutting down should keep driving until this is true, so
    /// that a write of ours that landed late is removed.
    ///
    /// ```
    /// # use sets3lock_proto::{Config, Lock};
    /// assert!(Lock::new(Config::default(), [7; 32]).unwrap().is_idle());
    /// ```
    pub fn is_idle(&self) -> bool {
        matches!(self.phase, Phase::Idle) && self.pending.is_none()
    }

    /// The current hold's owner id and ETag, while held.
    ///
    /// ```
    /// # use sets3lock_proto::{Config, Lock};
    /// assert!(Lock::new(Config::default(), [7; 32]).unwrap().holding().is_none());
    /// ```
    pub fn holding(&self) -> Option<(OwnerId, &ETag)> {
        match &self.phase {
            Phase::Holding(h) => Some((h.owner(), h.etag())),
            _ => None,
        }
    }

    /// When the current hold stops being valid unless renewed (`None` if not held or if the
    /// lease is zero).
    ///
    /// ```
    /// # use sets3lock_proto::{Config, Lock};
    /// assert!(Lock::new(Config::default(), [7; 32]).unwrap().valid_until().is_none());
    /// ```
    pub fn valid_until(&self) -> Option<Instant> {
        match &self.phase {
            Phase::Holding(h) => h.valid_until(),
            _ => None,
        }
    }

    /// How long the driver may wait for the answer to the request it sends at `now`, given
    /// its own `limit` (its request timeout, an acquisition's deadline). For a hold's request
    /// (a renewal, its read-back) it is shorter: at most a renewal interval, at most half of
    /// what is left before the stop point (validity's end less
    /// [`Config::stop_before`](crate::Config::stop_before)), and past the stop point, what is
    /// left of validity; never less than [`MIN_HOLD_REQUEST_WAIT`] unless `limit` is.
    ///
    /// Why half: a request given up leaves the other half for its retry (a pause, the
    /// read-back, a second renewal) to land before the hold's user stops relying on it, and
    /// each further loss in a row halves what is left again, so a hold rides out lost requests
    /// for as long as the halves outlast a retry's round trips. With the store's full request
    /// timeout (20 s by default), one unanswered request would end any hold shorter than that.
    /// A request given up is an unknown outcome, which the core treats as safely as any lost
    /// reply: the limit decides how long a hold, and whoever reports its end, waits on a store
    /// that does not answer, never whether it is safe. docs/PROTOCOL.md ("How long a hold's
    /// request waits") gives the smallest lease that rides out a lost request.
    ///
    /// ```
    /// # use core::time::Duration;
    /// # use sets3lock_proto::{Config, Instant, Lock};
    /// let lock = Lock::new(Config::default(), [7; 32]).unwrap();
    /// // Not holding: the driver's own limit.
    /// let limit = lock.request_limit(Duration::from_secs(20), Instant::ZERO);
    /// assert_eq!(limit, Duration::from_secs(20));
    /// ```
    pub fn request_limit(&self, limit: Duration, now: Instant) -> Duration {
        match self.valid_until() {
            Some(until) => hold_request_limit(
                limit,
                self.cx.cfg.renew_interval(),
                until.saturating_duration_since(now),
                self.cx.cfg.stop_before,
            ),
            None => limit,
        }
    }

    /// The current hold's fencing token, while held in fenced mode.
    ///
    /// ```
    /// # use sets3lock_proto::{Config, Lock};
    /// assert_eq!(Lock::new(Config::default(), [7; 32]).unwrap().token(), None);
    /// ```
    pub fn token(&self) -> Option<u64> {
        match &self.phase {
            Phase::Holding(h) => h.token(),
            _ => None,
        }
    }

    /// The highest fencing token this lock has seen on its key, over all its acquisitions:
    /// in any record it read, or granted itself. `None` until it has seen the key fenced.
    ///
    /// A grant never writes a token at or below it, whatever the record says (someone may
    /// have removed the lock object, or overwritten it without a token), so that tokens
    /// never go back for a client that saw them. A driver that builds a new `Lock` for each
    /// acquisition carries it over with [`saw_token`](Lock::saw_token).
    ///
    /// ```
    /// # use sets3lock_proto::{Config, Lock};
    /// let mut lock = Lock::new(Config::default(), [7; 32]).unwrap();
    /// assert_eq!(lock.highest_token_seen(), None);
    /// lock.saw_token(41);
    /// assert_eq!(lock.highest_token_seen(), Some(41));
    /// ```
    pub fn highest_token_seen(&self) -> Option<u64> {
        self.cx.seen_token
    }

    /// Tells the lock that `token` was granted on its key (seen by an earlier `Lock` of the
    /// same key, for one): its grants write tokens above it, and it treats the key as fenced.
    ///
    /// ```
    /// # use sets3lock_proto::{Config, Instant, Intent, Lock, Holder, Wait};
    /// let mut lock = Lock::new(Config::default(), [7; 32]).unwrap();
    /// lock.saw_token(41);
    /// lock.acquire(Instant::ZERO, 0, Wait::No).unwrap();
    /// let request = lock.poll_request().unwrap();
    /// let body = request.intent.body().unwrap();
    /// assert_eq!(Holder::decode(body).fence().unwrap().token, 42);
    /// ```
    pub fn saw_token(&mut self, token: u64) {
        self.cx.saw(Some(Fence {
            state: LockState::Held,
            token,
        }));
    }
}

/// `limit`, and at most a renewal interval and half of what is `left` of validity before the
/// stop point (`stop_before` ahead of its end), or past that point what is left of validity;
/// those two never below [`MIN_HOLD_REQUEST_WAIT`].
fn hold_request_limit(
    limit: Duration,
    renew_interval: Duration,
    left: Duration,
    stop_before: Duration,
) -> Duration {
    let to_stop = left.saturating_sub(stop_before);
    let wait = if to_stop.is_zero() { left } else { to_stop / 2 };
    // (A driver's own limit below the floor still wins.)
    limit.min(renew_interval.min(wait).max(MIN_HOLD_REQUEST_WAIT))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hold_s_request_waits_half_the_time_to_the_stop_point_at_most() {
        let s = Duration::from_secs;
        let ms = Duration::from_millis;
        let zero = Duration::ZERO;
        // The default: a 60 s lease renews every 20 s, validity 58.8 s; at the renewal 38.8 s
        // are left, half of it is 19.4 s.
        assert_eq!(
            hold_request_limit(s(20), s(20), ms(38_800), zero),
            ms(19_400)
        );
        // A 6 s lease: a renewal into silence is given up after under 2 s, not 20.
        assert_eq!(hold_request_limit(s(20), s(2), ms(3880), zero), ms(1940));
        // With the command's stop point 1.94 s before validity ends: half of the 1.94 s left.
        assert_eq!(hold_request_limit(s(20), s(2), ms(3880), ms(1940)), ms(970));
        // Past the stop point: what is left of validity.
        assert_eq!(hold_request_limit(s(20), s(2), ms(700), s(1)), ms(700));
        // A shorter request timeout still wins; a renewal interval caps it too.
        assert_eq!(hold_request_limit(s(1), s(20), s(40), zero), s(1));
        assert_eq!(hold_request_limit(s(20), s(2), s(40), zero), s(2));
        // A driver's own limit below the floor still wins.
        assert_eq!(hold_request_limit(ms(50), s(2), zero, zero), ms(50));
        // Never nothing.
        assert_eq!(
            hold_request_limit(s(20), s(2), zero, zero),
            MIN_HOLD_REQUEST_WAIT
        );
        assert_eq!(
            hold_request_limit(s(20), s(2), ms(10), zero),
            MIN_HOLD_REQUEST_WAIT
        );
    }
}
