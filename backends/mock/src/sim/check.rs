//! The properties of docs/PROTOCOL.md ("Properties"), as pure functions of what a run saw,
//! and the [`Violation`] each one reports. The simulator ([`Sim`](crate::Sim)) judges every
//! schedule with them, and so does any other harness that drives cores against a
//! [`MockS3`](crate::MockS3) (the repository's exhaustive exploration does), so that both
//! judge by one definition.
//!
//! ```
//! use core::time::Duration;
//! use sets3lock_mock::check;
//! // Processes 0 and 2 both claim the lock at 5 s:
//! let v = check::two_holders(Duration::from_secs(5), [true, false, true]);
//! assert_eq!(v, Some(sets3lock_mock::Violation::TwoHolders {
//!     at: Duration::from_secs(5), processes: (0, 2) }));
//! ```

use crate::Object;
use core::time::Duration;
use sets3lock_proto::{ETag, Holder, LockState, OwnerId, Purpose, Request, Response, Wait};
use std::collections::BTreeSet;

/// A broken property, with when and who.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Violation {
    /// Property 1: two processes of different holds (owner ids) considered themselves holding
    /// a valid lock at once. (Two processes continuing one hold from a handle may both, for up
    /// to a renewal: [`HeldWithoutRecord`](Violation::HeldWithoutRecord) and
    /// [`IgnoredAnotherWrite`](Violation::IgnoredAnotherWrite) judge them.)
    TwoHolders {
        /// When, in real time.
        at: Duration,
        /// Which two (indices into the plans).
        processes: (usize, usize),
    },
    /// A semaphore's property: more processes than it has slots considered themselves
    /// holding a valid slot at once.
    TooManyHolders {
        /// When, in real time.
        at: Duration,
        /// How many.
        holders: usize,
        /// How many slots the semaphore has.
        slots: usize,
    },
    /// A semaphore's process held a valid slot that was not the one it kept (a slot won late,
    /// or one left over after its round) for longer than a lease: a slot leaked.
    SlotKept {
        /// When, in real time.
        at: Duration,
        /// Which process.
        process: usize,
    },
    /// A semaphore's process went on trying for another slot after it had won one (its other
    /// waits must be cancelled: they would hold slots, and cost requests, for nothing).
    KeptWaiting {
        /// When, in real time.
        at: Duration,
        /// Which process.
        process: usize,
        /// The slot it kept trying.
        slot: usize,
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
    /// Fenced mode: a grant wrote a token not larger than an earlier grant's.
    TokenNotIncreasing {
        /// When, in real time.
        at: Duration,
        /// Which process (an index into the plans).
        process: usize,
        /// The token written.
        token: u64,
        /// The largest token granted before.
        previous: u64,
    },
    /// Fenced mode: a process sent a grant (an acquisition or a takeover writing a `held`
    /// fenced record) with a token at or below one it had seen on the key (in a record it
    /// read, or in a grant of its own), whatever the record it wrote over said: after the
    /// lock object is removed behind the clients' backs, tokens would go back.
    TokenAtOrBelowSeen {
        /// When, in real time.
        at: Duration,
        /// Which process (an index into the plans).
        process: usize,
        /// The token it sent.
        token: u64,
        /// The highest token it had seen.
        seen: u64,
    },
    /// Fenced mode: a renewal, release or cleanup wrote another token than the one of the
    /// record it replaced (its own grant's).
    TokenChanged {
        /// When, in real time.
        at: Duration,
        /// Which process (an index into the plans).
        process: usize,
        /// What the request was for.
        purpose: Purpose,
    },
    /// Fenced mode: a fenced object was deleted (the protocol never deletes one).
    FencedObjectDeleted {
        /// When, in real time.
        at: Duration,
        /// Which process (an index into the plans).
        process: usize,
        /// What the request was for.
        purpose: Purpose,
    },
    /// Fenced mode, at the resource: a write from an older grant was accepted after one from
    /// a newer grant (mutual exclusion at the resource, frozen holders included).
    StaleWriteAccepted {
        /// When, in real time.
        at: Duration,
        /// Which process wrote (an index into the plans).
        process: usize,
    },
    /// Availability: a hold whose renewals all got through in time (no fault on them, no long
    /// freeze, nobody touching the bucket) was reported lost or expired.
    SpuriousLoss {
        /// When, in real time.
        at: Duration,
        /// Which process (an index into the plans).
        process: usize,
    },
    /// Availability: an unimpeded hold (a lost renewal ridden out included) was renewed only
    /// after its stop point (`Config::stop_before` ahead of validity's end), when its user
    /// (the command) had given up on it and stopped its program.
    RenewedPastStopPoint {
        /// When, in real time.
        at: Duration,
        /// Which process (an index into the plans).
        process: usize,
    },
    /// Availability: the release of an unimpeded hold did not end with the object removed (or
    /// freed) within two requests.
    SlowOrFailedRelease {
        /// When, in real time.
        at: Duration,
        /// Which process (an index into the plans).
        process: usize,
        /// Requests the release sent.
        requests: u32,
    },
    /// A hold's validity reaches past a lease (less the drift bound) after the send of the
    /// process's latest write the server applied: validity was dated from a reply, or from
    /// something later than the write it stands on.
    ValidityNotFromSend {
        /// When, in real time.
        at: Duration,
        /// Which process (an index into the plans).
        process: usize,
    },
    /// A process considered itself holding a valid lock while the lock object was not a live
    /// record of its hold (its owner id and token, held, not free or resting): deleted,
    /// freed, rested or taken over behind a holder that had not learned of it. Among the
    /// processes of one hold that believe they hold it, the object is always the hold's (one
    /// of them wrote it, or one that has since let go).
    HeldWithoutRecord {
        /// When, in real time.
        at: Duration,
        /// Which process (an index into the plans).
        process: usize,
    },
    /// Property 3 at the writer's grain: an `Acquired` or `Renewed` named a version that this
    /// process, as the writer of this hold, did not write and the server did not apply (two
    /// processes continuing one hold must each stand on their own writes).
    NotOwnWrite {
        /// When, in real time.
        at: Duration,
        /// Which process (an index into the plans).
        process: usize,
    },
    /// A holder read the lock object, found a version it had not written (another process of
    /// the same hold has continued it since, or anyone else), and still considered itself
    /// holding: a process whose writer id is no longer the record's must learn that it lost
    /// the lock at its next renewal (the renewal's condition fails and the read that follows
    /// ends the hold).
    IgnoredAnotherWrite {
        /// When, in real time.
        at: Duration,
        /// Which process (an index into the plans).
        process: usize,
    },
    /// A handle whose hold had ended before it was used (the lock object was gone, another
    /// hold's, or the hold's own `free` or resting record) was continued: its adoption wrote,
    /// or ended otherwise than `NotAcquired::Ended` (or a failure).
    EndedHoldContinued {
        /// When, in real time.
        at: Duration,
        /// Which process (an index into the plans).
        process: usize,
    },
    /// A hold continued from a handle reported another token than its grant's.
    AdoptedTokenChanged {
        /// When, in real time.
        at: Duration,
        /// Which process (an index into the plans).
        process: usize,
        /// The token it reported.
        token: Option<u64>,
        /// The grant's.
        granted: Option<u64>,
    },
    /// The run handled more happenings than any schedule needs: some core keeps sending or
    /// firing timers without letting time move on.
    Spinning {
        /// When, in real time.
        at: Duration,
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

/// The most requests the release of an unimpeded hold may send: the delete (or the `free`
/// record), and one more for luck (a renewal in flight when the release was asked for was
/// sent before).
pub const RELEASE_REQUESTS: u32 = 2;

/// Whether `fault`, on a request of a hold with this `lease`, leaves the hold unimpeded:
/// delivered, with its reply back within the request timeout and within a quarter of the
/// lease (a renewal goes out every third of it).
pub fn unimpeding(fault: &crate::Fault, request_timeout: Duration, lease: Duration) -> bool {
    within(fault, request_timeout.min(lease / 4))
}

/// Whether `fault` leaves its request unanswered until the driver gives up (after `limit`),
/// and lands, if ever, before then: a lost renewal, whose read-back finds it or not.
pub fn lost_and_given_up(fault: &crate::Fault, limit: Duration) -> bool {
    match fault {
        crate::Fault::Lose { applied_after } => applied_after.is_none_or(|a| a < limit),
        crate::Fault::Deliver {
            to_server,
            to_client,
        } => to_server.saturating_add(*to_client) > limit && *to_server < limit,
        _ => false,
    }
}

/// Whether `fault` delivers its request and the reply within `round_trip`.
pub fn within(fault: &crate::Fault, round_trip: Duration) -> bool {
    matches!(fault, crate::Fault::Deliver { to_server, to_client }
        if to_server.saturating_add(*to_client) <= round_trip)
}

/// The round trip each request after a lost renewal may take for the hold to ride the loss
/// out (`None`: the hold leaves no room for it): docs/PROTOCOL.md ("How long a hold's request
/// waits"). The renewal, sent when `left` remained before the stop point (validity's end
/// without one), is given up after `limit`, the smallest of the request timeout, a renewal
/// interval and `left / 2`;
/// then, after a retry pause (the floor), a read-back goes out, and on its answer at once a
/// second renewal, which must be answered before the stop point (validity's end without
/// one):
///
/// `limit + floor + 2 × round trip < left`.
///
/// The round trips are real time, the rest the holder's clock: the budget is shrunk by the
/// drift bound (twice, for margin).
pub fn ride_out_budget(
    cfg: &sets3lock_proto::Config,
    left: Duration,
    request_timeout: Duration,
) -> Option<Duration> {
    // What docs/PROTOCOL.md promises a hold's request waits at most (worked out here again,
    // not asked of the core: a core that waits longer fails the checks).
    let limit = request_timeout.min(cfg.renew_interval()).min(left / 2);
    let spare = left.checked_sub(limit + cfg.retry.floor)?;
    let rho = f64::from(cfg.max_drift_ppm) / 1e6;
    let each = spare.mul_f64((1.0 - 2.0 * rho) / 2.0);
    (!each.is_zero()).then_some(each)
}

/// Availability, when process `p` reports a renewal at `now` (its clock), of a hold whose
/// stop point was `stop_at`: an unimpeded hold is renewed before it.
pub fn renewed_past_stop_point(
    at: Duration,
    process: usize,
    checked: bool,
    now: sets3lock_proto::Instant,
    stop_at: Option<sets3lock_proto::Instant>,
) -> Option<Violation> {
    let late = stop_at.is_some_and(|s| now > s);
    (checked && late).then_some(Violation::RenewedPastStopPoint { at, process })
}

/// Availability, when process `p` reports its hold lost or expired: only an impeded hold may
/// end that way.
pub fn spurious_loss(at: Duration, process: usize, unimpeded: bool) -> Option<Violation> {
    unimpeded.then_some(Violation::SpuriousLoss { at, process })
}

/// Availability, when process `p`'s release ends with `outcome` after `requests` requests:
/// an unimpeded hold's release removes (or frees, or rests) the object within `RELEASE_REQUESTS`.
pub fn slow_or_failed_release(
    at: Duration,
    process: usize,
    unimpeded: bool,
    outcome: Option<sets3lock_proto::ReleaseOutcome>,
    requests: u32,
) -> Option<Violation> {
    use sets3lock_proto::ReleaseOutcome::{Deleted, Freed, Parked, Resting};
    // (A resting record, under `hold_at_least` or from a handle in use, is that release's
    // removal; a parked record, a detach's.)
    let fine =
        matches!(outcome, Some(Deleted | Freed | Resting | Parked)) && requests <= RELEASE_REQUESTS;
    (unimpeded && !fine).then_some(Violation::SlowOrFailedRelease {
        at,
        process,
        requests,
    })
}

/// Validity from the send, when process `p` reports a hold valid until `valid_until` (on its
/// clock): no later than `validity` after the send of its latest applied write.
pub fn validity_not_from_send(
    at: Duration,
    process: usize,
    valid_until: Option<sets3lock_proto::Instant>,
    latest_applied_write: Option<sets3lock_proto::Instant>,
    validity: Duration,
) -> Option<Violation> {
    let (until, sent) = (valid_until?, latest_applied_write?);
    (until > sent + validity).then_some(Violation::ValidityNotFromSend { at, process })
}

/// Property 1, given which processes claim a valid lock at real time `at` (in process order).
/// Checked after every event: claims begin only at events, so two claims that overlap in time
/// overlap at the later one's start.
pub fn two_holders(at: Duration, claims: impl IntoIterator<Item = bool>) -> Option<Violation> {
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

/// Property 1 with handles, given the owner id each process claims a valid lock under at real
/// time `at` (`None`: it claims none), in process order: no two claims under different owner
/// ids. Two claims under one owner id are one hold continued in two processes (a handle used
/// twice), which the hold's own properties judge.
///
/// ```
/// use core::time::Duration;
/// use sets3lock_proto::OwnerId;
/// use sets3lock_mock::check::two_holds;
/// let (a, b) = (Some(OwnerId::from_u128(1)), Some(OwnerId::from_u128(2)));
/// assert_eq!(two_holds(Duration::ZERO, [a, None, a]), None);
/// assert!(two_holds(Duration::ZERO, [a, None, b]).is_some());
/// ```
pub fn two_holds(
    at: Duration,
    claims: impl IntoIterator<Item = Option<OwnerId>>,
) -> Option<Violation> {
    let mut first: Option<(usize, OwnerId)> = None;
    for (i, claim) in claims.into_iter().enumerate() {
        let Some(owner) = claim else { continue };
        match first {
            None => first = Some((i, owner)),
            Some((j, o)) if o != owner => {
                return Some(Violation::TwoHolders {
                    at,
                    processes: (j, i),
                })
            }
            Some(_) => {}
        }
    }
    None
}

/// The hold `current` is a live record of: its owner id and token, if it is a record that
/// is held (not `free`, not resting).
pub fn live_hold(current: Option<&Object>) -> Option<(OwnerId, Option<u64>)> {
    let holder = Holder::decode(&current?.body);
    if holder.is_free() {
        return None;
    }
    match holder {
        Holder::Sets3lock(r) if !r.cooldown => Some((r.owner, r.fence.map(|f| f.token))),
        _ => None,
    }
}

/// The hold `current` is a record of, live or resting: its owner id and token, unless it is
/// `free` or no sets3lock record. A resting record of a hold keeps everyone else out until
/// its lease has run out by the store's clock, which is after any process still running
/// under the hold has stopped claiming it (a release from a handle rests the lock while
/// someone may run under it), so a holder standing on it is still safe.
pub fn hold_of(current: Option<&Object>) -> Option<(OwnerId, Option<u64>)> {
    let holder = Holder::decode(&current?.body);
    match holder {
        Holder::Sets3lock(r) if !holder.is_free() => Some((r.owner, r.fence.map(|f| f.token))),
        _ => None,
    }
}

/// Whether `current` is a live record of the hold `owner` with `token` (see [`live_hold`]).
pub fn is_live_record_of(current: Option<&Object>, owner: OwnerId, token: Option<u64>) -> bool {
    live_hold(current) == Some((owner, token))
}

/// The hold's own property, when process `process` claims a valid lock as the hold `claim`
/// (owner id and token) at real time `at`: the lock object is a record of that hold, live or
/// resting (`live`, from [`hold_of`]), whichever process of the hold wrote it.
pub fn held_without_record(
    at: Duration,
    process: usize,
    claim: (OwnerId, Option<u64>),
    live: Option<(OwnerId, Option<u64>)>,
) -> Option<Violation> {
    (live != Some(claim)).then_some(Violation::HeldWithoutRecord { at, process })
}

/// Property 3 at the writer's grain, when process `process` reports a hold (acquired or
/// renewed) standing on the version `etag`: `writer_of` is the writer id of that version if
/// this process wrote it and the server applied it (`None` if not), `writer` the writer id
/// of the process's hold (`None` for the acquirer, `Some` for an adopter).
pub fn not_own_write(
    at: Duration,
    process: usize,
    writer_of: Option<Option<u64>>,
    writer: Option<u64>,
) -> Option<Violation> {
    (writer_of != Some(writer)).then_some(Violation::NotOwnWrite { at, process })
}

/// The superseded holder's property, when process `process`, holding, has handled a read of
/// the lock object: if the version it read is not one it wrote (`own`), it must no longer
/// consider itself holding (`still_holding`).
pub fn ignored_another_write(
    at: Duration,
    process: usize,
    own: bool,
    still_holding: bool,
) -> Option<Violation> {
    (!own && still_holding).then_some(Violation::IgnoredAnotherWrite { at, process })
}

/// A handle used after its hold ended (`ended`: no live record of the hold when the adoption
/// began; nothing can bring one back, since every write of a hold is conditional on a version
/// of it): the adoption must write nothing (`wrote`) and end `NotAcquired::Ended` or `Failed`
/// (`continued`: it ended `Acquired` or `Released`).
pub fn ended_hold_continued(
    at: Duration,
    process: usize,
    ended: bool,
    wrote: bool,
    continued: bool,
) -> Option<Violation> {
    (ended && (wrote || continued)).then_some(Violation::EndedHoldContinued { at, process })
}

/// A hold continued from a handle keeps its grant's token: `token` reported, `granted` the
/// token its grant wrote (`None` in presence mode).
pub fn adopted_token_changed(
    at: Duration,
    process: usize,
    token: Option<u64>,
    granted: Option<u64>,
) -> Option<Violation> {
    (token != granted).then_some(Violation::AdoptedTokenChanged {
        at,
        process,
        token,
        granted,
    })
}

/// A semaphore's property, given how many processes claim a valid slot at real time `at`
/// (checked after every event, like [`two_holders`]): at most `slots`.
///
/// ```
/// use core::time::Duration;
/// use sets3lock_mock::check::too_many_holders;
/// assert_eq!(too_many_holders(Duration::ZERO, 3, 3), None);
/// assert!(too_many_holders(Duration::ZERO, 4, 3).is_some());
/// ```
pub fn too_many_holders(at: Duration, holders: usize, slots: usize) -> Option<Violation> {
    (holders > slots).then_some(Violation::TooManyHolders { at, holders, slots })
}

/// A semaphore's property, on a request of process `process` on slot `slot` while it holds
/// slot `held` (or has ended its round): only the held slot's requests may try to take a
/// lock; the others may only resolve or clean up what a cancelled wait left.
pub fn kept_waiting(
    at: Duration,
    process: usize,
    slot: usize,
    held: Option<usize>,
    purpose: Purpose,
) -> Option<Violation> {
    let trying = matches!(
        purpose,
        Purpose::Acquire | Purpose::Observe | Purpose::Takeover
    );
    (trying && held.is_some_and(|h| h != slot)).then_some(Violation::KeptWaiting {
        at,
        process,
        slot,
    })
}

/// Property 2, on what the server actually did with `request` from process `process`: the
/// object was `before` and is now `after`. When a renewal, release or cleanup changed or
/// removed it, the object it replaced must have been written by the same process (`owners`:
/// every owner id its core has written, and the holds it was handed by a handle); for a
/// renewal, by the very owner renewing.
pub fn foreign_write(
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
pub fn acquired_without_own_write(
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

/// Fenced mode's token rules, on what the server did with `request` from process `process`
/// (the object was `before` and is now `after`; `highest` is the largest token granted so
/// far): a grant (an acquisition or a takeover that wrote a `held` fenced record) writes a
/// token larger than every earlier grant's; a renewal, release or cleanup keeps the token of
/// the record it replaces; nothing deletes a fenced object. Returns the violation, if any, and
/// the owner and token of a grant the write made.
pub fn tokens(
    at: Duration,
    process: usize,
    request: &Request,
    before: Option<&Object>,
    after: Option<&Object>,
    highest: Option<u64>,
) -> (Option<Violation>, Option<(OwnerId, u64)>) {
    let old = before.map(|b| Holder::decode(&b.body));
    let Some(after) = after else {
        let deleted_fenced = old.as_ref().is_some_and(|h| h.fence().is_some());
        let violation = deleted_fenced.then_some(Violation::FencedObjectDeleted {
            at,
            process,
            purpose: request.purpose,
        });
        return (violation, None);
    };
    if before == Some(after) {
        return (None, None);
    }
    let new = Holder::decode(&after.body);
    let (Some(fence), Some(owner)) = (new.fence(), new.owner()) else {
        return (None, None);
    };
    match request.purpose {
        Purpose::Acquire | Purpose::Takeover if fence.state == LockState::Held => {
            let violation = highest
                .filter(|&previous| fence.token <= previous)
                .map(|previous| Violation::TokenNotIncreasing {
                    at,
                    process,
                    token: fence.token,
                    previous,
                });
            (violation, Some((owner, fence.token)))
        }
        _ => {
            let kept = old.and_then(|h| h.fence()).map(|f| f.token) == Some(fence.token);
            let violation = (!kept).then_some(Violation::TokenChanged {
                at,
                process,
                purpose: request.purpose,
            });
            (violation, None)
        }
    }
}

/// [`tokens`], once the lock object has been removed behind the clients' backs: a renewal,
/// release or cleanup may then also raise the token of the record it replaces, never lower it.
/// (A grant's own earlier write, sent before the removal and landed after it, carries a lower
/// token than the grant; the release of the grant writes the grant's.)
pub fn tokens_after_removal(
    at: Duration,
    process: usize,
    request: &Request,
    before: Option<&Object>,
    after: Option<&Object>,
    highest: Option<u64>,
) -> (Option<Violation>, Option<(OwnerId, u64)>) {
    let (violation, grant) = tokens(at, process, request, before, after, highest);
    let token = |o: Option<&Object>| {
        o.and_then(|o| Holder::decode(&o.body).fence())
            .map(|f| f.token)
    };
    let raised = matches!(violation, Some(Violation::TokenChanged { .. }))
        && matches!((token(before), token(after)), (Some(old), Some(new)) if new > old);
    (violation.filter(|_| !raised), grant)
}

/// Fenced mode, on a request process `process` sends (`seen`: the highest token it had seen
/// on the key before, in a record it read or a grant it reported): a grant it sends carries a
/// token above `seen`. See [`Violation::TokenAtOrBelowSeen`].
pub fn token_at_or_below_seen(
    at: Duration,
    process: usize,
    request: &Request,
    seen: Option<u64>,
) -> Option<Violation> {
    if !matches!(request.purpose, Purpose::Acquire | Purpose::Takeover) {
        return None;
    }
    let fence = Holder::decode(request.intent.body()?).fence()?;
    let seen = seen?;
    (fence.state == LockState::Held && fence.token <= seen).then_some(
        Violation::TokenAtOrBelowSeen {
            at,
            process,
            token: fence.token,
            seen,
        },
    )
}

/// The token of the record a reply carries, if it is a fenced record: what a process that
/// receives the reply has seen.
pub fn token_in(response: &Response) -> Option<u64> {
    match response {
        Response::Object { body, .. } => Holder::decode(body).fence().map(|f| f.token),
        _ => None,
    }
}

/// The higher of two tokens seen.
pub fn higher(seen: Option<u64>, token: Option<u64>) -> Option<u64> {
    match (seen, token) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// A resource fenced by the token: it accepts a write only with a token at least the highest
/// it has accepted. Holders write to it while they believe they hold the lock, frozen ones
/// included; the property is that it never accepts a write from an older grant after one from
/// a newer grant.
#[derive(Clone, Debug, Default)]
pub struct Resource {
    highest: Option<u64>,
    newest_grant: Option<usize>,
    /// Writes accepted so far.
    pub accepted: usize,
    /// Writes refused so far (a token lower than one accepted before).
    pub refused: usize,
}

impl Resource {
    /// Process `process` writes with `token`, from grant number `grant` (grants numbered in
    /// the real-time order of their granting writes).
    pub fn write(
        &mut self,
        at: Duration,
        process: usize,
        token: u64,
        grant: usize,
    ) -> Option<Violation> {
        if self.highest.is_some_and(|h| token < h) {
            self.refused += 1;
            return None;
        }
        self.accepted += 1;
        self.highest = Some(self.highest.map_or(token, |h| h.max(token)));
        if self.newest_grant.is_some_and(|g| grant < g) {
            return Some(Violation::StaleWriteAccepted { at, process });
        }
        self.newest_grant = Some(self.newest_grant.map_or(grant, |g| g.max(grant)));
        None
    }
}

/// Liveness, when a round ends: a round that waits forever ends only with the lock.
pub fn waited_in_vain(
    process: usize,
    round: usize,
    wait: Wait,
    acquired: bool,
) -> Option<Violation> {
    (wait == Wait::Forever && !acquired).then_some(Violation::Stuck { process, round })
}

/// A semaphore's property, after every step: a process that has held a slot other than the
/// one it keeps (`since`: from when, in real time) must give it back within `grace`.
///
/// ```
/// use core::time::Duration;
/// use sets3lock_mock::check::slot_kept;
/// let s = Duration::from_secs;
/// assert_eq!(slot_kept(s(10), 0, Some(s(5)), s(6)), None);
/// assert!(slot_kept(s(12), 0, Some(s(5)), s(6)).is_some());
/// ```
pub fn slot_kept(
    at: Duration,
    process: usize,
    since: Option<Duration>,
    grace: Duration,
) -> Option<Violation> {
    since
        .filter(|&t| at.saturating_sub(t) > grace)
        .map(|_| Violation::SlotKept { at, process })
}

/// Liveness, at the end of the run: every plan is done (or its process crashed).
pub fn unfinished(process: usize, round: usize, done: bool) -> Option<Violation> {
    (!done).then_some(Violation::Stuck { process, round })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::etag_of;
    use bytes::Bytes;
    use sets3lock_proto::{Intent, Record, RequestId};

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
            fence: None,
            value: None,
            writer: None,
            cooldown: false,
            parked: false,
            terraform: None,
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

    fn fenced(of: u128, state: LockState, token: u64) -> Object {
        let body = Record {
            owner: owner(of),
            seq: token,
            lease: Duration::from_secs(10),
            host: "sim".into(),
            pid: 1,
            acquired_unix_ms: 0,
            written_unix_ms: 0,
            fence: Some(sets3lock_proto::Fence { state, token }),
            value: None,
            writer: None,
            cooldown: false,
            parked: false,
            terraform: None,
        }
        .encode();
        Object {
            etag: etag_of(&body),
            body,
        }
    }

    fn put(purpose: Purpose, over: &Object, new: &Object) -> Request {
        request(
            purpose,
            Intent::PutIfMatch {
                etag: over.etag.clone(),
                body: new.body.clone(),
            },
        )
    }

    #[test]
    fn a_grant_must_write_a_larger_token_than_every_earlier_grant() {
        use LockState::{Free, Held};
        let free = fenced(1, Free, 4);
        let grant = fenced(2, Held, 5);
        let req = put(Purpose::Acquire, &free, &grant);
        assert_eq!(
            tokens(AT, 0, &req, Some(&free), Some(&grant), Some(4)),
            (None, Some((owner(2), 5)))
        );
        assert_eq!(
            tokens(AT, 0, &req, Some(&free), Some(&grant), Some(5)).0,
            Some(Violation::TokenNotIncreasing {
                at: AT,
                process: 0,
                token: 5,
                previous: 5
            })
        );
        // The first grant of a key may write any token.
        assert_eq!(tokens(AT, 0, &req, None, Some(&grant), None).0, None);
    }

    #[test]
    fn renewals_releases_and_cleanups_keep_the_token_and_nothing_deletes_a_fenced_object() {
        use LockState::{Free, Held};
        let held = fenced(1, Held, 3);
        for (purpose, new, ok) in [
            (Purpose::Renew, fenced(1, Held, 3), true),
            (Purpose::Renew, fenced(1, Held, 4), false),
            (Purpose::Release, fenced(1, Free, 3), true),
            (Purpose::Cleanup, fenced(1, Free, 2), false),
        ] {
            let req = put(purpose, &held, &new);
            let (violation, grant) = tokens(AT, 1, &req, Some(&held), Some(&new), Some(3));
            assert_eq!(violation.is_none(), ok, "{purpose}: {violation:?}");
            assert_eq!(grant, None);
        }
        let release = request(Purpose::Release, delete(&held));
        assert_eq!(
            tokens(AT, 1, &release, Some(&held), None, Some(3)).0,
            Some(Violation::FencedObjectDeleted {
                at: AT,
                process: 1,
                purpose: Purpose::Release
            })
        );
        // Presence-mode records carry no token: nothing to check.
        let presence = request(Purpose::Release, delete(&object(1)));
        assert_eq!(
            tokens(AT, 1, &presence, Some(&object(1)), None, None),
            (None, None)
        );
    }

    #[test]
    fn the_fenced_resource_refuses_lower_tokens_and_flags_an_older_grant_accepted_late() {
        let mut r = Resource::default();
        assert_eq!(r.write(AT, 0, 1, 0), None);
        assert_eq!(r.write(AT, 1, 2, 1), None);
        // The first grant's holder wakes from a pause and writes with its old token: refused.
        assert_eq!(r.write(AT, 0, 1, 0), None);
        assert_eq!((r.accepted, r.refused), (2, 1));
        // Two grants with the same token (a broken protocol): the older one's late write gets
        // through, and that is the violation.
        let mut r = Resource::default();
        assert_eq!(r.write(AT, 0, 7, 0), None);
        assert_eq!(r.write(AT, 1, 7, 1), None);
        assert_eq!(
            r.write(AT, 0, 7, 0),
            Some(Violation::StaleWriteAccepted { at: AT, process: 0 })
        );
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
