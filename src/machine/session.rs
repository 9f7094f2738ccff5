//! One acquisition's identity and the writes it has made: a fresh owner id, a sequence number
//! that makes every body (so every ETag) unique, and the writes whose outcome is unknown.

use super::context::Context;
use crate::{Config, Fence, Holder, Instant, LockState, OwnerId, Record, TerraformInfo};
use bytes::Bytes;

/// A write of ours: the sequence number in its body, when it was sent, and the fence it
/// writes (fenced mode). Validity is always dated from a write's send time, never from when
/// its reply came.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Write {
    pub(super) seq: u64,
    pub(super) sent: Instant,
    pub(super) fence: Option<Fence>,
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
    /// The wall-clock time at `started`: the base of each record's `written_ms`.
    started_unix_ms: u64,
    /// When the hold was first acquired, by the acquirer's wall clock (for people): the same
    /// as `started_unix_ms` unless the hold was adopted from a handle.
    acquired_unix_ms: u64,
    /// Which process of the hold writes, when it was adopted: written into every record, so
    /// that two processes continuing one hold tell their writes apart.
    writer: Option<u64>,
    /// Writes that got no definite answer: they may still land.
    unresolved: Vec<Write>,
    /// Until when (on our clock) another process may still be running under this hold: one
    /// whose record we adopted without its being parked, so whose last write may have given
    /// it a lease we cannot see the end of. Our release must not free the lock before.
    others_until: Option<Instant>,
    /// The value an adopted hold's record proclaimed, kept when we were given none.
    adopted_value: Option<String>,
    /// An adopted hold's Terraform fields, as its record had them (or did not): a hold keeps
    /// the format, and the fields, it was taken with. `None` for a hold acquired here, which
    /// writes what the configuration says.
    adopted_terraform: Option<Option<Box<TerraformInfo>>>,
}

impl Session {
    pub(super) fn new(owner: OwnerId, started: Instant, started_unix_ms: u64) -> Session {
        Session {
            owner,
            seq: 0,
            started,
            started_unix_ms,
            acquired_unix_ms: started_unix_ms,
            writer: None,
            unresolved: Vec::new(),
            others_until: None,
            adopted_value: None,
            adopted_terraform: None,
        }
    }

    /// The session of a process that continues the hold `owner` (adopted from a handle), as
    /// writer `writer`. Its sequence numbers and acquisition time come from the record it
    /// reads ([`Session::adopt_record`]).
    pub(super) fn adopted(
        owner: OwnerId,
        writer: u64,
        started: Instant,
        started_unix_ms: u64,
    ) -> Session {
        Session {
            writer: Some(writer),
            ..Session::new(owner, started, started_unix_ms)
        }
    }

    /// Takes over the numbering of the hold's record `r`: later writes of ours number above
    /// every write of the hold seen so far, so no body (and no ETag) comes back, and keep the
    /// hold's acquisition time.
    ///
    /// Unless `r` is parked, the process that wrote it may still be running under the hold:
    /// its validity ends at most a lease after it sent that write, which was before our read
    /// was answered (`now`), so by `now` plus the lease stretched by the drift bound on our
    /// clock (see [`Session::others_may_run`]).
    pub(super) fn adopt_record(&mut self, cx: &mut Context, r: &Record, now: Instant) {
        self.follow(cx, r);
        let cfg = &cx.cfg;
        self.acquired_unix_ms = r.acquired_unix_ms;
        self.adopted_value.clone_from(&r.value);
        self.adopted_terraform = Some(r.terraform.clone());
        if !r.parked && !r.lease.is_zero() {
            let until = now + cfg.stretch(r.lease);
            self.others_until = Some(self.others_until.map_or(until, |u| u.max(until)));
        }
    }

    /// How much longer (on our clock, from `now`) another process may still be running under
    /// this hold, one that wrote a record we adopted: `None` when none can be.
    pub(super) fn others_may_run(&self, now: Instant) -> Option<core::time::Duration> {
        let left = self.others_until?.saturating_duration_since(now);
        (!left.is_zero()).then_some(left)
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
    /// `fence` is what a fenced record says (`None`: a presence-mode record).
    pub(super) fn next_write(
        &mut self,
        cfg: &Config,
        now: Instant,
        fence: Option<Fence>,
    ) -> (Write, Bytes) {
        self.seq += 1;
        let body = self
            .record(cfg, self.seq, self.written_unix_ms(now), fence)
            .encode();
        let write = Write {
            seq: self.seq,
            sent: now,
            fence,
        };
        (write, body)
    }

    /// The next write, of a resting record (`Config::hold_at_least`): this lease, marked
    /// `cooldown`, keeping the fence (fenced mode: still `held`, the same token).
    pub(super) fn next_rest_write(
        &mut self,
        cfg: &Config,
        now: Instant,
        lease: core::time::Duration,
        fence: Option<Fence>,
    ) -> (Write, Bytes) {
        self.next_marked_write(cfg, now, fence, |r| {
            r.lease = lease;
            r.cooldown = true;
        })
    }

    /// The next write, of a parked record ([`Record::parked`]): the hold stays, with its
    /// lease and fence, and says that nobody runs under it.
    pub(super) fn next_park_write(
        &mut self,
        cfg: &Config,
        now: Instant,
        fence: Option<Fence>,
    ) -> (Write, Bytes) {
        self.next_marked_write(cfg, now, fence, |r| r.parked = true)
    }

    /// The next write, of our record changed by `mark`.
    fn next_marked_write(
        &mut self,
        cfg: &Config,
        now: Instant,
        fence: Option<Fence>,
        mark: impl FnOnce(&mut Record),
    ) -> (Write, Bytes) {
        self.seq += 1;
        let mut record = self.record(cfg, self.seq, self.written_unix_ms(now), fence);
        mark(&mut record);
        let write = Write {
            seq: self.seq,
            sent: now,
            fence,
        };
        (write, record.encode())
    }

    fn written_unix_ms(&self, now: Instant) -> u64 {
        let elapsed = now.saturating_duration_since(self.started).as_millis();
        self.started_unix_ms
            .saturating_add(u64::try_from(elapsed).unwrap_or(u64::MAX))
    }

    /// The next write, of a `free` record with `token` (fenced mode's release and cleanup).
    pub(super) fn next_free_write(
        &mut self,
        cfg: &Config,
        now: Instant,
        token: u64,
    ) -> (Write, Bytes) {
        let free = Fence {
            state: LockState::Free,
            token,
        };
        self.next_write(cfg, now, Some(free))
    }

    /// The record of our write `seq`, as others read it.
    fn record(&self, cfg: &Config, seq: u64, written_unix_ms: u64, fence: Option<Fence>) -> Record {
        Record {
            owner: self.owner,
            seq,
            lease: cfg.lease,
            host: cfg.host.clone(),
            pid: cfg.pid,
            acquired_unix_ms: self.acquired_unix_ms,
            written_unix_ms,
            fence,
            value: cfg.value.clone().or_else(|| self.adopted_value.clone()),
            writer: self.writer,
            cooldown: false,
            parked: false,
            terraform: match &self.adopted_terraform {
                Some(kept) => kept.clone(),
                None => cfg
                    .terraform
                    .as_ref()
                    .map(|tf| Box::new(tf.info(self.owner, self.acquired_unix_ms, cfg.lease))),
            },
        }
    }

    /// The record of our own write `write` (how `won` describes a write of ours that landed
    /// too late to be valid).
    pub(super) fn own_holder(&self, cfg: &Config, write: Write) -> Holder {
        Holder::Sets3lock(self.record(cfg, write.seq, self.acquired_unix_ms, write.fence))
    }

    /// Our write that `holder` is, if it is one of ours that holds the lock (a `free` or
    /// resting record of ours is a finished release, not a hold). Ours means this hold's owner
    /// and this process's writer: another process continuing the same hold is not us.
    pub(super) fn is_ours(&self, holder: &Holder) -> Option<Write> {
        match holder {
            Holder::Sets3lock(r)
                if r.owner == self.owner
                    && r.writer == self.writer
                    && !r.cooldown
                    && !r.parked
                    && !holder.is_free() =>
            {
                Some(Write {
                    seq: r.seq,
                    sent: self.sent_of(r.seq),
                    fence: r.fence,
                })
            }
            _ => None,
        }
    }

    /// Whether `holder` is a resting record written by us: our release under
    /// `hold_at_least` landed.
    pub(super) fn rested_by_us(&self, holder: &Holder) -> bool {
        matches!(holder, Holder::Sets3lock(r)
            if r.owner == self.owner && r.writer == self.writer && r.cooldown)
    }

    /// Whether `holder` is a parked record written by us: our [detach](crate::Lock::detach)
    /// landed.
    pub(super) fn parked_by_us(&self, holder: &Holder) -> bool {
        matches!(holder, Holder::Sets3lock(r)
            if r.owner == self.owner && r.writer == self.writer && r.parked)
    }

    /// Whether `holder` is another process's record of this very hold (same owner, another
    /// writer): it continued the hold from its handle.
    pub(super) fn held_elsewhere(&self, holder: &Holder) -> bool {
        matches!(holder, Holder::Sets3lock(r)
            if r.owner == self.owner && r.writer != self.writer && !r.cooldown)
            && !holder.is_free()
    }

    /// Whether `holder` is another process's parked record of this very hold (its owner and
    /// its token, `token`): it detached since, so nobody runs under the hold.
    pub(super) fn parked_elsewhere(&self, holder: &Holder, token: Option<u64>) -> bool {
        matches!(holder, Holder::Sets3lock(r)
            if r.owner == self.owner
                && r.writer != self.writer
                && r.parked
                && !r.cooldown
                && r.fence.map(|f| f.token) == token)
            && !holder.is_free()
    }

    /// Numbers our next writes above record `r` of this hold (written by another process of
    /// it), and notes its fence (in `cx`): no body comes back.
    pub(super) fn follow(&mut self, cx: &mut Context, r: &Record) {
        self.seq = self.seq.max(r.seq);
        cx.saw(r.fence);
    }

    /// What another process of this very hold did when `holder` is its release: a resting
    /// record ([`ReleaseOutcome::Resting`](crate::ReleaseOutcome::Resting)) or a `free` one
    /// ([`ReleaseOutcome::Freed`](crate::ReleaseOutcome::Freed)), written from its handle.
    pub(super) fn ended_elsewhere(&self, holder: &Holder) -> Option<crate::ReleaseOutcome> {
        match holder {
            Holder::Sets3lock(r) if r.owner == self.owner && r.writer != self.writer => {
                if r.cooldown {
                    Some(crate::ReleaseOutcome::Resting)
                } else if holder.is_free() {
                    Some(crate::ReleaseOutcome::Freed)
                } else {
                    None
                }
            }
            _ => None,
        }
    }

    /// Whether `holder` is a `free` record written by us: our release (or cleanup) landed.
    pub(super) fn freed_by_us(&self, holder: &Holder) -> bool {
        matches!(holder, Holder::Sets3lock(r) if r.owner == self.owner && r.writer == self.writer)
            && holder.is_free()
    }
}
