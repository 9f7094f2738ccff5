//! `sets3lock watch --metrics-textfile`: each watched lock's state as gauges.

use super::unix_now;
use std::time::Duration;
/// `sets3lock watch --metrics-textfile`: one watched lock's gauges, so an operator can alert
/// on a lock held far longer than usual, stale, or unreadable, without taking part in it.
pub(crate) struct Watched {
    lock: String,
    /// How long the holder had been seen at the last report, and when that was.
    seen: Option<(Duration, std::time::Instant)>,
    /// When the lock last changed hands (on this watcher's clock).
    changed: Option<std::time::Instant>,
}

const WATCH_UP: &str = "sets3lock_watch_up";
const WATCH_HELD: &str = "sets3lock_watch_held";
const WATCH_STALE: &str = "sets3lock_watch_stale";
const WATCH_AGE: &str = "sets3lock_watch_holder_age_seconds";
const WATCH_TOKEN: &str = "sets3lock_watch_token";
const WATCH_CHANGED_AT: &str = "sets3lock_watch_last_change_timestamp_seconds";
const WATCH_SINCE_CHANGE: &str = "sets3lock_watch_since_change_seconds";

/// Gives the watcher's gauges their help texts (after [`install`]).
pub(crate) fn describe_watch() {
    metrics::describe_gauge!(WATCH_UP, "1 if the last read of the lock got an answer.");
    metrics::describe_gauge!(WATCH_HELD, "1 if the lock is held (stale included).");
    metrics::describe_gauge!(
        WATCH_STALE,
        "1 if the holder's record has not changed for a full lease: it stopped renewing."
    );
    metrics::describe_gauge!(
        WATCH_AGE,
        "How long this watcher has seen the current holder, in seconds (0 when free)."
    );
    metrics::describe_gauge!(WATCH_TOKEN, "The fencing token of the lock's record.");
    metrics::describe_gauge!(
        WATCH_CHANGED_AT,
        "When the lock last changed hands, went free or went stale (Unix time)."
    );
    metrics::describe_gauge!(
        WATCH_SINCE_CHANGE,
        "Seconds since the lock last changed hands, went free or went stale."
    );
}

impl Watched {
    pub(crate) fn new(url: &sets3lock::proto::LockUrl) -> Watched {
        Watched {
            lock: url.to_string(),
            seen: None,
            changed: None,
        }
    }

    fn gauge(&self, name: &'static str, value: f64) {
        metrics::gauge!(name, "lock" => self.lock.clone()).set(value);
    }

    /// The watcher reported `event`, having seen the holder for `seen`.
    pub(crate) fn saw(&mut self, event: &sets3lock::proto::WatchEvent, seen: Option<Duration>) {
        use sets3lock::proto::{Sighting, WatchEvent};
        let now = std::time::Instant::now();
        match event {
            WatchEvent::Changed(s) => {
                self.gauge(WATCH_UP, 1.0);
                let held = matches!(s, Sighting::Held { .. } | Sighting::Stale { .. });
                self.gauge(WATCH_HELD, f64::from(u8::from(held)));
                let stale = matches!(s, Sighting::Stale { .. });
                self.gauge(WATCH_STALE, f64::from(u8::from(stale)));
                if let Some(f) = s.holder().and_then(sets3lock::proto::Holder::fence) {
                    #[allow(clippy::cast_precision_loss)] // tokens stay far below 2^53
                    self.gauge(WATCH_TOKEN, f.token as f64);
                }
                self.changed = Some(now);
                self.gauge(WATCH_CHANGED_AT, unix_now());
                self.seen = seen.map(|d| (d, now));
            }
            WatchEvent::Unreachable { .. } => self.gauge(WATCH_UP, 0.0),
            WatchEvent::Reachable => self.gauge(WATCH_UP, 1.0),
            _ => {}
        }
        self.tick();
    }

    /// The watch of this lock failed for good (a refusal: no such bucket, access denied).
    pub(crate) fn given_up(&mut self) {
        self.gauge(WATCH_UP, 0.0);
    }

    /// Moves the ages on to now.
    pub(crate) fn tick(&mut self) {
        let age = self
            .seen
            .map_or(0.0, |(d, at)| (d + at.elapsed()).as_secs_f64());
        self.gauge(WATCH_AGE, age);
        if let Some(at) = self.changed {
            self.gauge(WATCH_SINCE_CHANGE, at.elapsed().as_secs_f64());
        }
    }
}
