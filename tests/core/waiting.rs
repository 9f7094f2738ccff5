//! What a waiter reports and sends: `Contended` when waiting starts and when the holder
//! changes (not when it renews), a stale holder named only for a takeover, and a 409 answered
//! with the very same write again (a takeover stays a takeover, a claim a claim).

use sets3lock_proto::{Config, ETag, Event, Intent, Purpose, Request, Response, Wait};

use crate::scenario::*;
use sets3lock_mock::MockS3;

/// Drives `c` against `s3` (firing its timers) until it sends a request `wanted` picks, which
/// is returned unanswered; fails after 1,000 steps.
fn until_request(c: &mut Process, s3: &mut MockS3, wanted: impl Fn(&Request) -> bool) -> Request {
    for _ in 0..1000 {
        match c.request() {
            Some(r) if wanted(&r) => return r,
            Some(r) => c.serve(s3, &r),
            None => c.tick(),
        }
    }
    panic!("no such request after 1,000 steps: {:?}", c.timeline());
}

fn if_match(intent: &Intent) -> Option<&ETag> {
    match intent {
        Intent::PutIfMatch { etag, .. } | Intent::DeleteIfMatch { etag } => Some(etag),
        _ => None,
    }
}

fn contended(c: &Process) -> usize {
    c.events
        .iter()
        .filter(|e| matches!(e, Event::Contended { .. }))
        .count()
}

fn conflict() -> Response {
    Response::Conflict {
        code: Some("ConditionalRequestConflict".into()),
    }
}

#[test]
fn contended_is_reported_when_waiting_starts_and_when_the_holder_changes_not_when_it_renews() {
    let mut s3 = bucket();
    let mut a = holding_with(config(), &mut s3, 1);
    let mut w = Process::new(config(), 2);
    w.lock.acquire(w.now, 0, Wait::Forever).expect("idle");
    w.run(&mut s3, w.at(secs(5)));
    assert_eq!(contended(&w), 1, "{:?}", w.timeline());
    // The holder renews (a new ETag, the same holder): nothing to report.
    let before = s3.object(B, K).expect("held").etag.clone();
    a.run(&mut s3, a.at(secs(11)));
    assert_ne!(s3.object(B, K).expect("held").etag, before, "renewed");
    let polls = w.sent.len();
    w.run(&mut s3, w.at(secs(16)));
    assert!(
        w.sent.len() > polls,
        "no poll saw the renewal: {:?}",
        w.timeline()
    );
    assert_eq!(contended(&w), 1, "{:?}", w.timeline());
    // Another holder's record replaces it: reported.
    let mut elsewhere = bucket();
    holding_with(config(), &mut elsewhere, 3);
    let other = elsewhere.object(B, K).expect("held").body.clone();
    s3.force(B, K, Some(other));
    w.run(&mut s3, w.at(secs(20)));
    assert_eq!(contended(&w), 2, "{:?}", w.timeline());
}

#[test]
fn an_acquisition_after_waiting_for_a_release_names_no_stale_holder() {
    let mut s3 = bucket();
    let mut a = holding_with(config(), &mut s3, 1);
    let mut w = Process::new(config(), 2);
    w.lock.acquire(w.now, 0, Wait::Forever).expect("idle");
    w.run(&mut s3, w.at(secs(2)));
    a.lock.release(a.now).expect("held");
    a.run(&mut s3, a.now);
    w.run(&mut s3, w.at(secs(10)));
    let acquired = w.events.iter().find_map(|e| match e {
        Event::Acquired { took_over, .. } => Some(took_over.clone()),
        _ => None,
    });
    assert_eq!(acquired, Some(None), "{:?}", w.timeline());
}

#[test]
fn a_takeover_answered_409_is_sent_again_as_a_takeover() {
    let mut s3 = bucket();
    let _crashed = holding_with(config(), &mut s3, 1); // never driven again: it crashed
    let mut w = Process::new(config(), 2);
    w.lock.acquire(w.now, 0, Wait::Forever).expect("idle");
    let takeover = until_request(&mut w, &mut s3, |r| r.purpose == Purpose::Takeover);
    w.answer(&takeover, conflict());
    let again = until_request(&mut w, &mut s3, |r| r.intent.kind().is_write());
    assert_eq!(again.purpose, Purpose::Takeover);
    assert_eq!(if_match(&again.intent), if_match(&takeover.intent));
    let reply = s3
        .execute(B, K, &again.intent)
        .classify(again.intent.kind());
    w.answer(&again, reply);
    assert!(
        w.events.iter().any(|e| matches!(
            e,
            Event::Acquired {
                took_over: Some(_),
                ..
            }
        )),
        "{:?}",
        w.timeline()
    );
}

#[test]
fn a_fenced_claim_answered_409_is_sent_again_as_a_claim_not_a_create() {
    let fenced = Config {
        fenced: true,
        ..config()
    };
    let mut s3 = bucket();
    let mut a = holding_with(fenced.clone(), &mut s3, 1);
    a.lock.release(a.now).expect("held");
    a.run(&mut s3, a.now);
    let mut w = Process::new(fenced, 2);
    w.lock.acquire(w.now, 0, Wait::Forever).expect("idle");
    let claim = until_request(&mut w, &mut s3, |r| r.intent.kind().is_write());
    assert!(
        matches!(claim.intent, Intent::PutIfMatch { .. }),
        "{claim:?}"
    );
    assert_eq!(claim.purpose, Purpose::Acquire);
    w.answer(&claim, conflict());
    let again = until_request(&mut w, &mut s3, |r| r.intent.kind().is_write());
    assert!(
        matches!(again.intent, Intent::PutIfMatch { .. }),
        "{again:?}"
    );
    assert_eq!(again.purpose, Purpose::Acquire);
    assert_eq!(if_match(&again.intent), if_match(&claim.intent));
}

#[test]
fn a_change_between_two_foreign_holders_is_reported_too() {
    let go = |id: &str| {
        bytes::Bytes::from(format!(
            r#"{{"id":"{id}","created_at":"2026-11-30T10:00:00Z"}}"#
        ))
    };
    let mut s3 = bucket();
    s3.force(B, K, Some(go("6f9619ff-8b86-d011-b42d-00c04fc964ff")));
    let mut w = Process::new(config(), 2);
    w.lock.acquire(w.now, 0, Wait::Forever).expect("idle");
    w.run(&mut s3, w.at(secs(5)));
    assert_eq!(contended(&w), 1, "{:?}", w.timeline());
    s3.force(B, K, Some(go("0e7a2b1c-0000-4000-8000-000000000001")));
    w.run(&mut s3, w.at(secs(10)));
    assert_eq!(contended(&w), 2, "{:?}", w.timeline());
}
