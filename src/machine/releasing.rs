//! Releasing: the conditional delete, and telling deleted, taken over and already gone
//! apart.

use super::*;

impl Lock {
    pub(super) fn on_releasing(
        &mut self,
        mut r: Releasing,
        p: Pending,
        resp: Response,
        now: Instant,
    ) {
        let outcome = match (p.purpose, p.kind, resp) {
            // A renewal that was in flight when release was asked for.
            (Purpose::Renew, _, Response::Written { etag }) => {
                r.etag = etag;
                r.next = Some((now, Action::Release));
                None
            }
            (Purpose::Renew, _, Response::Ambiguous(_) | Response::Mismatch | Response::Absent) => {
                if let Some(w) = p.write {
                    r.s.remember(w);
                }
                r.next = Some((now, Action::Observe));
                None
            }
            (Purpose::Renew, _, _) => {
                r.next = Some((now, Action::Release));
                None
            }
            (_, IntentKind::DeleteIfMatch, Response::Deleted) => Some(ReleaseOutcome::Deleted),
            (_, IntentKind::DeleteIfMatch, Response::Absent) => Some(ReleaseOutcome::AlreadyGone),
            (_, IntentKind::DeleteIfMatch, Response::Mismatch) => {
                // Some servers say 412 for a missing key too: read to tell the cases apart.
                r.next = Some((now, Action::Observe));
                None
            }
            (_, _, Response::Refused(error)) => {
                self.events.push_back(Event::Failed { error });
                return;
            }
            (_, IntentKind::Get, Response::Object { etag, body }) => {
                let holder = Holder::decode(&body);
                if r.s.is_ours(&holder).is_some() {
                    // Ours (a renewal landed late, or the store refused a delete it should
                    // have accepted): delete that version, paced, a bounded number of times.
                    let incoherent = Setback::Incoherent { etag: etag.clone() };
                    r.etag = etag;
                    if !self.retry_release(&mut r, Action::Release, now, incoherent) {
                        return;
                    }
                    None
                } else if r.delete_unconfirmed && r.valid_until.is_none_or(|v| now < v) {
                    // Nobody can have taken over before our validity ended, so our delete
                    // landed and someone acquired the free lock since.
                    Some(ReleaseOutcome::Deleted)
                } else {
                    Some(ReleaseOutcome::TakenOver)
                }
            }
            (_, IntentKind::Get, Response::Absent) => Some(if r.delete_unconfirmed {
                ReleaseOutcome::Deleted
            } else {
                ReleaseOutcome::AlreadyGone
            }),
            (_, kind, other) => {
                // Conflict, ambiguity, or a reply that does not fit: read, then try again.
                if kind == IntentKind::DeleteIfMatch {
                    r.delete_unconfirmed = true;
                }
                let setback = match other {
                    Response::Conflict { code } => Setback::Conflict { code },
                    Response::Ambiguous(a) => Setback::Ambiguous(a),
                    other => Setback::Ambiguous(Ambiguity::Unexpected {
                        reply: other.name(),
                        request: kind,
                    }),
                };
                if !self.retry_release(&mut r, Action::Observe, now, setback) {
                    return;
                }
                None
            }
        };
        match outcome {
            Some(outcome) => self.events.push_back(Event::Released { outcome }),
            None => self.phase = Phase::Releasing(r),
        }
    }

    /// Schedules `action` after a retry pause (the first at once), or reports failure when the
    /// attempts run out. Returns whether the release goes on.
    fn retry_release(
        &mut self,
        r: &mut Releasing,
        action: Action,
        now: Instant,
        last: Setback,
    ) -> bool {
        r.retries += 1;
        if r.retries > self.cfg.retry_limit {
            self.events.push_back(Event::Failed {
                error: Error::GaveUp {
                    attempts: r.retries,
                    last: Box::new(last),
                },
            });
            return false;
        }
        let at = if r.retries == 1 {
            now
        } else {
            now + self.cfg.retry.draw(r.retries - 2, &mut self.rng)
        };
        r.next = Some((at, action));
        true
    }
}
