//! How long an acquisition may wait.

use core::time::Duration;

/// How long an acquisition may wait for the lock: the one way every driver, the mock and the
/// command say it. A timeout counts from the `now` passed to [`Lock::acquire`](crate::Lock::acquire).
///
/// ```
/// use core::time::Duration;
/// use sets3lock::Wait;
/// let w = Wait::Timeout(Duration::from_secs(30));
/// assert!(!w.is_try_once());
/// assert!(Wait::No.is_try_once());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Try once: if the lock is held, give up (setlock's `-n`).
    No,
    /// Wait as long as it takes (setlock's `-N`).
    Forever,
    /// Wait at most this long from the start of the acquisition.
    Timeout(Duration),
}

impl Wait {
    /// Whether the acquisition gives up as soon as it finds the lock held.
    ///
    /// ```
    /// # use sets3lock::Wait;
    /// assert!(!Wait::Forever.is_try_once());
    /// ```
    pub fn is_try_once(self) -> bool {
        self == Wait::No
    }
}
