//! How long an acquisition may wait.

use core::time::Duration;

/// How long an acquisition may wait for the lock: the one way every driver, the mock and the
/// command say it. A timeout counts from the `now` passed to [`Lock::acquire`](crate::Lock::acquire).
///
/// ```
/// use core::time::Duration;
/// use sets3lock_proto::{Config, Instant, Lock, Wait};
///
/// let mut lock = Lock::new(Config::default(), [7; 32]).unwrap();
/// let now = Instant::ZERO;
/// // Wait at most 30 s from `now`.
/// lock.acquire(now, 0, Wait::Timeout(Duration::from_secs(30))).unwrap();
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Try once: if the lock is held, give up (setlock's `-n`), even if the holder is stale.
    No,
    /// Wait as long as it takes (setlock's `-N`).
    Forever,
    /// Wait at most this long from the start of the acquisition.
    ///
    /// The deadline never cuts short a create or takeover already sent: its answer decides, so
    /// that a write that may have made us the holder is not abandoned to a cleanup. If it was
    /// written, the lock is acquired after the deadline, as safely as ever (validity counts
    /// from the send).
    Timeout(Duration),
}

impl Wait {
    /// Whether the acquisition gives up as soon as it finds the lock held.
    pub fn is_try_once(self) -> bool {
        self == Wait::No
    }
}
