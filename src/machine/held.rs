//! Holding: renewing the lease, and noticing when the lock is lost.

use super::*;

impl Lock {
    pub(super) fn on_held(&mut self, mut h: Held, p: Pending, r: Response, now: Instant) {
        match (p.kind, r) {
            (IntentKind::PutIfMatch, Response::Written { etag }) => {
                let sent = p.write.map_or(now, |w| w.sent);
                let seq = p.write.map_or(h.s.seq, |w| w.seq);
                self.confirm(&mut h, etag, sent, seq);
            }
            (IntentKind::PutIfMatch, Response::Absent) if !h.s.unresolved.is_empty() => {
                h.next = Some((now, Action::Observe));
            }
            (IntentKind::PutIfMatch, Response::Mismatch) => {
                // Read before concluding: a write of ours may have landed late, and some
                // servers (SeaweedFS) say 412 for a deleted object too. The read tells which,
                // and who holds it now.
                h.next = Some((now, Action::Observe));
            }
            (IntentKind::PutIfMatch, Response::Absent) => {
                return self.lose(LostReason::Deleted);
            }
            (IntentKind::PutIfMatch, r) => {
                let setback = match r {
                    Response::Conflict { code } => Setback::Conflict { code },
                    Response::Refused(e) => Setback::Refused(e),
                    Response::Ambiguous(a) => Setback::Ambiguous(a),
                    _ => Setback::Ambiguous(Ambiguity::Timeout),
                };
                let action = match (&setback, p.write) {
                    (Setback::Ambiguous(_), Some(w)) => {
                        h.s.remember(w);
                        Action::Observe
                    }
                    _ => Action::Renew,
                };
                self.events.push_back(Event::RenewalDelayed { setback });
                h.next = Some((self.backoff(&mut h.retries, now, h.valid_until), action));
            }
            (IntentKind::Get, Response::Object { etag, body }) => {
                let holder = Holder::decode(&body);
                match h.s.is_ours(&holder) {
                    Some(_) if etag == h.etag => {
                        // Our last confirmed write is still there: the renewal did not land.
                        h.next = Some((
                            self.backoff(&mut h.retries, now, h.valid_until),
                            Action::Renew,
                        ));
                    }
                    Some(seq) => {
                        let sent = h.s.sent_of(seq);
                        self.confirm(&mut h, etag, sent, seq);
                    }
                    None => {
                        return self.lose(LostReason::Overwritten {
                            holder: Some(holder),
                        })
                    }
                }
            }
            (IntentKind::Get, Response::Absent) => return self.lose(LostReason::Deleted),
            (_, _) => {
                h.next = Some((
                    self.backoff(&mut h.retries, now, h.valid_until),
                    Action::Observe,
                ));
            }
        }
        self.phase = Phase::Held(h);
    }

    pub(super) fn confirm(&mut self, h: &mut Held, etag: ETag, sent: Instant, seq: u64) {
        h.etag = etag.clone();
        h.retries = 0;
        h.s.unresolved.retain(|w| w.seq > seq);
        if !self.cfg.lease.is_zero() {
            let valid = sent + self.cfg.validity();
            h.valid_until = Some(h.valid_until.map_or(valid, |v| v.max(valid)));
            h.next = Some((sent + self.cfg.renew_interval(), Action::Renew));
        }
        self.events.push_back(Event::Renewed {
            etag,
            valid_until: h.valid_until,
        });
    }

    pub(super) fn lose(&mut self, reason: LostReason) {
        self.events.push_back(Event::Lost { reason });
        self.phase = Phase::Idle;
    }

    /// A retry pause that never runs past `limit`.
    pub(super) fn backoff(
        &mut self,
        retries: &mut u32,
        now: Instant,
        limit: Option<Instant>,
    ) -> Instant {
        let at = now + self.cfg.retry.draw(*retries, &mut self.rng);
        *retries = retries.saturating_add(1);
        limit.map_or(at, |l| at.min(l))
    }
}
