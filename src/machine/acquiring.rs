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
            (IntentKind::PutIfNoneMatch, Response::Exists) => {
                a.next = Some((now, Action::Observe));
                self.phase = Phase::Acquiring(a);
            }
            (IntentKind::PutIfMatch, Response::Mismatch) => {
                // Normally the holder renewed: the read will show a new ETag.
                a.refused = p.etag;
                a.next = Some((now, Action::Observe));
                self.phase = Phase::Acquiring(a);
            }
            (IntentKind::PutIfMatch, Response::Absent) | (IntentKind::Get, Response::Absent) => {
                self.retry_or(a, Action::Create, now, Pace::Progress);
            }
            (_, Response::Conflict { code }) => {
                a.last_setback = Some(Box::new(Setback::Conflict { code }));
                let action = if p.kind == IntentKind::PutIfMatch {
                    Action::Takeover
                } else {
                    Action::Create
                };
                self.retry_or(a, action, now, Pace::Conflict);
            }
            (IntentKind::Get, Response::Object { etag, body }) => {
                self.on_observation(a, etag, Holder::decode(&body), now);
            }
            (IntentKind::Get, Response::NotModified) => match a.observed.clone() {
                Some(o) => self.on_observation(a, o.etag, o.holder, now),
                None => self.retry_or(a, Action::Observe, now, Pace::Setback),
            },
            (_, r) => {
                // Ambiguous (or a reply that does not fit): a write may have landed.
                if let Response::Ambiguous(why) = r {
                    a.last_setback = Some(Box::new(Setback::Ambiguous(why)));
                }
                if let Some(w) = write {
                    a.s.remember(w);
                }
                self.retry_or(a, Action::Observe, now, Pace::Setback);
            }
        }
    }

    /// Schedules `action`, paced by why it is needed, or gives up:
    /// - progress (the object was absent, or our own write expired): at once, then with
    ///   backoff if it keeps happening; a try-once acquisition stops when the lock keeps
    ///   changing hands under it;
    /// - a setback (5xx, lost reply): after a retry pause; past the limit in a row without an
    ///   answer, the endpoint is broken (unreachable, or failing every request);
    /// - a 409 conflict: after a retry pause; a sign of contention on a healthy endpoint, so it
    ///   only bounds try-once acquisitions;
    /// - an incoherent store (it refused `If-Match` on the ETag it reports): after a retry
    ///   pause, and past the limit the acquisition fails rather than spin.
    pub(super) fn retry_or(&mut self, mut a: Acquiring, action: Action, now: Instant, pace: Pace) {
        let limit = self.cfg.retry_limit;
        let (exhausted, attempt) = match pace {
            Pace::Progress => {
                a.rounds += 1;
                (a.try_once && a.rounds > limit, a.rounds)
            }
            Pace::Setback => {
                a.retries += 1;
                (a.retries > limit, a.retries)
            }
            Pace::Conflict => {
                a.conflicts += 1;
                (a.try_once && a.conflicts > limit, a.conflicts)
            }
            Pace::Incoherent => {
                a.incoherent += 1;
                (a.incoherent > limit, a.incoherent)
            }
        };
        if exhausted {
            self.events.push_back(Event::Failed {
                error: Error::GaveUp {
                    attempts: attempt,
                    last: a
                        .last_setback
                        .take()
                        .unwrap_or_else(|| Box::new(Setback::LostRace)),
                },
            });
            return self.end_acquisition(a.s);
        }
        // Two rounds of progress in a row go at once; more are paced like retries.
        let at = match pace {
            Pace::Progress if attempt <= 2 => now,
            Pace::Progress => now + self.cfg.retry.draw(attempt - 3, &mut self.rng),
            _ => now + self.cfg.retry.draw(attempt - 1, &mut self.rng),
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
        if a.refused.take().as_ref() == Some(&etag) {
            // Our takeover's If-Match was refused, yet the store still reports that ETag:
            // weak ETags, or a proxy that rewrites them. Retry a few times, then give up.
            a.last_setback = Some(Box::new(Setback::Incoherent { etag: etag.clone() }));
            return self.retry_or(a, Action::Takeover, now, Pace::Incoherent);
        }
        if let Some(seq) = a.s.is_ours(&holder) {
            // A write of ours whose reply we did not get has landed.
            let write = Write {
                seq,
                sent: a.s.sent_of(seq),
            };
            return self.won(a, etag, write, None, now);
        }
        // Someone else holds it: the lock is not slipping through our fingers.
        a.rounds = 0;
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
            if new_holder && !a.try_once {
                self.events.push_back(Event::Contended {
                    holder: holder.clone(),
                    etag: etag.clone(),
                    stale_at,
                });
            }
        }
        if a.try_once {
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
            if let Some(d) = a.deadline {
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
            return self.retry_or(a, Action::Takeover, now, Pace::Progress);
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
