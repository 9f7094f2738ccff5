//! One lock's instruments (feature `metrics`, names in [`crate::metrics`]): the driver tells
//! its meter what it sends, what comes back and what the core says, and the meter keeps the
//! little state the instruments need (when the acquisition or the hold began, whether a write's
//! reply was lost). Without the feature the meter is empty and every call does nothing.

#[cfg(feature = "metrics")]
pub(crate) use on::{acquisition, changed_hands, request, Meter};

#[cfg(not(feature = "metrics"))]
pub(crate) use off::{acquisition, changed_hands, request, Meter};

#[cfg(not(feature = "metrics"))]
mod off {
    use core::time::Duration;
    use sets3lock_proto::{Event, Request, Response};

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

    pub(crate) fn acquisition(
        _lock: &str,
        _fenced: bool,
        _outcome: &'static str,
        _contended: bool,
        _took: Duration,
    ) {
    }
}

#[cfg(feature = "metrics")]
mod on {
    use crate::metrics as m;
    use core::time::Duration;
    use metrics::{counter, gauge, histogram, Label};
    use sets3lock_proto::{
        Ambiguity, Event, LostReason, NotAcquired, Purpose, ReleaseOutcome, Request, Response,
    };
    use std::time::Instant;

    /// The reasons a hold is lost: each series starts at 0, so that the first loss is an
    /// increase a rule can see.
    const LOSS_REASONS: [&str; 4] = ["taken_over", "deleted", "expired", "unreachable"];

    /// One lock's instruments and what they need to remember.
    pub(crate) struct Meter {
        lock: Label,
        /// `presence` or `fenced`: the configuration's, until a grant says (its token).
        mode: &'static str,
        /// While acquiring: since when, and whether another holder was seen.
        acquiring: Option<(Instant, bool)>,
        /// While held: since when.
        held: Option<Instant>,
        /// A write's reply was lost (it may have landed): the next read-back settles it.
        unanswered_write: bool,
        /// While held: a request was sent and not answered yet.
        awaiting: bool,
        /// While held: the last request got no answer at all (timeout, broken connection).
        unanswered: bool,
    }

    impl Meter {
        /// The meter of lock `lock` (the `lock` label); `acquiring` when the driver's
        /// acquisition is to be measured (not an adoption of a handle, nor a semaphore's slot,
        /// whose semaphore measures it once).
        pub(crate) fn new(lock: &str, fenced: bool, acquiring: bool) -> Meter {
            let meter = Meter {
                lock: Label::new("lock", lock.to_owned()),
                mode: mode(fenced),
                acquiring: acquiring.then(|| (Instant::now(), false)),
                held: None,
                unanswered_write: false,
                awaiting: false,
                unanswered: false,
            };
            for reason in LOSS_REASONS {
                counter!(m::LOSSES, meter.with("reason", reason)).increment(0);
            }
            meter
        }

        fn labels(&self) -> Vec<Label> {
            vec![self.lock.clone(), Label::new("mode", self.mode)]
        }

        fn with(&self, name: &'static str, value: &'static str) -> Vec<Label> {
            let mut labels = self.labels();
            labels.push(Label::new(name, value));
            labels
        }

        /// A request is about to go out; for a renewal, `lease_left` is the validity left.
        pub(crate) fn sending(&mut self, request: &Request, lease_left: Option<Duration>) {
            if self.held.is_some() {
                self.awaiting = true;
            }
            if request.purpose == Purpose::Renew {
                if let Some(left) = lease_left {
                    histogram!(m::RENEWAL_LEASE_LEFT, self.labels()).record(left.as_secs_f64());
                }
            }
        }

        /// `request` was answered with `reply` after `took`.
        pub(crate) fn received(&mut self, request: &Request, reply: &Response, took: Duration) {
            let method = request.intent.method();
            count_request(self.lock.clone(), method, reply, took);
            if request.purpose == Purpose::Renew {
                histogram!(m::RENEWAL_DURATION, self.labels()).record(took.as_secs_f64());
            }
            self.awaiting = false;
            self.unanswered = matches!(
                reply,
                Response::Ambiguous(
                    Ambiguity::Timeout | Ambiguity::Connection { .. } | Ambiguity::NotSent { .. }
                )
            );
            let write = method != "GET";
            match reply {
                // A write that may have landed unheard of: a read-back will settle it.
                Response::Ambiguous(a) if write && a.may_have_landed() => {
                    self.unanswered_write = true;
                }
                // The read-back answered: the lost reply is recovered.
                Response::Object { .. } | Response::Absent | Response::NotModified
                    if request.purpose == Purpose::Resolve && self.unanswered_write =>
                {
                    self.unanswered_write = false;
                    counter!(m::LOST_REPLIES_RECOVERED, self.labels()).increment(1);
                }
                // A definite answer to a write settles what came before it.
                Response::Ambiguous(_) => {}
                _ if write => self.unanswered_write = false,
                _ => {}
            }
        }

        /// The core said `event`.
        pub(crate) fn event(&mut self, event: &Event) {
            match event {
                Event::Contended { .. } => {
                    if let Some((_, contended)) = &mut self.acquiring {
                        if !std::mem::replace(contended, true) {
                            gauge!(m::LOCKS_WAITING, self.labels()).increment(1.0);
                        }
                    }
                }
                Event::Acquired {
                    token, took_over, ..
                } => {
                    if token.is_some() {
                        self.mode = "fenced";
                    }
                    self.acquired("acquired", took_over.is_some());
                    self.held = Some(Instant::now());
                    gauge!(m::LOCKS_HELD, self.labels()).increment(1.0);
                    if let Some(token) = token {
                        #[allow(clippy::cast_precision_loss)] // tokens stay far below 2^53
                        gauge!(m::FENCING_TOKEN, vec![self.lock.clone()]).set(*token as f64);
                    }
                }
                Event::NotAcquired { reason } => match reason {
                    NotAcquired::Busy { .. } | NotAcquired::InUse { .. } => {
                        self.acquired("busy", true);
                    }
                    NotAcquired::TimedOut { holder } => {
                        self.acquired("timed_out", holder.is_some());
                    }
                    _ => self.acquired("error", false),
                },
                Event::Cancelled => self.acquired("cancelled", false),
                Event::Renewed { .. } => {
                    counter!(m::RENEWALS, self.with("result", "ok")).increment(1);
                }
                Event::RenewalDelayed { .. } => {
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
                    // Cut off: a request still unanswered, or the last one got no answer.
                    let why = if self.awaiting || self.unanswered {
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
                Event::Failed { .. } if self.acquiring.is_some() => self.acquired("error", false),
                Event::Failed { .. } if self.held.is_some() => {
                    counter!(m::RELEASES, self.with("outcome", "failed")).increment(1);
                    self.ended();
                }
                _ => {}
            }
        }

        /// The acquisition under way, if any, ended with `outcome`; `contended` if another
        /// holder was in the way (besides a wait that saw one).
        fn acquired(&mut self, outcome: &'static str, contended: bool) {
            if let Some((since, seen)) = self.acquiring.take() {
                if seen {
                    gauge!(m::LOCKS_WAITING, self.labels()).decrement(1.0);
                }
                record(self.labels(), outcome, seen || contended, since.elapsed());
            }
        }

        /// The hold, if any, is over in this process.
        fn ended(&mut self) {
            if let Some(since) = self.held.take() {
                gauge!(m::LOCKS_HELD, self.labels()).decrement(1.0);
                histogram!(m::HOLD_DURATION, self.labels()).record(since.elapsed().as_secs_f64());
            }
        }
    }

    impl Drop for Meter {
        /// A driver that stops while its meter counts a hold (a detach that wrote nothing) or
        /// a wait ends them here, so the gauges never count what is over.
        fn drop(&mut self) {
            if let Some((_, true)) = self.acquiring.take() {
                gauge!(m::LOCKS_WAITING, self.labels()).decrement(1.0);
            }
            self.ended();
        }
    }

    fn mode(fenced: bool) -> &'static str {
        if fenced {
            "fenced"
        } else {
            "presence"
        }
    }

    fn record(mut labels: Vec<Label>, outcome: &'static str, contended: bool, took: Duration) {
        labels.push(Label::new("outcome", outcome));
        labels.push(Label::new(
            "contended",
            if contended { "true" } else { "false" },
        ));
        histogram!(m::ACQUIRE_DURATION, labels).record(took.as_secs_f64());
    }

    /// One acquisition measured outside a driver (a semaphore's, over its slots).
    pub(crate) fn acquisition(
        lock: &str,
        fenced: bool,
        outcome: &'static str,
        contended: bool,
        took: Duration,
    ) {
        let labels = vec![
            Label::new("lock", lock.to_owned()),
            Label::new("mode", mode(fenced)),
        ];
        record(labels, outcome, contended, took);
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
