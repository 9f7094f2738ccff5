//! One acquisition's identity and the writes it has made: a fresh owner id, a sequence number
//! that makes every body (so every ETag) unique, and the writes whose outcome is unknown.

use crate::{Config, Holder, Instant, OwnerId, Record};
use bytes::Bytes;

/// A write of ours: the sequence number in its body and when it was sent. Validity is always
/// dated from a write's send time, never from when its reply came.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Write {
    pub(super) seq: u64,
    pub(super) sent: Instant,
}

/// The most unresolved writes remembered; beyond that the oldest are forgotten, and a write
/// of ours found later is conservatively dated from the start of the acquisition.
const MAX_UNRESOLVED: usize = 32;

/// The identity and write history of one acquisition, carried from phase to phase.
#[derive(Clone, Debug)]
pub(super) struct Session {
    pub(super) owner: OwnerId,
    /// The last sequence number used.
    seq: u64,
    pub(super) started: Instant,
    started_unix_ms: u64,
    /// Writes that got no definite answer: they may still land.
    unresolved: Vec<Write>,
}

impl Session {
    pub(super) fn new(owner: OwnerId, started: Instant, started_unix_ms: u64) -> Session {
        Session {
            owner,
            seq: 0,
            started,
            started_unix_ms,
            unresolved: Vec::new(),
        }
    }

    /// When write `seq` was sent. A write older than the remembered ones is dated from the
    /// start of the acquisition: earlier than it really was, so its validity ends sooner.
    pub(super) fn sent_of(&self, seq: u64) -> Instant {
        self.unresolved
            .iter()
            .find(|w| w.seq == seq)
            .map_or(self.started, |w| w.sent)
    }

    /// Remembers a write whose outcome is unknown: it may land later.
    pub(super) fn remember(&mut self, w: Write) {
        if self.unresolved.len() == MAX_UNRESOLVED {
            self.unresolved.remove(0);
        }
        self.unresolved.push(w);
    }

    /// Whether some write of ours may still land.
    pub(super) fn has_unresolved(&self) -> bool {
        !self.unresolved.is_empty()
    }

    /// Write `seq` is the object now: it and every earlier write are settled (an earlier one
    /// landing late would fail its condition against the current ETag).
    pub(super) fn settle_through(&mut self, seq: u64) {
        self.unresolved.retain(|w| w.seq > seq);
    }

    /// Forgets every unresolved write: the caller has just confirmed the latest state.
    pub(super) fn settle_all(&mut self) {
        self.unresolved.clear();
    }

    /// The next write of this session: a new sequence number, so a new body (and a new ETag).
    pub(super) fn next_write(&mut self, cfg: &Config, now: Instant) -> (Write, Bytes) {
        self.seq += 1;
        let elapsed = now.saturating_duration_since(self.started).as_millis();
        let written_unix_ms = self
            .started_unix_ms
            .saturating_add(u64::try_from(elapsed).unwrap_or(u64::MAX));
        let body = self.record(cfg, self.seq, written_unix_ms).encode();
        let write = Write {
            seq: self.seq,
            sent: now,
        };
        (write, body)
    }

    /// The record of our write `seq`, as others read it.
    pub(super) fn record(&self, cfg: &Config, seq: u64, written_unix_ms: u64) -> Record {
        Record {
            owner: self.owner,
            seq,
            lease: cfg.lease,
            host: cfg.host.clone(),
            pid: cfg.pid,
            acquired_unix_ms: self.started_unix_ms,
            written_unix_ms,
        }
    }

    /// The record of our own write at the start of the session (how `won` describes a write
    /// of ours that landed too late to be valid).
    pub(super) fn own_holder(&self, cfg: &Config, seq: u64) -> Holder {
        Holder::Sets3lock(self.record(cfg, seq, self.started_unix_ms))
    }

    /// The sequence number of ours that `holder` carries, if the record is ours.
    pub(super) fn is_ours(&self, holder: &Holder) -> Option<u64> {
        match holder {
            Holder::Sets3lock(r) if r.owner == self.owner => Some(r.seq),
            _ => None,
        }
    }
}
