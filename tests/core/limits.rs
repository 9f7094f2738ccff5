//! Exact request sequences and retry limits of the release, the cleanup and the hold's reply
//! handling: how many attempts before giving up, and which request follows which reply. A
//! retry loop that gives up one attempt early or late, or reads where it should write again,
//! changes what S3 sees and what the user is told; these tests pin it.

use sets3lock_proto::{
    Ambiguity, Config, Error, Event, LostReason, Purpose, ReleaseOutcome, Response, Wait,
};

use crate::scenario::*;
use sets3lock_mock::MockS3;

fn not_sent() -> Response {
    Response::Ambiguous(Ambiguity::NotSent {
        detail: "connection refused".into(),
    })
}

fn fenced() -> Config {
    Config {
        fenced: true,
        ..config()
    }
}

/// Answers every request with `answer` (or the bucket, when it returns None) and fires
/// timers, until `done` holds; fails after 200 requests or timers.
fn drive(
    c: &mut Process,
    s3: &mut MockS3,
    answer: impl Fn(&sets3lock_proto::Request) -> Option<Response>,
    done: impl Fn(&Process) -> bool,
) {
    for _ in 0..200 {
        if done(c) {
            return;
        }
        if let Some(req) = c.request() {
            let response = answer(&req).unwrap_or_else(|| {
                let reply = s3.execute(B, K, &req.intent);
                reply.classify(req.intent.kind())
            });
            c.answer(&req, response);
        } else {
            c.tick();
        }
    }
    panic!("not done after 200 steps: {:?}", c.timeline());
}

/// Renewals that never leave the machine (no connection) until the hold expires.
fn expire(c: &mut Process, s3: &mut MockS3) {
    drive(
        c,
        s3,
        |_| Some(not_sent()),
        |c| c.events.contains(&Event::Expired),
    );
}

fn purposes_since(c: &Process, n: usize) -> Vec<Purpose> {
    c.purposes()[n..].to_vec()
}

#[test]
fn a_cleanup_tries_its_delete_retry_limit_plus_one_times_then_leaves_the_object() {
    for cfg in [config(), fenced()] {
        let mut s3 = bucket();
        let mut c = holding_with(cfg.clone(), &mut s3, 1);
        expire(&mut c, &mut s3);
        let n = c.sent.len();
        // Every removal fails with a 503: the cleanup retries the removal itself (a delete,
        // or fenced, a `free` record), never a read, and stays busy until its last attempt.
        drive(&mut c, &mut s3, |_| Some(slow_down()), |c| c.lock.is_idle());
        let limit = cfg.retry_limit as usize;
        assert_eq!(
            purposes_since(&c, n),
            vec![Purpose::Cleanup; limit + 1],
            "fenced: {}",
            cfg.fenced
        );
        assert!(s3.object(B, K).is_some(), "left to expire like a crash");
    }
}

#[test]
fn a_cleanup_removes_a_renewal_that_landed_unseen_not_only_the_last_confirmed_write() {
    let mut s3 = bucket();
    let mut c = holding_with(config(), &mut s3, 1);
    let first = s3.object(B, K).expect("held").etag.clone();
    // The first renewal lands, its reply is lost; nothing else gets through until expiry.
    let renewal = c.next_request();
    assert_eq!(renewal.purpose, Purpose::Renew);
    s3.execute(B, K, &renewal.intent);
    assert_ne!(s3.object(B, K).expect("renewed").etag, first);
    c.answer(&renewal, Response::Ambiguous(Ambiguity::Timeout));
    expire(&mut c, &mut s3);
    // The cleanup reads first (a write may have landed), finds the renewal, and removes it.
    drive(&mut c, &mut s3, |_| None, |c| c.lock.is_idle());
    assert!(s3.object(B, K).is_none(), "{:?}", c.timeline());
}

#[test]
fn a_release_gives_up_after_retry_limit_plus_one_attempts_naming_them() {
    let mut s3 = bucket();
    let mut c = holding_with(config(), &mut s3, 1);
    let n = c.sent.len();
    c.lock.release(c.now).expect("held");
    // The delete fails with a 503 (it may have been applied): read, and the reads fail too.
    drive(&mut c, &mut s3, |_| Some(slow_down()), |c| c.lock.is_idle());
    let limit = config().retry_limit;
    let mut expected = vec![Purpose::Release];
    expected.extend(vec![Purpose::Resolve; limit as usize]);
    assert_eq!(purposes_since(&c, n), expected);
    assert!(
        matches!(
            c.events.last(),
            Some(Event::Failed { error: Error::GaveUp { attempts, .. } }) if *attempts == limit + 1
        ),
        "{:?}",
        c.events.last()
    );
}

#[test]
fn a_release_asked_for_during_a_renewal_reads_first_only_if_the_renewal_may_have_landed() {
    // Landed, reply lost: read, then delete the renewal's version: two requests.
    let mut s3 = bucket();
    let mut c = holding_with(config(), &mut s3, 1);
    let renewal = c.next_request();
    assert_eq!(renewal.purpose, Purpose::Renew);
    c.lock.release(c.now).expect("held");
    s3.execute(B, K, &renewal.intent);
    let n = c.sent.len();
    c.answer(&renewal, Response::Ambiguous(Ambiguity::Timeout));
    drive(&mut c, &mut s3, |_| None, |c| c.lock.is_idle());
    assert_eq!(purposes_since(&c, n), [Purpose::Resolve, Purpose::Release]);
    assert_eq!(
        c.events.last(),
        Some(&Event::Released {
            outcome: ReleaseOutcome::Deleted
        })
    );
    // Never sent: nothing to read; the delete goes out at once with the ETag it has.
    let mut s3 = bucket();
    let mut c = holding_with(config(), &mut s3, 2);
    let renewal = c.next_request();
    c.lock.release(c.now).expect("held");
    let n = c.sent.len();
    c.answer(&renewal, not_sent());
    drive(&mut c, &mut s3, |_| None, |c| c.lock.is_idle());
    assert_eq!(purposes_since(&c, n), [Purpose::Release]);
    assert!(s3.object(B, K).is_none());
}

/// A release whose delete landed but whose reply was lost, answered at `after` past the
/// acquisition, once another process has acquired the free lock: what the release reports.
fn release_outcome_after_a_lost_reply(
    after: impl Fn(&Process) -> sets3lock_proto::Instant,
) -> ReleaseOutcome {
    let mut s3 = bucket();
    let mut c = holding_with(config(), &mut s3, 1);
    c.lock.release(c.now).expect("held");
    let delete = c.next_request();
    s3.execute(B, K, &delete.intent);
    let _other = holding_with(config(), &mut s3, 2);
    c.now = after(&c);
    c.answer(&delete, Response::Ambiguous(Ambiguity::Timeout));
    drive(&mut c, &mut s3, |_| None, |c| c.lock.is_idle());
    match c.events.last() {
        Some(Event::Released { outcome }) => *outcome,
        other => panic!("not released: {other:?}"),
    }
}

#[test]
fn a_foreign_holder_found_after_a_lost_delete_reply_is_our_release_only_within_our_validity() {
    // Within our validity nobody could have taken over: our delete landed and the lock was
    // acquired since.
    let within = release_outcome_after_a_lost_reply(|c| c.now + secs(1));
    assert_eq!(within, ReleaseOutcome::Deleted);
    // From the very end of validity on, a takeover is possible: say so.
    // (The hold was acquired at zero and never renewed.)
    let at_the_end = release_outcome_after_a_lost_reply(|_| {
        sets3lock_proto::Instant::ZERO + config().validity()
    });
    assert_eq!(at_the_end, ReleaseOutcome::TakenOver);
}

#[test]
fn a_renewal_answered_absent_is_lost_at_once_unless_an_earlier_renewal_is_unresolved() {
    // Nothing of ours in flight: the object is gone, the hold is lost, no read.
    let mut s3 = bucket();
    let mut c = holding_with(config(), &mut s3, 1);
    let n = c.sent.len();
    s3.force(B, K, None);
    drive(
        &mut c,
        &mut s3,
        |_| None,
        |c| c.lock.is_idle() || c.events.iter().any(|e| matches!(e, Event::Lost { .. })),
    );
    assert_eq!(purposes_since(&c, n)[..1], [Purpose::Renew]);
    assert!(
        matches!(
            &c.events[..],
            [
                ..,
                Event::Lost {
                    reason: LostReason::Deleted
                }
            ]
        ),
        "{:?}",
        c.timeline()
    );
    assert_eq!(
        c.purposes()[n..]
            .iter()
            .filter(|p| **p == Purpose::Resolve)
            .count(),
        0
    );
    // A renewal whose reply was lost may still land: while it is unresolved, a later
    // renewal answered 404 is read back before the hold is given up.
    let mut s3 = bucket();
    let mut c = holding_with(config(), &mut s3, 2);
    let renewal = c.next_request();
    assert_eq!(renewal.purpose, Purpose::Renew);
    c.answer(&renewal, Response::Ambiguous(Ambiguity::Timeout));
    let read = c.next_request();
    assert_eq!(read.purpose, Purpose::Resolve);
    let reply = s3.execute(B, K, &read.intent).classify(read.intent.kind());
    c.answer(&read, reply); // our last confirmed write: the renewal did not land (yet)
    let again = c.next_request();
    assert_eq!(again.purpose, Purpose::Renew);
    s3.force(B, K, None);
    let reply = s3
        .execute(B, K, &again.intent)
        .classify(again.intent.kind());
    assert_eq!(reply, Response::Absent);
    c.answer(&again, reply);
    assert!(
        !c.events.iter().any(|e| matches!(e, Event::Lost { .. })),
        "{:?}",
        c.timeline()
    );
    assert_eq!(c.next_request().purpose, Purpose::Resolve);
}

/// An acquisition cancelled while its create was in flight, the create's reply lost: the
/// cleanup reads to find out, and a failed read is read again, not given up on.
#[test]
fn a_cleanup_reads_again_after_a_failed_read() {
    let mut s3 = bucket();
    let mut c = Process::new(config(), 1);
    c.lock.acquire(c.now, 0, Wait::Forever).expect("idle");
    let create = c.next_request();
    c.lock.release(c.now).expect("acquiring");
    c.answer(&create, Response::Ambiguous(Ambiguity::Timeout));
    let read = c.next_request();
    assert_eq!(read.purpose, Purpose::Resolve);
    c.answer(&read, slow_down());
    assert!(!c.lock.is_idle(), "gave up after one failed read");
    drive(&mut c, &mut s3, |_| None, |c| c.lock.is_idle());
    assert_eq!(
        c.purposes(),
        [Purpose::Acquire, Purpose::Resolve, Purpose::Resolve]
    );
}

#[test]
fn a_presence_hold_has_no_token() {
    let mut s3 = bucket();
    let c = holding_with(config(), &mut s3, 1);
    assert_eq!(c.lock.token(), None);
}

/// The object is deleted behind the holder's back; its next renewal is answered 404: with no
/// write of its own left unresolved, the hold is lost at once, without a read.
fn deleted_then_lost_at_once(c: &mut Process, s3: &mut MockS3) {
    s3.force(B, K, None);
    let renewal = c.next_request();
    assert_eq!(renewal.purpose, Purpose::Renew);
    c.serve(s3, &renewal);
    assert!(
        c.events.contains(&Event::Lost {
            reason: LostReason::Deleted
        }),
        "an earlier write was left unresolved: {:?}",
        c.timeline()
    );
    assert_eq!(c.request(), None);
}

#[test]
fn a_renewal_found_landed_by_a_read_settles_it() {
    let mut s3 = bucket();
    let mut c = holding_with(config(), &mut s3, 1);
    let renewal = c.next_request();
    s3.execute(B, K, &renewal.intent);
    c.answer(&renewal, Response::Ambiguous(Ambiguity::Timeout));
    let read = c.next_request();
    assert_eq!(read.purpose, Purpose::Resolve);
    c.serve(&mut s3, &read);
    assert!(
        c.events.iter().any(|e| matches!(e, Event::Renewed { .. })),
        "{:?}",
        c.timeline()
    );
    deleted_then_lost_at_once(&mut c, &mut s3);
}

#[test]
fn a_later_renewal_that_lands_settles_an_earlier_unresolved_one() {
    let mut s3 = bucket();
    let mut c = holding_with(config(), &mut s3, 1);
    let renewal = c.next_request();
    c.answer(&renewal, Response::Ambiguous(Ambiguity::Timeout)); // not applied
    let read = c.next_request();
    c.serve(&mut s3, &read); // our last confirmed write: retry the renewal
    let again = c.next_request();
    assert_eq!(again.purpose, Purpose::Renew);
    c.serve(&mut s3, &again);
    assert!(
        c.events.iter().any(|e| matches!(e, Event::Renewed { .. })),
        "{:?}",
        c.timeline()
    );
    deleted_then_lost_at_once(&mut c, &mut s3);
}

#[test]
fn an_acquisition_found_landed_by_a_read_leaves_nothing_unresolved() {
    let mut s3 = bucket();
    let mut c = Process::new(config(), 1);
    c.lock.acquire(c.now, 0, Wait::No).expect("idle");
    let create = c.next_request();
    s3.execute(B, K, &create.intent);
    c.answer(&create, Response::Ambiguous(Ambiguity::Timeout));
    let read = c.next_request();
    c.serve(&mut s3, &read);
    assert!(c.lock.is_held(c.now), "{:?}", c.timeline());
    deleted_then_lost_at_once(&mut c, &mut s3);
}

#[test]
fn a_cleanup_paces_its_retries() {
    let mut s3 = bucket();
    let mut c = holding_with(config(), &mut s3, 1);
    expire(&mut c, &mut s3);
    let delete = c.next_request();
    assert_eq!(delete.purpose, Purpose::Cleanup);
    c.answer(&delete, slow_down());
    assert_eq!(c.request(), None, "retried at once");
    let retry_at = c.lock.poll_timeout().expect("a retry is scheduled");
    assert!(retry_at >= c.now + config().retry.floor, "{retry_at:?}");
}
