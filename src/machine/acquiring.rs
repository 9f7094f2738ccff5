//! Acquiring: creating the object, observing the holder, taking over a stale lock, and
//! recovering our own writes whose replies were lost.

use super::*;

impl Lock {
    pub(super) fn on_acquiring(&mut self, mut a: Acquiring, p: Pending, r: Response, now: Instant) {
        let write = p.write;
        if !matches!(r, Response::Ambiguous(_) | Response::Conflict { .. }) {
            // The endpoint answered: setbacks so far were not a broken endpoint.
            a.retries = 0;
        }
        match (p.kind, r) {
            (_, Response::Refused(error)) => {
                // A refused write was not applied, but earlier unanswered ones may still land:
                // end_acquisition cleans those up.
                self.events.push_back(Event::Failed { error });
                self.end_acquisition(a.s);
            }
            (_, Response::Written { etag }) => {
                let write = write.unwrap_or(Write {
                    seq: a.s.seq,
                    sent: a.s.started,
                });
                let took_over = a
                    .observed
                    .as_ref()
                    .filter(|o| p.purpose == Purpose::Takeover && !o.own)
                    .map(|o| o.holder.clone());
                self.won(a, etag, write, took_over, now);
            }
            (IntentKind::PutIfNoneMatch, Response::Exists)
            | (IntentKind::PutIfMatch, Response::Mismatch) => {
                a.next = Some((now, Action::Observe));
                self.phase = Phase::Acquiring(a);
            }
            (IntentKind::PutIfMatch, Response::Absent) | (IntentKind::Get, Response::Absent) => {
                self.retry_or(a, Action::Create, now, true);
            }
            (_, Response::Conflict { code }) => {
                a.last_setback = Some(Setback::Conflict { code }.to_string());
                let action = if p.kind == IntentKind::PutIfMatch {
                    Action::Takeover
                } else {
                    Action::Create
                };
                self.retry_or(a, action, now, false);
            }
            (IntentKind::Get, Response::Object { etag, body }) => {
                self.on_observation(a, etag, Holder::decode(&body), now);
            }
            (IntentKind::Get, Response::NotModified) => match a.observed.clone() {
                Some(o) => self.on_observation(a, o.etag, o.holder, now),
                None => self.retry_or(a, Action::Observe, now, false),
            },
            (_, r) => {
                // Ambiguous (or a reply that does not fit): a write may have landed.
                if let Response::Ambiguous(why) = r {
                    a.last_setback = Some(format!("{} got {why}", p.kind));
                }
                if let Some(w) = write {
                    a.s.remember(w);
                }
                self.retry_or(a, Action::Observe, now, false);
            }
        }
    }

    /// Schedules `action` after a retry pause (or at once), unless a try-once acquisition has
    /// spent its budget.
    /// Schedules `action`: at once after a definitive reply (the object was absent, or our
    /// own write expired), or after a retry pause after a setback (409, 5xx, lost reply).
    /// Setbacks in a row past the limit mean a broken endpoint (unreachable, or failing every
    /// request): waiting longer will not help. A try-once acquisition also stops when the lock
    /// keeps changing hands under it.
    pub(super) fn retry_or(
        &mut self,
        mut a: Acquiring,
        action: Action,
        now: Instant,
        at_once: bool,
    ) {
        let exhausted = if at_once {
            a.rounds += 1;
            a.wait == Wait::No && a.rounds > self.cfg.retry_limit
        } else {
            a.retries += 1;
            a.retries > self.cfg.retry_limit
        };
        if exhausted {
            self.events.push_back(Event::Failed {
                error: Error::GaveUp {
                    attempts: a.retries.max(a.rounds),
                    last: a
                        .last_setback
                        .take()
                        .unwrap_or_else(|| "the lock kept changing hands".into()),
                },
            });
            return self.end_acquisition(a.s);
        }
        let at = if at_once {
            now
        } else {
            now + self.cfg.retry.draw(a.retries - 1, &mut self.rng)
        };
        a.next = Some((at, action));
        self.phase = Phase::Acquiring(a);
    }

    pub(super) fn on_observation(
        &mut self,
        mut a: Acquiring,
        etag: ETag,
        holder: Holder,
        now: Instant,
    ) {
        if let Some(seq) = a.s.is_ours(&holder) {
            // A write of ours whose reply we did not get has landed.
            let write = Write {
                seq,
                sent: a.s.sent_of(seq),
            };
            return self.won(a, etag, write, None, now);
        }
        let changed = a.observed.as_ref().is_none_or(|o| o.etag != etag);
        if changed {
            let new_holder = a
                .observed
                .as_ref()
                .is_none_or(|o| !same_holder(&o.holder, &holder));
            let observed = Observed {
                etag: etag.clone(),
                holder: holder.clone(),
                first_seen: now,
                own: false,
            };
            let stale_at = self.stale_at(&observed);
            a.observed = Some(observed);
            if new_holder && a.wait != Wait::No {
                self.events.push_back(Event::Contended {
                    holder: holder.clone(),
                    etag: etag.clone(),
                    stale_at,
                });
            }
        }
        if a.wait == Wait::No {
            self.events.push_back(Event::NotAcquired {
                reason: NotAcquired::Busy { holder, etag },
            });
            return self.end_acquisition(a.s);
        }
        let stale_at = a.observed.as_ref().and_then(|o| self.stale_at(o));
        if stale_at.is_some_and(|t| t <= now) {
            a.next = Some((now, Action::Takeover));
        } else {
            let mut at = now + self.cfg.poll.draw(a.polls, &mut self.rng);
            a.polls = a.polls.saturating_add(1);
            if let Some(t) = stale_at {
                at = at.min(t);
            }
            if let Some(d) = a.wait.deadline() {
                at = at.min(d);
            }
            a.next = Some((at, Action::Observe));
        }
        self.phase = Phase::Acquiring(a);
    }

    /// When an unchanged observation becomes stale: a full lease, by the holder's own record
    /// (or the configured lease for foreign records), after we first saw that ETag.
    pub(super) fn stale_at(&self, o: &Observed) -> Option<Instant> {
        let lease = o.holder.lease().or(self.cfg.foreign_lease)?;
        (!lease.is_zero()).then(|| o.first_seen + lease)
    }

    pub(super) fn won(
        &mut self,
        mut a: Acquiring,
        etag: ETag,
        write: Write,
        took_over: Option<Holder>,
        now: Instant,
    ) {
        let sent = write.sent;
        let valid_until = (!self.cfg.lease.is_zero()).then(|| sent + self.cfg.validity());
        if valid_until.is_some_and(|v| v <= now) {
            // Our write landed, but so long ago that it is no longer valid: replace it. The
            // observation is our own record, so that reading it again leads back here.
            let holder = Holder::Sets3lock(Record {
                owner: a.s.owner,
                seq: write.seq,
                lease: self.cfg.lease,
                host: self.cfg.host.clone(),
                pid: self.cfg.pid,
                acquired_unix_ms: a.s.started_unix_ms,
                written_unix_ms: a.s.started_unix_ms,
            });
            a.observed = Some(Observed {
                etag,
                holder,
                first_seen: now,
                own: true,
            });
            return self.retry_or(a, Action::Takeover, now, true);
        }
        a.s.unresolved.clear();
        self.events.push_back(Event::Acquired {
            owner: a.s.owner,
            etag: etag.clone(),
            valid_until,
            took_over,
        });
        let next =
            (!self.cfg.lease.is_zero()).then(|| (sent + self.cfg.renew_interval(), Action::Renew));
        self.phase = Phase::Held(Held {
            s: a.s,
            etag,
            valid_until,
            next,
            retries: 0,
        });
    }

    pub(super) fn end_acquisition(&mut self, s: Session) {
        self.forget_pending_read();
        let write_pending = self.pending.is_some();
        if s.unresolved.is_empty() && !write_pending {
            self.phase = Phase::Idle;
        } else {
            self.phase = Phase::Cleanup(Cleanup {
                owner: s.owner,
                etags: Vec::new(),
                resolve: !s.unresolved.is_empty(),
                next: None,
                retries: 0,
            });
        }
    }
}

/// Whether two observations are the same holder (an ETag change may only be a renewal).
fn same_holder(a: &Holder, b: &Holder) -> bool {
    match (a, b) {
        (Holder::Sets3lock(x), Holder::Sets3lock(y)) => x.owner == y.owner,
        _ => a == b,
    }
}
