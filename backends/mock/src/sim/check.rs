//! The properties of docs/PROTOCOL.md ("Properties"), as pure functions of what the
//! simulation saw, and the [`Violation`] each one reports.

use crate::Object;
use core::time::Duration;
use sets3lock::{ETag, Holder, OwnerId, Purpose, Request, Wait};
use std::collections::BTreeSet;

/// A broken property, with when and who.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Violation {
    /// Property 1: two processes considered themselves holding a valid lock at once.
    TwoHolders {
        /// When, in real time.
        at: Duration,
        /// Which two (indices into the plans).
        processes: (usize, usize),
    },
    /// Property 2: a renewal, release or cleanup replaced or removed another owner's object.
    ForeignWrite {
        /// When, in real time.
        at: Duration,
        /// Which process (an index into the plans).
        process: usize,
        /// What the request was for.
        purpose: Purpose,
    },
    /// Property 3: a process reported "acquired" while its write was not the current object.
    AcquiredWithoutOwnWrite {
        /// When, in real time.
        at: Duration,
        /// Which process (an index into the plans).
        process: usize,
    },
    /// Liveness: a process's plan did not finish by the horizon (it waited forever, or on its
    /// own lock), or a round that waits forever ended without the lock.
    Stuck {
        /// Which process (an index into the plans).
        process: usize,
        /// The round it was in.
        round: usize,
    },
}

/// Property 1, given which processes claim a valid lock at real time `at` (in process order).
/// Checked after every event: claims begin only at events, so two claims that overlap in time
/// overlap at the later one's start.
pub(super) fn two_holders(
    at: Duration,
    claims: impl IntoIterator<Item = bool>,
) -> Option<Violation> {
    let mut holders = claims
        .into_iter()
        .enumerate()
        .filter_map(|(i, claims)| claims.then_some(i));
    let first = holders.next()?;
    let second = holders.next()?;
    Some(Violation::TwoHolders {
        at,
        processes: (first, second),
    })
}

/// Property 2, on what the server actually did with `request` from process `process`: the
/// object was `before` and is now `after`. When a renewal, release or cleanup changed or
/// removed it, the object it replaced must have been written by the same process (`owners`:
/// every owner id its core has written); for a renewal, by the very owner renewing.
pub(super) fn foreign_write(
    at: Duration,
    process: usize,
    request: &Request,
    owners: &BTreeSet<OwnerId>,
    before: Option<&Object>,
    after: Option<&Object>,
) -> Option<Violation> {
    let before = before?;
    if Some(before) == after {
        return None;
    }
    let replaced = Holder::decode(&before.body).owner();
    let allowed = match request.purpose {
        Purpose::Acquire | Purpose::Takeover | Purpose::Observe | Purpose::Resolve => true,
        Purpose::Renew => {
            let me = request
                .intent
                .body()
                .and_then(|b| Holder::decode(b).owner());
            replaced.is_some() && replaced == me
        }
        Purpose::Release | Purpose::Cleanup => replaced.is_some_and(|o| owners.contains(&o)),
        // A purpose this check does not know yet may not replace anything.
        _ => false,
    };
    (!allowed).then_some(Violation::ForeignWrite {
        at,
        process,
        purpose: request.purpose,
    })
}

/// Property 3, when process `process` reports "acquired" with `etag` as `owner`: the current
/// object must be that write of that owner.
pub(super) fn acquired_without_own_write(
    at: Duration,
    process: usize,
    current: Option<&Object>,
    etag: &ETag,
    owner: OwnerId,
) -> Option<Violation> {
    let ours =
        current.is_some_and(|o| &o.etag == etag && Holder::decode(&o.body).owner() == Some(owner));
    (!ours).then_some(Violation::AcquiredWithoutOwnWrite { at, process })
}

/// Liveness, when a round ends: a round that waits forever ends only with the lock.
pub(super) fn waited_in_vain(
    process: usize,
    round: usize,
    wait: Wait,
    acquired: bool,
) -> Option<Violation> {
    (wait == Wait::Forever && !acquired).then_some(Violation::Stuck { process, round })
}

/// Liveness, at the end of the run: every plan is done (or its process crashed).
pub(super) fn unfinished(process: usize, round: usize, done: bool) -> Option<Violation> {
    (!done).then_some(Violation::Stuck { process, round })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::etag_of;
    use bytes::Bytes;
    use sets3lock::{Intent, Record, RequestId};

    const AT: Duration = Duration::from_secs(1);

    fn owner(n: u128) -> OwnerId {
        OwnerId::from_u128(n)
    }

    fn body(of: u128) -> Bytes {
        Record {
            owner: owner(of),
            seq: 1,
            lease: Duration::from_secs(10),
            host: "sim".into(),
            pid: 1,
            acquired_unix_ms: 0,
            written_unix_ms: 0,
        }
        .encode()
    }

    fn object(of: u128) -> Object {
        let body = body(of);
        Object {
            etag: etag_of(&body),
            body,
        }
    }

    fn request(purpose: Purpose, intent: Intent) -> Request {
        Request {
            id: RequestId::from_u64(1),
            intent,
            purpose,
        }
    }

    fn delete(of: &Object) -> Intent {
        Intent::DeleteIfMatch {
            etag: of.etag.clone(),
        }
    }

    #[test]
    fn two_holders_names_the_first_two_claimants() {
        assert_eq!(two_holders(AT, [false, true, false]), None);
        assert_eq!(
            two_holders(AT, [false, true, false, true, true]),
            Some(Violation::TwoHolders {
                at: AT,
                processes: (1, 3),
            })
        );
    }

    #[test]
    fn a_release_may_remove_only_what_its_process_wrote() {
        let theirs = object(2);
        let mine = BTreeSet::from([owner(1)]);
        let release = request(Purpose::Release, delete(&theirs));
        assert_eq!(
            foreign_write(AT, 0, &release, &mine, Some(&theirs), None),
            Some(Violation::ForeignWrite {
                at: AT,
                process: 0,
                purpose: Purpose::Release,
            })
        );
        let own = object(1);
        let cleanup = request(Purpose::Cleanup, delete(&own));
        assert_eq!(
            foreign_write(AT, 0, &cleanup, &mine, Some(&own), None),
            None
        );
    }

    #[test]
    fn a_renewal_may_replace_only_its_own_owners_object() {
        let renew = request(
            Purpose::Renew,
            Intent::PutIfMatch {
                etag: object(1).etag,
                body: body(1),
            },
        );
        let mine = BTreeSet::from([owner(1), owner(2)]);
        let after = object(1);
        assert_eq!(
            foreign_write(AT, 0, &renew, &mine, Some(&object(1)), Some(&after)),
            None
        );
        // Even an earlier owner id of the same process is another owner to a renewal.
        assert!(foreign_write(AT, 0, &renew, &mine, Some(&object(2)), Some(&after)).is_some());
    }

    #[test]
    fn what_changed_nothing_or_was_no_renewal_release_or_cleanup_is_no_foreign_write() {
        let theirs = object(2);
        let none = BTreeSet::new();
        let release = request(Purpose::Release, delete(&theirs));
        assert_eq!(
            foreign_write(AT, 0, &release, &none, Some(&theirs), Some(&theirs)),
            None
        );
        assert_eq!(foreign_write(AT, 0, &release, &none, None, None), None);
        let takeover = request(
            Purpose::Takeover,
            Intent::PutIfMatch {
                etag: theirs.etag.clone(),
                body: body(1),
            },
        );
        assert_eq!(
            foreign_write(AT, 0, &takeover, &none, Some(&theirs), Some(&object(1))),
            None
        );
    }

    #[test]
    fn acquired_means_the_current_object_is_that_write_of_that_owner() {
        let mine = object(1);
        let check = |current: Option<&Object>, etag: &ETag, who| {
            acquired_without_own_write(AT, 3, current, etag, owner(who))
        };
        assert_eq!(check(Some(&mine), &mine.etag, 1), None);
        let broken = Some(Violation::AcquiredWithoutOwnWrite { at: AT, process: 3 });
        assert_eq!(check(None, &mine.etag, 1), broken);
        assert_eq!(check(Some(&mine), &object(2).etag, 1), broken);
        assert_eq!(check(Some(&mine), &mine.etag, 2), broken);
    }

    #[test]
    fn only_a_round_that_waits_forever_must_end_with_the_lock() {
        let stuck = Some(Violation::Stuck {
            process: 1,
            round: 2,
        });
        assert_eq!(waited_in_vain(1, 2, Wait::Forever, false), stuck);
        assert_eq!(waited_in_vain(1, 2, Wait::Forever, true), None);
        assert_eq!(waited_in_vain(1, 2, Wait::No, false), None);
        assert_eq!(
            waited_in_vain(1, 2, Wait::Timeout(Duration::from_secs(5)), false),
            None
        );
        assert_eq!(unfinished(1, 2, false), stuck);
        assert_eq!(unfinished(1, 2, true), None);
    }
}
