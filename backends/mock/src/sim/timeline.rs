//! The simulation's future: what happens next, in real-time order.

use super::Tamper;
use crate::fault::Timing;
use core::cmp::Ordering;
use core::time::Duration;
use sets3lock_proto::{OwnerId, Request, RequestId, Response};
use std::collections::BinaryHeap;

/// Something that happens at a moment of real time.
pub(super) enum What {
    /// The server applies a request; `timing` says what its process hears after.
    Apply {
        process: usize,
        slot: usize,
        request: Request,
        timing: Timing,
    },
    /// A process gets the answer to a request: a reply, or its own timeout.
    Answer {
        process: usize,
        slot: usize,
        id: RequestId,
        response: Response,
    },
    /// A process's timer (the earliest of its cores') fires, unless it has been re-armed
    /// since (`gen`).
    Timer { process: usize, gen: u64 },
    /// A process takes the next step of its plan, unless rescheduled since (`gen`).
    Step { process: usize, gen: u64 },
    /// A holder writes to the fenced resource with its token.
    Act {
        process: usize,
        slot: usize,
        owner: OwnerId,
        token: u64,
    },
    /// Someone changes the bucket behind the processes' backs.
    Tamper(Tamper),
}

impl What {
    /// The process that must be alive and awake to see this happen; `None` for what happens at
    /// the server.
    pub(super) fn process(&self) -> Option<usize> {
        match self {
            What::Answer { process, .. }
            | What::Timer { process, .. }
            | What::Step { process, .. }
            | What::Act { process, .. } => Some(*process),
            What::Apply { .. } | What::Tamper(_) => None,
        }
    }
}

/// What is due, earliest first; what is due at the same moment, in the order it was queued,
/// so that a run is a function of its inputs alone.
#[derive(Default)]
pub(super) struct Timeline {
    queue: BinaryHeap<Entry>,
    seq: u64,
}

impl Timeline {
    pub(super) fn push(&mut self, at: Duration, what: What) {
        self.seq += 1;
        self.queue.push(Entry {
            at,
            seq: self.seq,
            what,
        });
    }

    pub(super) fn pop(&mut self) -> Option<(Duration, What)> {
        self.queue.pop().map(|e| (e.at, e.what))
    }
}

struct Entry {
    at: Duration,
    seq: u64,
    what: What,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Entry) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Entry) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    // Reversed: BinaryHeap is a max-heap, we want the earliest first.
    fn cmp(&self, other: &Entry) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(process: usize) -> What {
        What::Step { process, gen: 0 }
    }

    #[test]
    fn earliest_first_and_ties_in_the_order_queued() {
        let mut t = Timeline::default();
        let s = Duration::from_secs;
        t.push(s(2), step(0));
        t.push(s(1), step(1));
        t.push(s(2), step(2));
        t.push(s(1), step(3));
        let order: Vec<_> = std::iter::from_fn(|| t.pop())
            .map(|(at, what)| (at, what.process()))
            .collect();
        assert_eq!(
            order,
            [
                (s(1), Some(1)),
                (s(1), Some(3)),
                (s(2), Some(0)),
                (s(2), Some(2))
            ]
        );
    }
}
