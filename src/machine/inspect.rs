//! What a driver or its user may ask a [`Lock`] without changing it: whether it is held and
//! until when, whether it is idle, the hold's owner, ETag and fencing token.

use super::{Lock, Phase};
use crate::{ETag, Fence, Instant, LockState, OwnerId};

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
