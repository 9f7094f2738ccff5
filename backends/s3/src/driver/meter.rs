//! One lock's instruments (feature `metrics`, names in [`crate::metrics`]): the driver tells
//! its meter what it sends, what comes back and what the core says, and the meter keeps the
//! little state the instruments need (when the acquisition or the hold began, whether a write's
//! reply was lost). Without the feature the meter is empty and every call does nothing.

#[cfg(feature = "metrics")]
pub(crate) use on::{changed_hands, request, Meter};

#[cfg(not(feature = "metrics"))]
pub(crate) use off::{changed_hands, request, Meter};

#[cfg(not(feature = "metrics"))]
mod off {
    use core::time::Duration;
    use sets3lock::{Event, Request, Response};

    /// Nothing to measure without the feature.
    pub(crate) struct Meter;

    impl Meter {
        pub(crate) fn new(_lock: &str, _fenced: bool, _acquiring: bool) -> Meter {
            Meter
        }
        pub(crate) fn sending(&mut self, _request: &Request, _lease_left: Option<Duration>) {}
        pub(crate) fn received(&mut self, _request: &Request, _reply: &Response, _took: Duration) {}
        pub(crate) fn event(&mut self, _event: &Event) {}
    }

    pub(crate) fn request(_lock: &str, _request: &Request, _reply: &Response, _took: Duration) {}

    pub(crate) fn changed_hands(_lock: &str) {}
}

#[cfg(feature = "metrics")]
mod on {
    use crate::metrics as m;
    use core::time::Duration;
    use metrics::{counter, gauge, histogram, Label};
    use sets3lock::{
        Event, LostReason, NotAcquired, Purpose, ReleaseOutcome, Request, Response, Setback,
    };
    use std::time::Instant;

    /// One lock's instruments and what they need to remember.
    pub(crate) struct Meter {
        /// `lock` and `mode`.
        labels: [Label; 2],
        /// While acquiring: since when, and whether another holder was seen.
        acquiring: Option<(Instant, bool)>,
        /// While held: since when.
        held: Option<Instant>,
        /// A write's reply was lost (it may have landed): the next read-back settles it.
        unanswered_write: bool,
        /// The last renewal that did not get through got no answer at all.
        renewals_unanswered: bool,
    }

    impl Meter {
        /// The meter of lock `lock` (the `lock` label); `acquiring` when the driver starts by
        /// acquiring (an adoption of a handle is not an acquisition).
        pub(crate) fn new(lock: &str, fenced: bool, acquiring: bool) -> Meter {
            let mode = if fenced { "fenced" } else { "presence" };
            Meter {
                labels: [
                    Label::new("lock", lock.to_owned()),
                    Label::new("mode", mode),
                ],
                acquiring: acquiring.then(|| (Instant::now(), false)),
                held: None,
                unanswered_write: false,
                renewals_unanswered: false,
            }
        }

        fn lock_label(&self) -> Label {
            self.labels[0].clone()
        }

        fn with(&self, name: &'static str, value: &'static str) -> Vec<Label> {
            let mut labels = self.labels.to_vec();
            labels.push(Label::new(name, value));
            labels
        }

        /// A request is about to go out; for a renewal, `lease_left` is the validity left.
        pub(crate) fn sending(&mut self, request: &Request, lease_left: Option<Duration>) {
            if request.purpose == Purpose::Renew {
                if let Some(left) = lease_left {
                    histogram!(m::RENEWAL_LEASE_LEFT, self.labels.to_vec())
                        .record(left.as_secs_f64());
                }
            }
        }

        /// `request` was answered with `reply` after `took`.
        pub(crate) fn received(&mut self, request: &Request, reply: &Response, took: Duration) {
            let method = request.intent.method();
            count_request(self.lock_label(), method, reply, took);
            if request.purpose == Purpose::Renew {
                histogram!(m::RENEWAL_DURATION, self.labels.to_vec()).record(took.as_secs_f64());
            }
            match reply {
                Response::Ambiguous(a) if method != "GET" && a.may_have_landed() => {
                    self.unanswered_write = true;
                }
                Response::Object { .. } | Response::Absent
                    if method == "GET" && self.unanswered_write =>
                {
                    self.unanswered_write = false;
                    counter!(m::LOST_REPLIES_RECOVERED, self.labels.to_vec()).increment(1);
                }
                _ => {}
            }
        }

        /// The core said `event`.
        pub(crate) fn event(&mut self, event: &Event) {
            match event {
                Event::Contended { .. } => {
                    if let Some((_, contended)) = &mut self.acquiring {
                        *contended = true;
                    }
                }
                Event::Acquired { token, .. } => {
                    self.acquired("acquired");
                    self.held = Some(Instant::now());
                    gauge!(m::LOCKS_HELD, self.labels.to_vec()).increment(1.0);
                    if let Some(token) = token {
                        #[allow(clippy::cast_precision_loss)] // tokens stay far below 2^53
                        gauge!(m::FENCING_TOKEN, vec![self.lock_label()]).set(*token as f64);
                    }
                }
                Event::NotAcquired { reason } => self.acquired(match reason {
                    NotAcquired::Busy { .. } | NotAcquired::InUse { .. } => "busy",
                    NotAcquired::TimedOut { .. } => "timed_out",
                    NotAcquired::Ended { .. } => "ended",
                }),
                Event::Cancelled => self.acquired("cancelled"),
                Event::Renewed { .. } => {
                    self.renewals_unanswered = false;
                    counter!(m::RENEWALS, self.with("result", "ok")).increment(1);
                }
                Event::RenewalDelayed { setback } => {
                    self.renewals_unanswered = matches!(setback, Setback::Ambiguous(_));
                    counter!(m::RENEWALS, self.with("result", "delayed")).increment(1);
                }
                Event::Lost { reason } => {
                    let why = match reason {
                        LostReason::Deleted => "deleted",
                        _ => "taken_over",
                    };
                    counter!(m::LOSSES, self.with("reason", why)).increment(1);
                    self.ended();
                }
                Event::Expired => {
                    let why = if self.renewals_unanswered {
                        "unreachable"
                    } else {
                        "expired"
                    };
                    counter!(m::LOSSES, self.with("reason", why)).increment(1);
                    self.ended();
                }
                Event::Released { outcome } => {
                    counter!(m::RELEASES, self.with("outcome", released(*outcome))).increment(1);
                    self.ended();
                }
                Event::Failed { .. } if self.acquiring.is_some() => self.acquired("error"),
                Event::Failed { .. } if self.held.is_some() => {
                    counter!(m::RELEASES, self.with("outcome", "failed")).increment(1);
                    self.ended();
                }
                _ => {}
            }
        }

        /// The acquisition under way, if any, ended with `outcome`.
        fn acquired(&mut self, outcome: &'static str) {
            if let Some((since, seen)) = self.acquiring.take() {
                // Refused or timed out: someone held it, whether or not a wait saw them.
                let contended = seen || matches!(outcome, "busy" | "timed_out");
                let mut labels = self.with("outcome", outcome);
                labels.push(Label::new(
                    "contended",
                    if contended { "true" } else { "false" },
                ));
                histogram!(m::ACQUIRE_DURATION, labels).record(since.elapsed().as_secs_f64());
            }
        }

        /// The hold, if any, is over in this process.
        fn ended(&mut self) {
            if let Some(since) = self.held.take() {
                gauge!(m::LOCKS_HELD, self.labels.to_vec()).decrement(1.0);
                histogram!(m::HOLD_DURATION, self.labels.to_vec())
                    .record(since.elapsed().as_secs_f64());
            }
        }
    }

    impl Drop for Meter {
        /// A driver that stops while its meter counts a hold (a detach that wrote nothing)
        /// ends the hold here, so the gauge never counts a lock nobody holds.
        fn drop(&mut self) {
            self.ended();
        }
    }

    /// A store request of lock `lock` (a watcher's: no [`Meter`]) was answered.
    pub(crate) fn request(lock: &str, request: &Request, reply: &Response, took: Duration) {
        let lock = Label::new("lock", lock.to_owned());
        count_request(lock, request.intent.method(), reply, took);
    }

    fn count_request(lock: Label, method: &'static str, reply: &Response, took: Duration) {
        let labels = vec![
            lock.clone(),
            Label::new("method", method),
            Label::new("result", result(reply)),
        ];
        counter!(m::STORE_REQUESTS, labels).increment(1);
        let labels = vec![lock, Label::new("method", method)];
        histogram!(m::STORE_REQUEST_DURATION, labels).record(took.as_secs_f64());
    }

    /// A watcher of lock `lock` saw it change hands (or go free, or go stale).
    pub(crate) fn changed_hands(lock: &str) {
        counter!(m::HOLDER_CHANGES, vec![Label::new("lock", lock.to_owned())]).increment(1);
    }

    /// The `result` label of a reply.
    fn result(reply: &Response) -> &'static str {
        match reply {
            Response::Written { .. } => "written",
            Response::Deleted => "deleted",
            Response::Object { .. } => "object",
            Response::NotModified => "not_modified",
            Response::Exists => "exists",
            Response::Mismatch => "mismatch",
            Response::Absent => "absent",
            Response::Conflict { .. } => "conflict",
            Response::Ambiguous(_) => "ambiguous",
            Response::Refused(_) => "refused",
        }
    }

    /// The `outcome` label of a release.
    fn released(outcome: ReleaseOutcome) -> &'static str {
        match outcome {
            ReleaseOutcome::Deleted => "deleted",
            ReleaseOutcome::Freed => "freed",
            ReleaseOutcome::Resting => "resting",
            ReleaseOutcome::Parked => "parked",
            ReleaseOutcome::TakenOver => "taken_over",
            ReleaseOutcome::AlreadyGone => "already_gone",
            ReleaseOutcome::HeldElsewhere => "held_elsewhere",
            ReleaseOutcome::Overdue => "overdue",
            _ => "other",
        }
    }
}
