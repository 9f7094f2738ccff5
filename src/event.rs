//! What the core tells its user.

use crate::{Ambiguity, ETag, Error, Holder, Instant, OwnerId};
use core::fmt;

/// Something the user of a lock must see, from [`Lock::poll_event`](crate::Lock::poll_event).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// Our write is the lock object: we hold the lock.
    Acquired {
        /// This hold's owner id (in the record).
        owner: OwnerId,
        /// The ETag of our write.
        etag: ETag,
        /// When the lock stops being trustworthy unless renewed; `None` with a zero lease.
        valid_until: Option<Instant>,
        /// The stale holder we replaced, if this was a takeover.
        took_over: Option<Holder>,
        /// The fencing token of this grant, when the key is fenced: larger than every token
        /// granted before on this key. Hand it to the resource the lock protects.
        token: Option<u64>,
    },
    /// Someone else holds the lock; sent when waiting starts and when the holder changes.
    Contended {
        /// Who, from the object's body.
        holder: Holder,
        /// The object's ETag.
        etag: ETag,
        /// When we will take it over if it does not change; `None`: never (no lease known).
        stale_at: Option<Instant>,
    },
    /// The acquisition ended without the lock.
    NotAcquired {
        /// Held (try-once) or timed out.
        reason: NotAcquired,
    },
    /// A renewal landed: the lock is valid for longer.
    Renewed {
        /// The ETag of the new write.
        etag: ETag,
        /// The new end of validity.
        valid_until: Option<Instant>,
    },
    /// A renewal attempt failed; the core retries until the lock's validity runs out.
    RenewalDelayed {
        /// What went wrong.
        setback: Setback,
    },
    /// The lock was lost while held: stop relying on it now.
    Lost {
        /// Overwritten by another writer, or deleted.
        reason: LostReason,
    },
    /// The lock's validity ran out before a renewal was confirmed: stop relying on it now.
    Expired,
    /// A release finished.
    Released {
        /// What the conditional delete found.
        outcome: ReleaseOutcome,
    },
    /// An acquisition was cancelled by the user; any write of ours that lands is cleaned up.
    Cancelled,
    /// An operation failed for good.
    Failed {
        /// The cause, with what fixes it.
        error: Error,
    },
}

/// Why an acquisition ended without the lock.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NotAcquired {
    /// Try-once: the lock is held.
    Busy {
        /// The holder, from the object's body.
        holder: Holder,
        /// The object's ETag (what `sets3lock unlock --etag` would need).
        etag: ETag,
    },
    /// The deadline passed while waiting.
    TimedOut {
        /// The last holder seen, if any.
        holder: Option<Holder>,
    },
    /// [`Lock::adopt`](crate::Lock::adopt): the hold the handle names has ended, so there is
    /// nothing to continue. Nothing was written.
    Ended {
        /// What became of it.
        ended: HoldEnded,
    },
    /// [`Lock::adopt`](crate::Lock::adopt) of a hold with lease 0 whose record is not parked:
    /// a process may still be running under it, and without a lease it never renews, so it
    /// would never learn that another process continued or released the hold. Nothing was
    /// written; the hold is left to that process. Also an adoption with lease 0 over an
    /// unparked record with a lease (its write could never be parked).
    InUse {
        /// The hold's record.
        holder: Holder,
        /// The lock object's ETag (what `sets3lock unlock --etag` needs, once you know
        /// nothing runs under the hold).
        etag: ETag,
    },
}

/// What became of a hold that a handle names, when it cannot be continued.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HoldEnded {
    /// Another hold's record is there: someone took the lock over (after the hold's lease ran
    /// out unrenewed) or an operator replaced it.
    TakenOver {
        /// The record there now.
        holder: Holder,
    },
    /// There is no lock object: the hold was released, or the object deleted.
    Gone,
    /// The hold's own record says it is over: a `free` record (fenced mode's release) or a
    /// resting one (a release under `hold_at_least`).
    Released {
        /// That record.
        holder: Holder,
    },
    /// The hold's record is still there, but older than its lease by the store's clock: anyone
    /// may take it over now, so it is not renewed (a release still removes it).
    Expired {
        /// The record's age by the store's clock (`Date` less `Last-Modified`).
        age: core::time::Duration,
        /// The lease it declares.
        lease: core::time::Duration,
    },
}

impl fmt::Display for HoldEnded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HoldEnded::TakenOver { holder } => write!(f, "it was taken over: held by {holder}"),
            HoldEnded::Gone => f.write_str("the lock object is gone (released or deleted)"),
            HoldEnded::Released { holder } if holder.is_free() => {
                f.write_str("it was released (the record says free)")
            }
            HoldEnded::Released { .. } => {
                f.write_str("it was released and the lock is resting (--hold-at-least)")
            }
            HoldEnded::Expired { age, lease } => write!(
                f,
                "its lease ran out: the record is {} s old by the store's clock, its lease {} s",
                age.as_secs(),
                lease.as_secs_f64()
            ),
        }
    }
}

/// How a held lock was lost.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LostReason {
    /// The object was replaced by another writer (a takeover after we failed to renew, or an
    /// operator).
    Overwritten {
        /// The new holder, when known.
        holder: Option<Holder>,
    },
    /// The object was deleted behind our back (an operator, or a lifecycle rule).
    Deleted,
}

/// What a release found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReleaseOutcome {
    /// Our object was deleted: the lock is free.
    Deleted,
    /// Another writer's object was there: the lock had been taken over. It was left alone.
    TakenOver,
    /// There was no object: it had been deleted already.
    AlreadyGone,
    /// Fenced mode: our record was replaced by a `free` record with the same token (the
    /// object stays): the lock is free. Also a release that finds the hold already freed
    /// from its handle by another process.
    Freed,
    /// `Config::hold_at_least`: released before that time was up, so our record was replaced
    /// by a resting one whose lease runs until then; nobody acquires the key before. Also a
    /// release from a handle whose record was not parked: another process may still be
    /// running under the hold, so the lock rests until that process's lease is surely over.
    /// Also a release that finds the hold already released that way by another process.
    Resting,
    /// Not a release: the hold was let go of ([`Lock::detach`](crate::Lock::detach)) and its
    /// record now says that nobody runs under it ([`Record::parked`](crate::Record::parked)),
    /// so a release from its handle may delete it at once.
    Parked,
    /// Another process had continued the same hold from its handle since our last write: it
    /// holds the lock now, and our release left its record alone.
    HeldElsewhere,
    /// A hold released from a handle after its lease had run out by the store's clock: it was
    /// still ours, and is now deleted (or freed), but for a while anyone could have taken it
    /// over, so whatever relied on it since was not protected.
    Overdue,
}

/// A failed attempt that will be retried.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Setback {
    /// 409 from a concurrent request.
    Conflict {
        /// The store's code.
        code: Option<String>,
    },
    /// No usable reply.
    Ambiguous(Ambiguity),
    /// A refusal (for example an expired credential); retried in case it is fixed in time.
    Refused(Error),
    /// The object was absent, our create lost the race to another writer, and that writer
    /// was gone again before we could see it: the lock keeps changing hands.
    LostRace,
    /// The store refused a conditional request on the very ETag it then reported again:
    /// weak ETags, a proxy that rewrites them, or a store that does not apply the condition.
    Incoherent {
        /// The ETag the store reported.
        etag: ETag,
    },
}

impl Event {
    /// Whether this event ends the operation the user asked for: an acquisition
    /// (`Acquired`, `NotAcquired`, `Cancelled`, `Failed`), a hold (`Lost`, `Expired`) or a
    /// release (`Released`, `Failed`).
    ///
    /// A final event does not mean the [`Lock`](crate::Lock) is idle: after an expiry or a
    /// cancellation it may still be cleaning up writes of ours that landed late. A driver that
    /// waits for an operation waits for a final event; one that shuts down keeps driving until
    /// [`Lock::is_idle`](crate::Lock::is_idle).
    ///
    /// ```
    /// use sets3lock_proto::Event;
    /// assert!(Event::Expired.is_final());
    /// assert!(!Event::RenewalDelayed { setback: sets3lock_proto::Setback::LostRace }.is_final());
    /// ```
    #[must_use]
    pub fn is_final(&self) -> bool {
        match self {
            Event::Acquired { .. }
            | Event::NotAcquired { .. }
            | Event::Lost { .. }
            | Event::Expired
            | Event::Released { .. }
            | Event::Cancelled
            | Event::Failed { .. } => true,
            Event::Contended { .. } | Event::Renewed { .. } | Event::RenewalDelayed { .. } => false,
        }
    }
}

impl fmt::Display for Setback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Setback::Conflict { code } => {
                write!(f, "HTTP 409 {}", code.as_deref().unwrap_or("Conflict"))
            }
            Setback::Ambiguous(a) => a.fmt(f),
            Setback::Refused(e) => e.fmt(f),
            Setback::LostRace => f.write_str("the lock kept changing hands"),
            Setback::Incoherent { etag } => write!(
                f,
                "the store refused If-Match on the ETag it reports ({etag}): weak ETags, an ETag-rewriting proxy, or a store that ignores the condition"
            ),
        }
    }
}
