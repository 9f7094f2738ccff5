//! What the network and the server do to one request, and when.

use crate::{Dialect, Reply};
use core::time::Duration;
use http::StatusCode;

/// The fate of one request in the simulation. Requests consume faults in the order they are
/// sent; once the list runs out, every request is delivered with the default latency.
///
/// ```
/// use core::time::Duration;
/// use sets3lock_mock::Fault;
/// // Lost on the way back: the server applies the request 5 ms after it was sent, the
/// // client never hears of it.
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
    /// The server answers 409 ConditionalRequestConflict without applying it. Azure and GCS
    /// have no such answer: there it is 503 `ServerBusy` (Azure) or 429 `rateLimitExceeded`
    /// (GCS), also not applied.
    Conflict {
        /// Round-trip time.
        latency: Duration,
    },
    /// The connection is refused: the request never reaches the server, and the client knows
    /// it (the driver answers `Ambiguity::NotSent`).
    Refused {
        /// How long the refusal takes.
        latency: Duration,
    },
    /// The server answers 503 SlowDown (Azure: 503 `ServerBusy`; GCS: 503 `backendError`),
    /// after applying the request or not.
    ServerError {
        /// Round-trip time.
        latency: Duration,
        /// Whether the request was applied before the error.
        applied: bool,
    },
    /// The store refuses the request for its rate, without applying it: GCS's
    /// `429 rateLimitExceeded` (one write per second per object), S3's `503 SlowDown`,
    /// Azure's `503 ServerBusy`. The client cannot tell it from a write that landed.
    ///
    /// ```
    /// use core::time::Duration;
    /// let f = sets3lock_mock::Fault::RateLimited { latency: Duration::from_millis(20) };
    /// assert!(!f.may_apply());
    /// ```
    RateLimited {
        /// Round-trip time.
        latency: Duration,
    },
}

impl Fault {
    /// Whether the server may apply the request.
    pub fn may_apply(&self) -> bool {
        match self {
            Fault::Deliver { .. } => true,
            Fault::Lose { applied_after } => applied_after.is_some(),
            Fault::Conflict { .. } | Fault::Refused { .. } | Fault::RateLimited { .. } => false,
            Fault::ServerError { applied, .. } => *applied,
        }
    }

    /// When a request sent at real time `sent`, by a client that gives up on a reply after
    /// `timeout`, is applied and answered. No reply ever comes later than the timeout: what
    /// would, is lost to slowness and the client times out instead.
    pub(crate) fn timing(self, sent: Duration, timeout: Duration) -> Timing {
        let at = |d: Duration| sent.saturating_add(d);
        let gives_up = at(timeout);
        match self {
            Fault::Deliver {
                to_server,
                to_client,
            } => {
                let round_trip = to_server.saturating_add(to_client);
                if round_trip <= timeout {
                    Timing::Answered {
                        applied: at(to_server),
                        answered: at(round_trip),
                    }
                } else {
                    Timing::TimedOut {
                        applied: Some(at(to_server)),
                        gives_up,
                    }
                }
            }
            Fault::Lose { applied_after } => Timing::TimedOut {
                applied: applied_after.map(at),
                gives_up,
            },
            Fault::Conflict { latency } => Timing::Failed {
                applied: None,
                error: Injected::Conflict,
                answered: at(latency.min(timeout)),
            },
            Fault::Refused { latency } => Timing::Failed {
                applied: None,
                error: Injected::Refused,
                answered: at(latency.min(timeout)),
            },
            Fault::RateLimited { latency } => Timing::Failed {
                applied: None,
                error: Injected::RateLimited,
                answered: at(latency.min(timeout)),
            },
            Fault::ServerError { latency, applied } => {
                // Applied, if at all, halfway through the round trip.
                let half = latency.min(timeout) / 2;
                Timing::Failed {
                    applied: applied.then(|| at(half)),
                    error: Injected::SlowDown,
                    answered: at(half * 2),
                }
            }
        }
    }
}

/// When the server applies one request and what its client hears, in real time. Each variant
/// answers the request exactly once (the driver contract): with the server's reply, with an
/// error, or with the client's own timeout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Timing {
    /// The server applies it at `applied`; its reply reaches the client at `answered`.
    Answered {
        applied: Duration,
        answered: Duration,
    },
    /// The server applies it at `applied`, if at all, and answers `error` at `answered`.
    Failed {
        applied: Option<Duration>,
        error: Injected,
        answered: Duration,
    },
    /// No reply: the client gives up at `gives_up`. The server applies it at `applied`, if
    /// at all, possibly after that.
    TimedOut {
        applied: Option<Duration>,
        gives_up: Duration,
    },
}

impl Timing {
    /// When the server applies the request, if it ever does.
    pub(crate) fn applied(self) -> Option<Duration> {
        match self {
            Timing::Answered { applied, .. } => Some(applied),
            Timing::Failed { applied, .. } | Timing::TimedOut { applied, .. } => applied,
        }
    }
}

/// An error the server answers instead of the outcome of the request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Injected {
    /// 409 ConditionalRequestConflict.
    Conflict,
    /// 503 SlowDown.
    SlowDown,
    /// No connection: nothing was sent.
    Refused,
    /// Too many requests: not applied.
    RateLimited,
}

impl Injected {
    /// What the client hears, for a request of `kind`: the reply as the store of `dialect`
    /// sends it, classified, or for a refused connection what a driver answers for a request
    /// it could not send.
    pub(crate) fn response(
        self,
        kind: sets3lock_proto::IntentKind,
        dialect: Dialect,
    ) -> sets3lock_proto::Response {
        let busy = StatusCode::SERVICE_UNAVAILABLE;
        let reply = match (self, dialect) {
            (Injected::Conflict, Dialect::S3) => {
                Reply::error(StatusCode::CONFLICT, "ConditionalRequestConflict")
            }
            (Injected::SlowDown | Injected::RateLimited, Dialect::S3) => {
                Reply::error(busy, "SlowDown")
            }
            (Injected::Conflict | Injected::SlowDown | Injected::RateLimited, Dialect::Azure) => {
                Reply::azure_error(busy, "ServerBusy")
            }
            (Injected::Conflict | Injected::RateLimited, _) => {
                Reply::gcs_error(StatusCode::TOO_MANY_REQUESTS, "rateLimitExceeded")
            }
            (Injected::SlowDown, _) => Reply::gcs_error(busy, "backendError"),
            (Injected::Refused, _) => {
                return sets3lock_proto::Response::Ambiguous(sets3lock_proto::Ambiguity::NotSent {
                    detail: "connection refused".into(),
                })
            }
        };
        reply.classify(kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIMEOUT: Duration = Duration::from_secs(2);
    const SENT: Duration = Duration::from_secs(100);

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn at(n: u64) -> Duration {
        SENT + ms(n)
    }

    #[test]
    fn a_delivered_request_is_applied_on_arrival_and_answered_a_return_trip_later() {
        let f = Fault::Deliver {
            to_server: ms(30),
            to_client: ms(70),
        };
        assert_eq!(
            f.timing(SENT, TIMEOUT),
            Timing::Answered {
                applied: at(30),
                answered: at(100),
            }
        );
    }

    #[test]
    fn a_reply_due_exactly_at_the_timeout_still_arrives() {
        let f = Fault::Deliver {
            to_server: ms(1500),
            to_client: ms(500),
        };
        assert_eq!(
            f.timing(SENT, TIMEOUT),
            Timing::Answered {
                applied: at(1500),
                answered: at(2000),
            }
        );
    }

    #[test]
    fn a_reply_due_after_the_timeout_is_lost_but_the_request_still_lands() {
        let f = Fault::Deliver {
            to_server: ms(1500),
            to_client: ms(501),
        };
        assert_eq!(
            f.timing(SENT, TIMEOUT),
            Timing::TimedOut {
                applied: Some(at(1500)),
                gives_up: at(2000),
            }
        );
        // Even a request that arrives after the client gave up is applied.
        let late = Fault::Deliver {
            to_server: ms(3000),
            to_client: ms(5),
        };
        assert_eq!(late.timing(SENT, TIMEOUT).applied(), Some(at(3000)));
    }

    #[test]
    fn a_lost_request_times_out_and_lands_when_the_fault_says() {
        let never = Fault::Lose {
            applied_after: None,
        };
        assert_eq!(
            never.timing(SENT, TIMEOUT),
            Timing::TimedOut {
                applied: None,
                gives_up: at(2000),
            }
        );
        let after = Fault::Lose {
            applied_after: Some(ms(5000)),
        };
        assert_eq!(
            after.timing(SENT, TIMEOUT),
            Timing::TimedOut {
                applied: Some(at(5000)),
                gives_up: at(2000),
            }
        );
    }

    #[test]
    fn a_conflict_is_not_applied_and_answers_within_the_timeout() {
        let quick = Fault::Conflict { latency: ms(40) };
        assert_eq!(
            quick.timing(SENT, TIMEOUT),
            Timing::Failed {
                applied: None,
                error: Injected::Conflict,
                answered: at(40),
            }
        );
        let slow = Fault::Conflict { latency: ms(9000) };
        assert_eq!(
            slow.timing(SENT, TIMEOUT),
            Timing::Failed {
                applied: None,
                error: Injected::Conflict,
                answered: at(2000),
            }
        );
    }

    #[test]
    fn a_server_error_applies_halfway_and_answers_at_the_end_of_the_round_trip() {
        let applied = Fault::ServerError {
            latency: ms(80),
            applied: true,
        };
        assert_eq!(
            applied.timing(SENT, TIMEOUT),
            Timing::Failed {
                applied: Some(at(40)),
                error: Injected::SlowDown,
                answered: at(80),
            }
        );
        let refused = Fault::ServerError {
            latency: ms(80),
            applied: false,
        };
        assert_eq!(
            refused.timing(SENT, TIMEOUT),
            Timing::Failed {
                applied: None,
                error: Injected::SlowDown,
                answered: at(80),
            }
        );
        // Capped by the timeout, and never answered before it was applied (odd nanoseconds
        // round both halves down).
        let odd = Fault::ServerError {
            latency: Duration::from_nanos(3),
            applied: true,
        };
        assert_eq!(
            odd.timing(SENT, TIMEOUT),
            Timing::Failed {
                applied: Some(SENT + Duration::from_nanos(1)),
                error: Injected::SlowDown,
                answered: SENT + Duration::from_nanos(2),
            }
        );
        let slow = Fault::ServerError {
            latency: ms(9000),
            applied: true,
        };
        assert_eq!(slow.timing(SENT, TIMEOUT).applied(), Some(at(1000)));
    }

    #[test]
    fn every_fault_answers_by_the_timeout_after_it_is_applied_and_applies_only_if_it_may() {
        let d = [0, 1, 999, 1000, 1999, 2000, 2001, 6000].map(ms);
        let mut faults = Vec::new();
        for a in d {
            faults.push(Fault::Conflict { latency: a });
            faults.push(Fault::Lose {
                applied_after: Some(a),
            });
            faults.push(Fault::Lose {
                applied_after: None,
            });
            for applied in [false, true] {
                faults.push(Fault::ServerError {
                    latency: a,
                    applied,
                });
            }
            for b in d {
                faults.push(Fault::Deliver {
                    to_server: a,
                    to_client: b,
                });
            }
        }
        for f in faults {
            let t = f.timing(SENT, TIMEOUT);
            assert_eq!(t.applied().is_some(), f.may_apply(), "{f:?}: {t:?}");
            match t {
                Timing::Answered { applied, answered }
                | Timing::Failed {
                    applied: Some(applied),
                    answered,
                    ..
                } => {
                    assert!(SENT <= applied && applied <= answered, "{f:?}: {t:?}");
                    assert!(answered <= SENT + TIMEOUT, "{f:?}: {t:?}");
                }
                Timing::Failed { answered, .. } => {
                    assert!(
                        SENT <= answered && answered <= SENT + TIMEOUT,
                        "{f:?}: {t:?}"
                    )
                }
                Timing::TimedOut { gives_up, .. } => assert_eq!(gives_up, SENT + TIMEOUT),
            }
        }
    }

    #[test]
    fn times_past_the_end_of_time_saturate_instead_of_panicking() {
        let f = Fault::Deliver {
            to_server: Duration::MAX,
            to_client: Duration::MAX,
        };
        assert_eq!(
            f.timing(SENT, TIMEOUT),
            Timing::TimedOut {
                applied: Some(Duration::MAX),
                gives_up: at(2000),
            }
        );
    }
}
