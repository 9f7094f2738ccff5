//! What both drivers' handles share: how long to wait, how a hold ends, and reading the
//! shared state.

use crate::state::{End, Phase, Snapshot};
use crate::Error;
use core::time::Duration;
use sets3lock::{LostReason, ReleaseOutcome};

/// How long [`acquire`](crate::tokio::Locker::acquire) waits for the lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitFor {
    /// Try once (setlock's `-n`).
    No,
    /// Wait as long as it takes.
    Forever,
    /// Wait at most this long.
    Timeout(Duration),
}

impl WaitFor {
    pub(crate) fn to_core(self, _now: sets3lock::Instant) -> sets3lock::Wait {
        match self {
            WaitFor::No => sets3lock::Wait::No,
            WaitFor::Forever => sets3lock::Wait::Forever,
            WaitFor::Timeout(d) => sets3lock::Wait::Timeout(d),
        }
    }
}

/// How a hold ended without being released: stop relying on the lock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Loss {
    /// Another writer replaced the object, or it was deleted.
    Lost(LostReason),
    /// The lease ran out before a renewal got through.
    Expired,
    /// The background driver stopped (its runtime shut down): treat as lost.
    DriverStopped,
}

pub(crate) fn acquire_outcome(s: &Snapshot) -> Result<(), Error> {
    match &s.phase {
        Phase::Held => Ok(()),
        Phase::Ended(end) => Err(end_error(end)),
        Phase::Acquiring | Phase::Releasing => Err(Error::DriverGone),
    }
}

pub(crate) fn release_outcome(s: &Snapshot) -> Result<ReleaseOutcome, Error> {
    match &s.phase {
        Phase::Ended(End::Released(outcome)) => Ok(*outcome),
        Phase::Ended(end) => Err(end_error(end)),
        _ => Err(Error::DriverGone),
    }
}

fn end_error(end: &End) -> Error {
    match end {
        End::NotAcquired(sets3lock::NotAcquired::Busy { holder, etag }) => Error::Busy {
            holder: Box::new(holder.clone()),
            etag: etag.clone(),
        },
        End::NotAcquired(sets3lock::NotAcquired::TimedOut { holder }) => Error::TimedOut {
            holder: holder.clone().map(Box::new),
        },
        End::Cancelled => Error::Cancelled,
        End::Failed(e) => Error::S3(e.clone()),
        End::Lost(reason) => Error::AlreadyLost(Some(reason.clone())),
        End::Expired => Error::AlreadyLost(None),
        End::Released(_) => Error::DriverGone,
    }
}

/// Whether waiting for a loss is over: the hold ended, or its validity moved (a renewal).
pub(crate) fn loss_settled(s: &Snapshot, valid_until: Option<crate::clock::Stamp>) -> bool {
    !matches!(s.phase, Phase::Held) || s.valid_until != valid_until
}

/// The loss a snapshot shows at `now`, if any.
pub(crate) fn loss_of(s: &Snapshot, now: crate::clock::Stamp) -> Option<Loss> {
    match &s.phase {
        Phase::Held if s.is_held(now) => None,
        Phase::Held => Some(Loss::Expired),
        Phase::Ended(End::Lost(r)) => Some(Loss::Lost(r.clone())),
        Phase::Ended(End::Expired) => Some(Loss::Expired),
        Phase::Acquiring | Phase::Releasing if !s.finished => None,
        _ => Some(Loss::DriverStopped),
    }
}
