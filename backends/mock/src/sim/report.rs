//! What a simulation saw.

use super::Violation;
use core::time::Duration;
use sets3lock_proto::{Event, Purpose};

/// What a simulation saw: the violations, and a trace to explain them.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Broken properties, in order (at most 64: the run stops there).
    pub violations: Vec<Violation>,
    /// Every event each process's core emitted: real time, process, event.
    pub events: Vec<(Duration, usize, Event)>,
    /// Every request sent: real time, process, purpose.
    pub requests: Vec<(Duration, usize, Purpose)>,
    /// A semaphore's decisions and which slot each event and request was on: real time,
    /// process, what.
    pub notes: Vec<(Duration, usize, String)>,
    /// A semaphore: the most processes that held a valid slot at one instant.
    pub most_inside: usize,
    /// Real time at the end.
    pub end: Duration,
    /// Writes to the fenced resource (fenced mode): accepted, refused for a stale token.
    pub resource_writes: (usize, usize),
    /// Every grant that landed (an acquisition's write of a new owner's live record, whether
    /// or not its process learned of it): real time, process, owner id.
    pub grants: Vec<(Duration, usize, sets3lock_proto::OwnerId)>,
    /// How many times, checked after each happening, two processes of one hold (a handle
    /// continued twice) both claimed it.
    pub shared_claims: usize,
    /// How each adoption of a handle ended: real time, process, what it was for, whether the
    /// hold had already ended when it began, and its final event.
    pub adoptions: Vec<(Duration, usize, sets3lock_proto::Resume, bool, Event)>,
    /// Holds that lost a renewal (no answer until the driver gave up) and were renewed after
    /// it, every other request of theirs quick: the losses the request-time bound rode out.
    pub ridden_out: usize,
    /// Each core's tape, when [`SimConfig::record`](super::SimConfig::record) asked for them.
    pub tapes: Vec<super::Tape>,
}

impl Report {
    /// The run as a timeline, one line per request sent and per event, for people.
    pub fn timeline(&self) -> String {
        let mut lines: Vec<(Duration, usize, String)> = self
            .events
            .iter()
            .map(|(t, p, e)| (*t, *p, format!("{e:?}")))
            .chain(
                self.requests
                    .iter()
                    .map(|(t, p, purpose)| (*t, *p, format!("sends {purpose}"))),
            )
            .chain(self.notes.iter().cloned())
            .collect();
        lines.sort_by_key(|(t, _, _)| *t);
        lines
            .into_iter()
            .map(|(t, p, what)| format!("{:>10.3}s process {p}: {what}\n", t.as_secs_f64()))
            .collect()
    }

    /// How many events match `f`.
    pub fn count(&self, f: impl Fn(&Event) -> bool) -> usize {
        self.events.iter().filter(|(_, _, e)| f(e)).count()
    }
}
