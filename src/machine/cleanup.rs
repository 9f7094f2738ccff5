//! Cleaning up after an expiry or a cancellation: deleting writes of ours that nobody
//! holds, so that others need not wait out their lease.

use super::*;

impl Lock {
    pub(super) fn on_cleanup(&mut self, mut c: Cleanup, p: Pending, resp: Response, now: Instant) {
        match (p.kind, resp) {
            (_, Response::Written { etag }) => c.etags.push(etag),
            (IntentKind::Get, Response::Object { etag, body }) => {
                c.resolve = false;
                if Holder::decode(&body).owner() == Some(c.owner) && !c.etags.contains(&etag) {
                    c.etags.push(etag);
                }
            }
            (IntentKind::Get, Response::Absent | Response::NotModified) => c.resolve = false,
            (
                IntentKind::DeleteIfMatch,
                Response::Deleted | Response::Absent | Response::Mismatch,
            ) => {
                c.etags.retain(|e| Some(e) != p.etag.as_ref());
            }
            (kind, r) => {
                if kind.is_write() && kind != IntentKind::DeleteIfMatch {
                    // A write of ours was refused or conflicted: not applied. If ambiguous, it
                    // may have landed: find out.
                    if matches!(r, Response::Ambiguous(_)) {
                        c.resolve = true;
                    }
                } else {
                    c.retries += 1;
                    if c.retries > self.cfg.retry_limit {
                        // Leave it: a leftover object expires after its lease like a crash.
                        return;
                    }
                    let at = now + self.cfg.retry.draw(c.retries - 1, &mut self.rng);
                    let action = match kind {
                        IntentKind::DeleteIfMatch => match &p.etag {
                            Some(e) => Action::Delete(e.clone()),
                            None => Action::Observe,
                        },
                        _ => Action::Observe,
                    };
                    c.next = Some((at, action));
                }
            }
        }
        self.phase = Phase::Cleanup(c);
    }
}
