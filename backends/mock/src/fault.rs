//! What the network and the server do to one request.

use core::time::Duration;

/// The fate of one request in the simulation. Requests consume faults in the order they are
/// sent; once the list runs out, every request is delivered with the default latency.
///
/// ```
/// use core::time::Duration;
/// use sets3lock_mock::Fault;
/// let f = Fault::Lose { applied_after: Some(Duration::from_millis(5)) };
/// assert!(f.may_apply());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Delivered: the server applies it after `to_server`, and the reply arrives `to_client`
    /// later. If the two add up to more than the request timeout, the client times out
    /// instead (and the request is still applied): a reply lost to slowness.
    Deliver {
        /// Latency to the server.
        to_server: Duration,
        /// Latency back.
        to_client: Duration,
    },
    /// The client never gets a reply and times out. `None`: the request never arrived.
    /// `Some(d)`: the server applied it after `d` (possibly after the client gave up).
    Lose {
        /// When the server applies it, if ever.
        applied_after: Option<Duration>,
    },
    /// The server answers 409 ConditionalRequestConflict without applying it.
    Conflict {
        /// Round-trip time.
        latency: Duration,
    },
    /// The server answers 503 SlowDown, after applying the request or not.
    ServerError {
        /// Round-trip time.
        latency: Duration,
        /// Whether the request was applied before the error.
        applied: bool,
    },
}

impl Fault {
    /// Whether the server may apply the request.
    pub fn may_apply(&self) -> bool {
        match self {
            Fault::Deliver { .. } => true,
            Fault::Lose { applied_after } => applied_after.is_some(),
            Fault::Conflict { .. } => false,
            Fault::ServerError { applied, .. } => *applied,
        }
    }
}
