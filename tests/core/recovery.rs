//! Scenario tests of the failure and recovery paths the simulation's properties do not see:
//! a busy core refusing a second acquisition, a release that needs a retry, what a release
//! whose reply was lost reports, and the cleanup of an unanswered create after a cancel.

use sets3lock_proto::{
    Ambiguity, CommandError, Event, Purpose, ReleaseOutcome, Response, Setback, Wait,
};

use crate::scenario::*;
use sets3lock_mock::MockS3;

/// A fresh bucket, and a process holding the lock on it.
fn holding(seed: u8) -> (MockS3, Process) {
    let mut s3 = bucket();
    let c = holding_with(config(), &mut s3, seed);
    (s3, c)
}

#[test]
fn a_second_acquisition_while_holding_or_cleaning_up_is_refused_as_busy() {
    let (mut s3, mut c) = holding(1);
    assert!(c.lock.is_held(c.now));
    // Held, nothing in flight (between renewals): the hold must not be thrown away.
    assert_eq!(c.lock.acquire(c.now, 0, Wait::No), Err(CommandError::Busy));
    assert!(c.lock.is_held(c.now));
    // Releasing: busy too.
    c.lock.release(c.now).unwrap();
    assert_eq!(c.lock.acquire(c.now, 0, Wait::No), Err(CommandError::Busy));
    c.run(&mut s3, c.now);
    assert!(c.lock.is_idle());
    // Idle again: a new acquisition is taken, and a release of nothing is refused.
    assert_eq!(c.lock.release(c.now), Err(CommandError::NotHeld));
    assert_eq!(c.lock.acquire(c.now, 0, Wait::No), Ok(()));
}

#[test]
fn one_503_on_the_release_is_retried_and_the_lock_is_deleted() {
    let (mut s3, mut c) = holding(1);
    c.lock.release(c.now).unwrap();
    let delete = c.request().unwrap();
    assert_eq!(delete.purpose, Purpose::Release);
    c.answer(&delete, slow_down()); // not applied
    c.run(&mut s3, c.at(secs(10)));
    assert_eq!(
        c.events.last(),
        Some(&Event::Released {
            outcome: ReleaseOutcome::Deleted
        }),
        "{:?}",
        c.timeline()
    );
    assert!(s3.object(B, K).is_none());
    // The retry reads first (a 503 may have been applied), then deletes: three requests.
    let release: Vec<Purpose> = c.purposes().into_iter().skip(1).collect();
    assert_eq!(
        release,
        [Purpose::Release, Purpose::Resolve, Purpose::Release]
    );
}

#[test]
fn a_release_whose_reply_was_lost_reports_what_the_read_back_finds() {
    // Applied, reply lost: the read finds the key gone, and the release says Deleted (ours).
    let (mut s3, mut c) = holding(1);
    c.lock.release(c.now).unwrap();
    let delete = c.request().unwrap();
    s3.execute(B, K, &delete.intent);
    c.answer(&delete, Response::Ambiguous(Ambiguity::Timeout));
    c.run(&mut s3, c.at(secs(10)));
    assert_eq!(
        c.events.last(),
        Some(&Event::Released {
            outcome: ReleaseOutcome::Deleted
        })
    );
    // Not applied, reply lost, and meanwhile the key was deleted by someone else: already
    // gone is all the core can say... unless its own delete may have done it: Deleted.
    // Not sent at all (no connection): nothing of ours can have removed it: AlreadyGone.
    let mut c = holding_with(config(), &mut s3, 2);
    c.lock.release(c.now).unwrap();
    let delete = c.request().unwrap();
    s3.force(B, K, None);
    c.answer(
        &delete,
        Response::Ambiguous(Ambiguity::NotSent {
            detail: "connection refused".into(),
        }),
    );
    c.run(&mut s3, c.at(secs(10)));
    assert_eq!(
        c.events.last(),
        Some(&Event::Released {
            outcome: ReleaseOutcome::AlreadyGone
        }),
        "{:?}",
        c.timeline()
    );
}

#[test]
fn a_cancelled_acquisition_reads_back_an_unanswered_create_and_removes_it() {
    let mut s3 = bucket();
    let mut c = Process::new(config(), 1);
    c.lock.acquire(c.now, 0, Wait::Forever).unwrap();
    let put = c.request().unwrap();
    s3.execute(B, K, &put.intent); // applied; the reply is lost
    c.answer(&put, Response::Ambiguous(Ambiguity::Timeout));
    c.lock.release(c.now).unwrap(); // cancelled before the read-back
    c.run(&mut s3, c.at(secs(5)));
    assert!(
        s3.object(B, K).is_none(),
        "the create that landed is removed: {:?}",
        c.timeline()
    );
    assert!(c.lock.is_idle());
    let after: Vec<Purpose> = c.purposes().into_iter().skip(1).collect();
    assert_eq!(
        after,
        [Purpose::Resolve, Purpose::Cleanup],
        "a read, then a delete"
    );
}

#[test]
fn a_try_once_acquisition_retries_a_create_that_lost_a_race_with_a_release() {
    // Held by another when we create (412); gone by the time we read: create again.
    let mut s3 = bucket();
    let mut other = Process::new(config(), 9);
    other.lock.acquire(other.now, 0, Wait::No).unwrap();
    other.run(&mut s3, other.now);
    let mut c = Process::new(config(), 1);
    c.lock.acquire(c.now, 0, Wait::No).unwrap();
    let put = c.request().unwrap();
    let reply = s3.execute(B, K, &put.intent);
    assert_eq!(reply.status, http::StatusCode::PRECONDITION_FAILED);
    c.answer(&put, Response::Exists);
    other.lock.release(other.now).unwrap();
    other.run(&mut s3, other.now);
    c.run(&mut s3, c.at(secs(1)));
    assert!(c.lock.is_held(c.now), "{:?}", c.timeline());
    assert_eq!(
        c.purposes(),
        [Purpose::Acquire, Purpose::Observe, Purpose::Acquire]
    );
}

#[test]
fn a_refused_renewal_is_delayed_and_retried_not_treated_as_a_loss() {
    let (mut s3, mut c) = holding(1);
    c.now = c.at(secs(10));
    c.lock.handle_timeout(c.now);
    let renew = c.request().unwrap();
    assert_eq!(renew.purpose, Purpose::Renew);
    c.answer(
        &renew,
        Response::Conflict {
            code: Some("ConditionalRequestConflict".into()),
        },
    );
    assert!(
        matches!(
            c.events.last(),
            Some(Event::RenewalDelayed {
                setback: Setback::Conflict { .. }
            })
        ),
        "a 409 is a conflict, not a timeout: {:?}",
        c.events.last()
    );
    c.run(&mut s3, c.at(secs(12)));
    assert!(c.lock.is_held(c.now));
    assert!(
        matches!(c.events.last(), Some(Event::Renewed { .. })),
        "{:?}",
        c.timeline()
    );
    // Retried as a renewal at once, not read back first: a 409 was not applied.
    let after: Vec<Purpose> = c.purposes().into_iter().skip(2).collect();
    assert_eq!(after, [Purpose::Renew]);
}
