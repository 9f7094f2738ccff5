//! Fenced mode, scenario by scenario: the object persists and says `held` or `free`; every
//! grant writes the token it read plus one in the same conditional write; no DELETE is ever
//! sent; a key that holds a fenced record is used in fenced mode whatever the client was
//! configured for.

use sets3lock_mock::MockS3;
use sets3lock_proto::{
    Ambiguity, Config, Event, Fence, Holder, Instant, Intent, LockState, Purpose, ReleaseOutcome,
    Request, Response, Wait,
};

use crate::scenario::*;

fn fenced() -> Config {
    Config {
        fenced: true,
        ..config()
    }
}

/// The record the bucket holds now.
fn record(s3: &MockS3) -> Holder {
    let object = s3.object(B, K).expect("a fenced object is never deleted");
    Holder::decode(&object.body)
}

fn acquired_token(events: &[Event]) -> Option<u64> {
    events
        .iter()
        .find_map(|e| match e {
            Event::Acquired { token, .. } => Some(*token),
            _ => None,
        })
        .unwrap_or_else(|| panic!("not acquired: {events:?}"))
}

/// Acquires with `c` (waiting), then releases, running the bucket to completion; returns the
/// token the grant carried.
fn cycle(c: &mut Process, s3: &mut MockS3) -> Option<u64> {
    c.lock
        .acquire(c.now, 0, Wait::Forever)
        .expect("an idle lock can acquire");
    c.run(s3, c.now);
    let token = acquired_token(&c.take_events());
    assert_eq!(
        c.lock.token(),
        token,
        "the held lock's token is its grant's"
    );
    c.lock.release(c.now).expect("a held lock can release");
    c.run(s3, c.now);
    let events = c.take_events();
    assert!(
        events.contains(&Event::Released {
            outcome: ReleaseOutcome::Freed
        }),
        "{events:?}"
    );
    assert!(c.lock.is_idle());
    token
}

/// A fenced process (seeded `seed`) that held the lock on `s3` and released it: its `free`
/// record applied, the reply not yet given. Returns the process and that request.
fn released_on(s3: &mut MockS3, seed: u8) -> (Process, Request) {
    let mut c = holding_with(fenced(), s3, seed);
    c.take_events();
    c.lock.release(c.now).expect("held");
    let free = c.request().expect("the free record");
    s3.execute(B, K, &free.intent);
    (c, free)
}

fn no_deletes(c: &Process) {
    assert!(
        c.sent
            .iter()
            .all(|r| !matches!(r.intent, Intent::DeleteIfMatch { .. })),
        "a fenced lock sent a DELETE: {:?}",
        c.purposes()
    );
}

#[test]
fn successive_grants_get_tokens_1_2_3_and_the_object_stays_free_between_them() {
    let mut s3 = bucket();
    for (n, seed) in [(1, 1), (2, 2), (3, 3)] {
        // (The first reads, finds nothing, creates; the others read and claim.)
        let mut c = Process::new(fenced(), seed);
        assert_eq!(cycle(&mut c, &mut s3), Some(n));
        no_deletes(&c);
        assert_eq!(
            record(&s3).fence(),
            Some(Fence {
                state: LockState::Free,
                token: n
            })
        );
        assert!(record(&s3).is_free());
    }
}

#[test]
fn a_fenced_grant_from_free_is_a_read_then_a_conditional_write_on_the_free_record() {
    let mut s3 = bucket();
    cycle(&mut Process::new(fenced(), 1), &mut s3);
    let free = s3.object(B, K).unwrap().etag.clone();
    let mut c = Process::new(fenced(), 2);
    c.lock.acquire(c.now, 0, Wait::No).unwrap();
    c.run(&mut s3, c.now);
    assert_eq!(acquired_token(&c.take_events()), Some(2));
    // Fenced mode reads first: a free fenced key is never absent.
    assert_eq!(c.purposes(), vec![Purpose::Observe, Purpose::Acquire]);
    assert!(
        matches!(&c.sent[1].intent, Intent::PutIfMatch { etag, .. } if *etag == free),
        "{:?}",
        c.sent[1]
    );
    // A client configured for presence mode creates first (412), then reads, then claims.
    let mut p = Process::new(config(), 3);
    c.lock.release(c.now).expect("held");
    c.run(&mut s3, c.now);
    p.lock.acquire(p.now, 0, Wait::No).unwrap();
    p.run(&mut s3, p.now);
    assert_eq!(acquired_token(&p.take_events()), Some(3));
    assert_eq!(
        p.purposes(),
        vec![Purpose::Acquire, Purpose::Observe, Purpose::Acquire]
    );
}

#[test]
fn renewals_keep_the_token_and_change_the_body() {
    let mut s3 = bucket();
    let mut c = Process::new(fenced(), 1);
    c.lock.acquire(c.now, 0, Wait::No).unwrap();
    c.run(&mut s3, c.at(secs(65)));
    let events = c.take_events();
    let renewals = events
        .iter()
        .filter(|e| matches!(e, Event::Renewed { .. }))
        .count();
    assert!(renewals >= 5, "{events:?}");
    assert!(c.lock.is_held(c.now));
    assert_eq!(c.lock.token(), Some(1));
    let fence = record(&s3).fence().unwrap();
    assert_eq!(
        fence,
        Fence {
            state: LockState::Held,
            token: 1
        }
    );
    let Holder::Sets3lock(r) = record(&s3) else {
        panic!("not ours")
    };
    assert_eq!(r.seq, 1 + renewals as u64);
}

#[test]
fn a_crashed_fenced_holder_is_taken_over_with_the_next_token() {
    let mut s3 = bucket();
    let mut crashed = Process::new(fenced(), 1);
    crashed.lock.acquire(crashed.now, 0, Wait::No).unwrap();
    crashed.run(&mut s3, crashed.now);
    assert_eq!(acquired_token(&crashed.take_events()), Some(1));
    // `crashed` never runs again.
    let mut w = Process::new(fenced(), 2);
    w.lock.acquire(w.now, 0, Wait::Forever).unwrap();
    w.run(&mut s3, w.at(secs(29)));
    assert!(!w.lock.is_held(w.now), "taken over before a full lease");
    w.run(&mut s3, w.at(secs(40)));
    let events = w.take_events();
    assert!(
        events.iter().any(|e| matches!(
            e,
            Event::Acquired {
                took_over: Some(_),
                token: Some(2),
                ..
            }
        )),
        "{events:?}"
    );
}

#[test]
fn a_client_configured_for_presence_follows_a_fenced_key() {
    let mut s3 = bucket();
    cycle(&mut Process::new(fenced(), 1), &mut s3);
    let mut presence = Process::new(config(), 2);
    assert_eq!(cycle(&mut presence, &mut s3), Some(2));
    no_deletes(&presence);
    assert_eq!(record(&s3).fence().map(|f| f.token), Some(2));
    // And a fenced client after it goes on from there.
    assert_eq!(cycle(&mut Process::new(fenced(), 3), &mut s3), Some(3));
}

#[test]
fn a_presence_key_stays_presence_for_a_presence_client() {
    let mut s3 = bucket();
    let mut c = Process::new(config(), 1);
    c.lock.acquire(c.now, 0, Wait::No).unwrap();
    c.run(&mut s3, c.now);
    assert_eq!(acquired_token(&c.take_events()), None);
    c.lock.release(c.now).unwrap();
    c.run(&mut s3, c.now);
    assert!(
        s3.object(B, K).is_none(),
        "presence mode deletes on release"
    );
}

#[test]
fn a_lost_reply_to_an_applied_grant_is_recovered_with_its_token() {
    let mut s3 = bucket();
    cycle(&mut Process::new(fenced(), 1), &mut s3);
    let mut c = Process::new(fenced(), 2);
    c.lock.acquire(c.now, 0, Wait::Forever).unwrap();
    // The read (free, token 1), then the claim: applied, reply lost.
    {
        let req = c.request().unwrap();
        let reply = s3.execute(B, K, &req.intent);
        let r = sets3lock_proto::reply::s3::classify(
            req.intent.kind(),
            reply.status,
            &reply.headers,
            &reply.body,
        );
        c.answer(&req, r);
    }
    let claim = c.request().unwrap();
    assert!(matches!(claim.intent, Intent::PutIfMatch { .. }));
    s3.execute(B, K, &claim.intent);
    c.answer(&claim, Response::Ambiguous(Ambiguity::Timeout));
    c.run(&mut s3, c.at(secs(1)));
    assert_eq!(acquired_token(&c.take_events()), Some(2));
    assert!(c.lock.is_held(c.now));
    assert_eq!(
        c.lock.valid_until(),
        Some(Instant::ZERO + fenced().validity())
    );
}

#[test]
fn a_lost_reply_to_an_applied_release_is_recognised_as_our_free_record() {
    let mut s3 = bucket();
    let (mut c, free) = released_on(&mut s3, 1);
    c.answer(&free, Response::Ambiguous(Ambiguity::Timeout));
    c.run(&mut s3, c.at(secs(1)));
    assert_eq!(
        c.take_events(),
        vec![Event::Released {
            outcome: ReleaseOutcome::Freed
        }]
    );
    assert!(record(&s3).is_free());
    no_deletes(&c);
}

#[test]
fn an_expired_fenced_hold_is_cleaned_up_with_a_free_record_not_a_delete() {
    let mut s3 = bucket();
    let mut c = Process::new(fenced(), 1);
    c.lock.acquire(c.now, 0, Wait::No).unwrap();
    c.run(&mut s3, c.now);
    c.take_events();
    // Every renewal fails (the store is down for them): the hold expires.
    let until = c.at(secs(40));
    run_with(&mut c, &mut s3, until, |req| {
        (req.purpose == Purpose::Renew).then_some(Response::Ambiguous(Ambiguity::Timeout))
    });
    assert!(c.take_events().contains(&Event::Expired));
    assert!(c.lock.is_idle(), "{:?}", c.purposes());
    no_deletes(&c);
    assert!(record(&s3).is_free(), "{}", record(&s3));
    assert_eq!(record(&s3).fence().map(|f| f.token), Some(1));
    // The next grant goes on from the token.
    assert_eq!(cycle(&mut Process::new(fenced(), 2), &mut s3), Some(2));
}

#[test]
fn a_fenced_record_is_another_format_version_so_older_releases_never_delete_it() {
    let mut s3 = bucket();
    cycle(&mut Process::new(fenced(), 1), &mut s3);
    let body = String::from_utf8(s3.object(B, K).unwrap().body.to_vec()).unwrap();
    assert!(body.starts_with(r#"{"sets3lock":2,"#), "{body}");
    assert!(body.contains(r#""state":"free","token":1"#), "{body}");
}

#[test]
fn fenced_records_decode_only_with_a_known_state_and_a_token() {
    let owner = "00000000000000000000000000000001";
    let rec = |extra: &str| {
        format!(r#"{{"sets3lock":2,"owner":"{owner}","seq":1,"lease_ms":1000{extra}}}"#)
    };
    let held = Holder::decode(rec(r#","state":"held","token":9"#).as_bytes());
    assert_eq!(
        held.fence(),
        Some(Fence {
            state: LockState::Held,
            token: 9
        })
    );
    assert!(!held.is_free());
    assert!(held.to_string().contains("token 9"), "{held}");
    let free = Holder::decode(rec(r#","state":"free","token":9"#).as_bytes());
    assert!(free.is_free());
    assert!(free.to_string().contains("free, last token 9"), "{free}");
    // Anything less is someone else's lock: never claimed, never freed, never deleted.
    for broken in [
        rec(""),
        rec(r#","state":"held""#),
        rec(r#","token":9"#),
        rec(r#","state":"gone","token":9"#),
        rec(r#","state":"free","token":-1"#),
        rec(r#","state":"held","token":9223372036854775807"#),
    ] {
        let h = Holder::decode(broken.as_bytes());
        assert!(matches!(h, Holder::Unknown { .. }), "{broken} → {h:?}");
    }
    // A version-1 record with a stray state is a presence record.
    let v1 = format!(
        r#"{{"sets3lock":1,"owner":"{owner}","seq":1,"lease_ms":1000,"state":"free","token":3}}"#
    );
    let h = Holder::decode(v1.as_bytes());
    assert_eq!(h.fence(), None);
    assert!(!h.is_free());
}

#[test]
fn a_fenced_acquisition_that_may_not_list_the_bucket_creates_a_missing_key() {
    // Without s3:ListBucket, S3 answers 403 to a read of a missing key: the first read is
    // followed by a create, and a second 403 (the key exists, and we may not read it) fails.
    let mut s3 = bucket();
    let mut c = Process::new(fenced(), 1);
    c.lock.acquire(c.now, 0, Wait::No).unwrap();
    let denied = || {
        Response::Refused(sets3lock_proto::Error::Refused {
            op: sets3lock_proto::IntentKind::Get,
            status: 403,
            code: Some("AccessDenied".into()),
            message: None,
            hint: "",
        })
    };
    let until = c.now + secs(1);
    run_with(&mut c, &mut s3, until, |req| {
        matches!(req.intent, Intent::Get { .. }).then(denied)
    });
    assert_eq!(acquired_token(&c.take_events()), Some(1));
    assert_eq!(c.purposes(), vec![Purpose::Observe, Purpose::Acquire]);
    let mut d = Process::new(fenced(), 2);
    d.lock.acquire(d.now, 0, Wait::No).unwrap();
    let until = d.now + secs(1);
    run_with(&mut d, &mut s3, until, |req| {
        matches!(req.intent, Intent::Get { .. }).then(denied)
    });
    let events = d.take_events();
    assert!(
        matches!(events.last(), Some(Event::Failed { .. })),
        "{events:?}"
    );
    assert_eq!(
        d.purposes(),
        vec![Purpose::Observe, Purpose::Acquire, Purpose::Observe]
    );
}

#[test]
fn our_free_record_found_after_our_validity_is_still_our_release_and_anothers_is_not() {
    // Our `free` record's reply lost, the read comes after our validity ended: the record is
    // ours (our owner id), so the release landed.
    let mut s3 = bucket();
    let (mut c, free) = released_on(&mut s3, 1);
    c.now = c.at(secs(60));
    c.answer(&free, Response::Ambiguous(Ambiguity::Timeout));
    c.run(&mut s3, c.now);
    assert_eq!(
        c.take_events(),
        vec![Event::Released {
            outcome: ReleaseOutcome::Freed
        }]
    );
    // The same, but someone else acquired and released since: a `free` record that is not
    // ours, after our validity: we cannot tell, and say so.
    let mut s3 = bucket();
    let (mut c, free) = released_on(&mut s3, 2);
    let mut other = Process::new(fenced(), 3);
    assert_eq!(cycle(&mut other, &mut s3), Some(2));
    c.now = c.at(secs(60));
    c.answer(&free, Response::Ambiguous(Ambiguity::Timeout));
    c.run(&mut s3, c.now);
    assert_eq!(
        c.take_events(),
        vec![Event::Released {
            outcome: ReleaseOutcome::TakenOver
        }]
    );
}

#[test]
fn a_token_seen_while_waiting_is_exceeded_even_if_the_object_is_deleted_before_the_grant() {
    let mut s3 = bucket();
    let mut first = Process::new(fenced(), 1);
    assert_eq!(cycle(&mut first, &mut s3), Some(1));
    let mut holder = Process::new(fenced(), 2);
    holder.lock.acquire(holder.now, 0, Wait::No).unwrap();
    holder.run(&mut s3, holder.now);
    assert_eq!(acquired_token(&holder.take_events()), Some(2));
    let mut w = Process::new(fenced(), 3);
    w.lock.acquire(w.now, 0, Wait::Forever).unwrap();
    w.run(&mut s3, w.at(secs(1)));
    // An operator deletes the fenced object (never done by the protocol): the next grant
    // still exceeds every token seen.
    s3.force(B, K, None);
    w.run(&mut s3, w.at(secs(10)));
    assert_eq!(acquired_token(&w.take_events()), Some(3));
}
