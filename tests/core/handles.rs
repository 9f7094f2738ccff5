//! Handles: a hold handed from process to process (`Lock::detach`, `Lock::adopt`), used
//! after a takeover, used by two processes at once, and past its lease by the store's clock.

use core::time::Duration;
use sets3lock_proto::{
    Event, Handle, HoldEnded, Holder, Instant, LostReason, NotAcquired, ReleaseOutcome, Resume,
    Wait,
};

use crate::scenario::*;
use sets3lock_mock::MockS3;

fn url() -> sets3lock_proto::LockUrl {
    format!("s3://{B}/{K}").parse().expect("a valid URL")
}

/// Acquires with `cfg` and lets go at once: the hold's handle.
fn acquired_and_detached(
    cfg: sets3lock_proto::Config,
    s3: &mut MockS3,
    seed: u8,
) -> (Handle, Process) {
    let mut a = Process::new(cfg, seed);
    a.lock.acquire(a.now, EPOCH_MS, Wait::No).expect("idle");
    let until = a.now;
    run_clocked(&mut a, s3, until);
    assert!(a.lock.is_held(a.now), "{:?}", a.timeline());
    let before = etag(s3);
    let handle = a.lock.detach(a.now, url()).expect("held");
    // One conditional write parks the record: the same hold, marked as run by nobody.
    let until = a.now;
    run_clocked(&mut a, s3, until);
    assert!(a.lock.is_idle(), "{:?}", a.timeline());
    assert_ne!(etag(s3), before, "the park rewrote the record");
    let parked = record(s3);
    assert!(parked.parked && !parked.cooldown, "{parked:?}");
    assert_eq!(parked.owner, handle.owner);
    assert_eq!(parked.fence.map(|f| f.token), handle.token);
    assert!(
        a.events.contains(&Event::Released {
            outcome: ReleaseOutcome::Parked
        }),
        "{:?}",
        a.timeline()
    );
    (handle, a)
}

fn record(s3: &MockS3) -> sets3lock_proto::Record {
    let object = s3.object(B, K).expect("the lock object is there");
    match Holder::decode(&object.body) {
        Holder::Sets3lock(r) => r,
        other => panic!("not a sets3lock record: {other:?}"),
    }
}

fn etag(s3: &MockS3) -> Option<sets3lock_proto::ETag> {
    s3.object(B, K).map(|o| o.etag.clone())
}

fn ended(events: &[Event]) -> Option<HoldEnded> {
    events.iter().find_map(|e| match e {
        Event::NotAcquired {
            reason: NotAcquired::Ended { ended },
        } => Some(ended.clone()),
        _ => None,
    })
}

fn acquired_token(events: &[Event]) -> Option<Option<u64>> {
    events.iter().find_map(|e| match e {
        Event::Acquired { token, .. } => Some(*token),
        _ => None,
    })
}

#[test]
fn a_hold_is_handed_from_process_to_process_and_released_by_a_third() {
    let mut s3 = clocked();
    let (handle, _a) = acquired_and_detached(config(), &mut s3, 1);
    let first = record(&s3);
    assert_eq!(first.writer, None, "the acquirer writes no writer id");
    let text = handle.to_string();
    assert_eq!(text.parse::<Handle>(), Ok(handle.clone()), "{text}");

    // A second process continues it 5 s later and holds it for a minute (two leases).
    let t = Instant::ZERO + secs(5);
    let mut b = process_at(config(), 2, t);
    b.lock
        .adopt(b.now, EPOCH_MS, &handle, Resume::Hold)
        .expect("idle");
    let until = t + secs(60);
    run_clocked(&mut b, &mut s3, until);
    assert!(b.lock.is_held(b.now), "{:?}", b.timeline());
    assert_eq!(acquired_token(&b.events), Some(None));
    let renewed = b
        .events
        .iter()
        .filter(|e| matches!(e, Event::Renewed { .. }))
        .count();
    assert!(renewed >= 2, "renewed in the background: {:?}", b.events);
    let r = record(&s3);
    assert_eq!(r.owner, handle.owner, "the same hold");
    assert!(r.writer.is_some(), "written by the adopter");
    assert!(r.seq > first.seq, "numbered after the acquirer's writes");
    assert_eq!(
        r.acquired_unix_ms, first.acquired_unix_ms,
        "the hold's own acquisition time"
    );
    // Handing it on: the same handle, and the record parked.
    assert_eq!(b.lock.detach(b.now, url()), Ok(handle.clone()));
    let until = b.now;
    run_clocked(&mut b, &mut s3, until);
    assert!(b.lock.is_idle() && record(&s3).parked, "{:?}", b.timeline());

    // A third releases it.
    let t = b.now + secs(1);
    let mut c = process_at(config(), 3, t);
    c.lock
        .adopt(c.now, EPOCH_MS, &handle, Resume::Release)
        .expect("idle");
    let until = t;
    run_clocked(&mut c, &mut s3, until);
    assert!(
        c.events.contains(&Event::Released {
            outcome: ReleaseOutcome::Deleted
        }),
        "{:?}",
        c.events
    );
    assert!(s3.object(B, K).is_none());
    assert!(c.lock.is_idle());

    // And after that, the handle names a hold that is over.
    let mut d = process_at(config(), 4, t);
    d.lock
        .adopt(d.now, EPOCH_MS, &handle, Resume::Hold)
        .expect("idle");
    let until = t;
    run_clocked(&mut d, &mut s3, until);
    assert_eq!(ended(&d.events), Some(HoldEnded::Gone));
    assert!(s3.object(B, K).is_none(), "nothing written");
}

#[test]
fn an_adopted_fenced_hold_keeps_its_token_and_the_next_grant_gets_the_next() {
    let mut s3 = clocked();
    let fenced = sets3lock_proto::Config {
        fenced: true,
        ..config()
    };
    let (handle, _a) = acquired_and_detached(fenced.clone(), &mut s3, 1);
    assert_eq!(handle.token, Some(1));
    let mut b = process_at(fenced.clone(), 2, Instant::ZERO + secs(1));
    b.lock
        .adopt(b.now, EPOCH_MS, &handle, Resume::Hold)
        .expect("idle");
    let until = b.now + secs(40);
    run_clocked(&mut b, &mut s3, until);
    assert_eq!(acquired_token(&b.events), Some(Some(1)));
    assert_eq!(b.lock.token(), Some(1));
    assert_eq!(
        record(&s3).fence.map(|f| f.token),
        Some(1),
        "renewals keep the token"
    );
    b.lock.release(b.now).expect("held");
    let until = b.now;
    run_clocked(&mut b, &mut s3, until);
    assert!(b.events.contains(&Event::Released {
        outcome: ReleaseOutcome::Freed
    }));
    // The next grant, by anyone, is token 2.
    let mut c = process_at(fenced, 3, b.now);
    c.lock.acquire(c.now, EPOCH_MS, Wait::No).expect("idle");
    let until = c.now;
    run_clocked(&mut c, &mut s3, until);
    assert_eq!(acquired_token(&c.events), Some(Some(2)));
}

#[test]
fn a_handle_used_after_a_takeover_ends_and_changes_nothing() {
    let mut s3 = clocked();
    let (handle, _a) = acquired_and_detached(config(), &mut s3, 1);
    // A waiter takes the stale lock over after its lease (30 s) of seeing it unchanged.
    let mut w = Process::new(config(), 9);
    w.lock
        .acquire(w.now, EPOCH_MS, Wait::Forever)
        .expect("idle");
    let until = Instant::ZERO + secs(35);
    run_clocked(&mut w, &mut s3, until);
    assert!(w.lock.is_held(w.now), "{:?}", w.timeline());
    let before = etag(&s3);
    let theirs = record(&s3).owner;

    for then in [Resume::Hold, Resume::Release] {
        let mut b = process_at(config(), 2, w.now);
        b.lock.adopt(b.now, EPOCH_MS, &handle, then).expect("idle");
        let until = b.now;
        run_clocked(&mut b, &mut s3, until);
        match ended(&b.events) {
            Some(HoldEnded::TakenOver { holder }) => assert_eq!(holder.owner(), Some(theirs)),
            other => panic!("{then:?}: {other:?} in {:?}", b.events),
        }
        assert_eq!(etag(&s3), before, "{then:?} wrote nothing");
        assert!(
            b.sent
                .iter()
                .all(|r| matches!(r.intent, sets3lock_proto::Intent::Get { .. })),
            "{then:?}: only reads: {:?}",
            b.purposes()
        );
    }
    assert!(w.lock.is_held(w.now), "the new holder is untouched");
}

#[test]
fn two_processes_continuing_one_hold_leave_one_holder_and_the_other_learns_it_lost() {
    let mut s3 = clocked();
    let (handle, _a) = acquired_and_detached(config(), &mut s3, 1);
    let t = Instant::ZERO + secs(1);
    let mut b = process_at(config(), 2, t);
    let mut c = process_at(config(), 3, t);
    b.lock
        .adopt(t, EPOCH_MS, &handle, Resume::Hold)
        .expect("idle");
    c.lock
        .adopt(t, EPOCH_MS, &handle, Resume::Hold)
        .expect("idle");
    // Both read the same record before either writes.
    let (rb, rc) = (b.next_request(), c.next_request());
    b.serve(&mut s3, &rb);
    c.serve(&mut s3, &rc);
    let (wb, wc) = (b.next_request(), c.next_request());
    b.serve(&mut s3, &wb);
    c.serve(&mut s3, &wc); // refused: If-Match on the ETag both read
    let until = t;
    run_clocked(&mut b, &mut s3, until);
    let until = t;
    run_clocked(&mut c, &mut s3, until);
    // C read again, found B's write of the hold, and continued from it: one writer now.
    assert!(b.lock.is_held(t) && c.lock.is_held(t));
    assert_eq!(record(&s3).writer, writer_of(&c), "C's write is the object");
    assert_ne!(writer_of(&b), writer_of(&c), "two writers");
    // B's next renewal is refused; B reads, sees another writer of the hold, and lets go.
    let until = t + secs(15);
    run_clocked(&mut b, &mut s3, until);
    assert!(
        b.events.iter().any(|e| matches!(
            e,
            Event::Lost {
                reason: LostReason::Overwritten { .. }
            }
        )),
        "{:?}",
        b.events
    );
    assert!(!b.lock.is_held(b.now));
    let until = t + secs(15);
    run_clocked(&mut c, &mut s3, until);
    assert!(c.lock.is_held(c.now), "{:?}", c.timeline());
    assert!(!c.events.iter().any(|e| matches!(e, Event::Lost { .. })));
}

/// The writer id in the last record `p` wrote.
fn writer_of(p: &Process) -> Option<u64> {
    let body = p.sent.iter().rev().find_map(|r| r.intent.body().cloned());
    match Holder::decode(&body.expect("it wrote")) {
        Holder::Sets3lock(r) => r.writer,
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_hold_older_than_its_lease_by_the_stores_clock_is_not_renewed_but_can_be_released() {
    let mut s3 = clocked();
    let (handle, _a) = acquired_and_detached(config(), &mut s3, 1);
    let before = etag(&s3);
    // 29 s later (within the 30 s lease, even with a second of rounding): renewable.
    let mut early = process_at(config(), 2, Instant::ZERO + secs(28));
    early
        .lock
        .adopt(early.now, EPOCH_MS, &handle, Resume::Hold)
        .expect("idle");
    let until = early.now;
    run_clocked(&mut early, &mut s3, until);
    assert!(early.lock.is_held(early.now), "{:?}", early.events);
    let renewed_at = early.now;
    early.lock.detach(early.now, url()).expect("held");

    assert_ne!(etag(&s3), before, "the early renewal landed");
    let after_early = etag(&s3);

    // 32 s after that renewal: expired by the store's clock.
    let t = renewed_at + secs(32);
    let mut late = process_at(config(), 3, t);
    late.lock
        .adopt(t, EPOCH_MS, &handle, Resume::Hold)
        .expect("idle");
    let until = t;
    run_clocked(&mut late, &mut s3, until);
    match ended(&late.events) {
        Some(HoldEnded::Expired { age, lease }) => {
            assert!(age >= secs(31), "{age:?}");
            assert_eq!(lease, secs(30));
        }
        other => panic!("{other:?} in {:?}", late.events),
    }
    assert!(
        late.sent.len() == 1,
        "one read, no write: {:?}",
        late.purposes()
    );
    assert_eq!(
        etag(&s3),
        after_early,
        "the refused adoption changed nothing"
    );

    // A release still removes it, and says it was overdue.
    let mut rel = process_at(config(), 4, t);
    rel.lock
        .adopt(t, EPOCH_MS, &handle, Resume::Release)
        .expect("idle");
    let until = t;
    run_clocked(&mut rel, &mut s3, until);
    assert!(
        rel.events.contains(&Event::Released {
            outcome: ReleaseOutcome::Overdue
        }),
        "{:?}",
        rel.events
    );
    assert!(s3.object(B, K).is_none());
}

#[test]
fn a_lost_reply_to_the_adopting_renewal_is_recovered_by_reading_it_back() {
    let mut s3 = clocked();
    let (handle, _a) = acquired_and_detached(config(), &mut s3, 1);
    let mut b = process_at(config(), 2, Instant::ZERO + secs(1));
    b.lock
        .adopt(b.now, EPOCH_MS, &handle, Resume::Hold)
        .expect("idle");
    let read = b.next_request();
    b.serve(&mut s3, &read);
    let write = b.next_request();
    // Applied, but the reply is lost.
    let _ = s3.execute(B, K, &write.intent);
    b.answer(
        &write,
        sets3lock_proto::Response::Ambiguous(sets3lock_proto::Ambiguity::Timeout),
    );
    let until = b.now + secs(2);
    run_clocked(&mut b, &mut s3, until);
    assert!(b.lock.is_held(b.now), "{:?}", b.timeline());
    assert_eq!(
        b.sent
            .iter()
            .filter(|r| matches!(r.intent, sets3lock_proto::Intent::PutIfMatch { .. }))
            .count(),
        1,
        "found its write by reading, not by writing again: {:?}",
        b.purposes()
    );
}

#[test]
fn a_handle_of_another_lock_state_is_refused_without_a_write() {
    let mut s3 = clocked();
    // A fenced record released (free): the handle's hold is over.
    let fenced = sets3lock_proto::Config {
        fenced: true,
        ..config()
    };
    let (handle, _a) = acquired_and_detached(fenced.clone(), &mut s3, 1);
    let mut b = process_at(fenced.clone(), 2, Instant::ZERO + secs(1));
    b.lock
        .adopt(b.now, EPOCH_MS, &handle, Resume::Release)
        .expect("idle");
    let until = b.now;
    run_clocked(&mut b, &mut s3, until);
    let free = etag(&s3);
    let mut c = process_at(fenced, 3, b.now);
    c.lock
        .adopt(c.now, EPOCH_MS, &handle, Resume::Hold)
        .expect("idle");
    let until = c.now;
    run_clocked(&mut c, &mut s3, until);
    assert!(
        matches!(ended(&c.events), Some(HoldEnded::Released { .. })),
        "{:?}",
        c.events
    );
    assert_eq!(etag(&s3), free);
    // A handle with a token the record does not have names another grant.
    let wrong = Handle {
        token: Some(7),
        ..handle
    };
    let (h2, _) = acquired_and_detached(
        sets3lock_proto::Config {
            fenced: true,
            ..config()
        },
        &mut s3,
        5,
    );
    let wrong = Handle {
        owner: h2.owner,
        ..wrong
    };
    let mut d = process_at(config(), 6, c.now);
    d.lock
        .adopt(d.now, EPOCH_MS, &wrong, Resume::Hold)
        .expect("idle");
    let until = d.now;
    run_clocked(&mut d, &mut s3, until);
    assert!(
        matches!(ended(&d.events), Some(HoldEnded::TakenOver { .. })),
        "{:?}",
        d.events
    );
}

#[test]
fn malformed_handles_are_refused_with_what_is_wrong() {
    let good = "s3://bucket/lock#sets3lock-hold:owner=0000000000000000000000000000002a,lease_ms=60000,token=3";
    let h: Handle = good.parse().expect("a handle");
    assert_eq!(h.lease, Duration::from_secs(60));
    assert_eq!(h.token, Some(3));
    assert_eq!(h.to_string(), good);
    for (bad, says) in [
        ("s3://bucket/lock", "is not a handle"),
        ("s3://bucket/lock#sets3lock-hold:lease_ms=1", "owner"),
        ("s3://bucket/lock#sets3lock-hold:owner=2a,lease_ms=1", "owner"),
        ("s3://bucket/lock#sets3lock-hold:owner=0000000000000000000000000000002a", "lease_ms"),
        ("s3://bucket/lock#sets3lock-hold:owner=0000000000000000000000000000002a,lease_ms=-1", "lease_ms"),
        ("s3://bucket/lock#sets3lock-hold:owner=0000000000000000000000000000002a,lease_ms=1,token=0", "token"),
        ("s3://bucket/lock#sets3lock-hold:owner=0000000000000000000000000000002a,lease_ms=1,x=1", "unknown field"),
        ("s3://bucket/lock#sets3lock-hold:owner=0000000000000000000000000000002a,lease_ms=1,lease_ms=2", "repeats"),
        ("ftp://bucket/lock#sets3lock-hold:owner=0000000000000000000000000000002a,lease_ms=1", "URL"),
    ] {
        let e = bad.parse::<Handle>().expect_err(bad).to_string();
        assert!(e.contains(says), "{bad}: {e}");
    }
}

/// The gap that parked records close: a release from the handle while another process still
/// runs under it must not let anyone in before that process's lease is over (it learns of the
/// release only at its next renewal). The release rests the lock instead; the runner learns
/// at its next renewal; a waiter gets in only after the runner's last write plus a lease.
#[test]
fn releasing_a_handle_in_use_rests_the_lock_until_the_runners_lease_is_over() {
    let mut s3 = clocked();
    let (handle, _a) = acquired_and_detached(config(), &mut s3, 1);
    let lease = config().lease;

    // B runs under the handle, renewing in the background.
    let mut b = process_at(config(), 2, Instant::ZERO + secs(5));
    b.lock
        .adopt(b.now, EPOCH_MS, &handle, Resume::Hold)
        .expect("idle");
    run_clocked(&mut b, &mut s3, Instant::ZERO + secs(20));
    assert!(b.lock.is_held(b.now), "{:?}", b.timeline());
    assert!(
        !record(&s3).parked,
        "a running process's record is not parked"
    );
    let b_valid_until = b.lock.valid_until().expect("a lease");

    // C releases from the handle meanwhile: the record is not parked, so it rests.
    let mut c = process_at(config(), 3, Instant::ZERO + secs(20));
    c.lock
        .adopt(c.now, EPOCH_MS, &handle, Resume::Release)
        .expect("idle");
    run_clocked(&mut c, &mut s3, Instant::ZERO + secs(20));
    assert_eq!(
        c.events.last(),
        Some(&Event::Released {
            outcome: ReleaseOutcome::Resting
        }),
        "{:?}",
        c.timeline()
    );
    let rest = record(&s3);
    assert!(rest.cooldown && rest.owner == handle.owner, "{rest:?}");
    assert!(
        rest.lease >= config().stretch(lease) && rest.lease <= config().stretch(lease) + secs(1),
        "rests a stretched lease: {:?}",
        rest.lease
    );

    // A try-once run now is refused; a waiter gets in only after B's validity has ended.
    let mut d = process_at(config(), 4, Instant::ZERO + secs(21));
    d.lock.acquire(d.now, EPOCH_MS, Wait::No).expect("idle");
    run_clocked(&mut d, &mut s3, Instant::ZERO + secs(21));
    assert!(
        matches!(
            d.events.last(),
            Some(Event::NotAcquired {
                reason: NotAcquired::Busy { .. }
            })
        ),
        "{:?}",
        d.timeline()
    );
    let mut w = process_at(config(), 5, Instant::ZERO + secs(21));
    w.lock
        .acquire(w.now, EPOCH_MS, Wait::Timeout(secs(120)))
        .expect("idle");

    // B and the waiter run side by side (one timeline, the store's clock with them): B
    // learns at its next renewal; the waiter gets in only once the rest is over.
    let mut granted = None;
    for step in 1..=400u64 {
        let until = Instant::ZERO + secs(21) + Duration::from_millis(250 * step);
        run_clocked(&mut b, &mut s3, until);
        run_clocked(&mut w, &mut s3, until);
        if w.lock.is_held(w.now) {
            granted = Some(w.now);
            break;
        }
    }
    assert!(
        b.events.iter().any(|e| matches!(e, Event::Lost { .. })),
        "the runner learns at its next renewal: {:?}",
        b.timeline()
    );
    let granted = granted.unwrap_or_else(|| panic!("never granted: {:?}", w.timeline()));
    assert!(
        granted >= b_valid_until,
        "granted at {granted:?}, before the runner's validity ended at {b_valid_until:?}"
    );
}

/// A store that refuses every adopting write on the very version it then reports again (a
/// proxy rewriting ETags, a store that does not apply conditions) cannot keep an adopter
/// reading and writing for ever: the refusals are paced, and after the retry limit it fails.
#[test]
fn an_adopter_refused_on_every_write_gives_up_after_the_retry_limit() {
    use sets3lock_proto::{Intent, Lock, Record};
    let cfg = config();
    let limit = cfg.retry_limit;
    let mut lock = Lock::new(cfg, [9; 32]).expect("valid");
    let handle: Handle =
        "s3://locks/k#sets3lock-hold:owner=000000000000000000000000000000aa,lease_ms=30000"
            .parse()
            .expect("a handle");
    let body = Record {
        owner: handle.owner,
        seq: 3,
        lease: secs(30),
        host: "h".into(),
        pid: 1,
        acquired_unix_ms: EPOCH_MS,
        written_unix_ms: EPOCH_MS,
        fence: None,
        value: None,
        writer: None,
        cooldown: false,
        parked: true,
        terraform: None,
    }
    .encode();
    let etag = sets3lock_proto::ETag::parse("e1").expect("etag");
    let mut now = Instant::ZERO;
    lock.adopt(now, EPOCH_MS, &handle, Resume::Hold)
        .expect("idle");
    let (mut writes, mut events) = (0u32, Vec::new());
    let mut first_refusal_at = None;
    for _ in 0..1_000 {
        while let Some(req) = lock.poll_request() {
            let response = match req.intent {
                Intent::Get { .. } => sets3lock_proto::Response::Object {
                    etag: etag.clone(),
                    body: body.clone(),
                    age: None,
                },
                _ => {
                    writes += 1;
                    first_refusal_at.get_or_insert(now);
                    sets3lock_proto::Response::Mismatch
                }
            };
            lock.handle_response(req.id, response, now);
        }
        events.extend(std::iter::from_fn(|| lock.poll_event()));
        if lock.is_idle() {
            break;
        }
        now = lock.poll_timeout().expect("a timer while not idle");
        lock.handle_timeout(now);
    }
    assert!(lock.is_idle(), "still adopting after 1,000 steps");
    assert!(
        matches!(
            events.last(),
            Some(Event::Failed {
                error: sets3lock_proto::Error::GaveUp { .. }
            })
        ),
        "{events:?}"
    );
    assert_eq!(writes, limit + 1, "one write per attempt");
    let paced = now.saturating_duration_since(first_refusal_at.expect("refused"));
    assert!(paced >= Duration::from_millis(100), "paced: only {paced:?}");
}

/// An adopter given no value of its own keeps the one the hold proclaims.
#[test]
fn an_adopter_without_a_value_keeps_the_holds_value() {
    let mut s3 = clocked();
    let cfg = sets3lock_proto::Config {
        value: Some("leader at 10.0.0.7".into()),
        ..config()
    };
    let (handle, _a) = acquired_and_detached(cfg, &mut s3, 1);
    let mut b = process_at(config(), 2, Instant::ZERO + secs(1));
    b.lock
        .adopt(b.now, EPOCH_MS, &handle, Resume::Hold)
        .expect("idle");
    let until = b.now;
    run_clocked(&mut b, &mut s3, until);
    assert!(b.lock.is_held(b.now), "{:?}", b.timeline());
    let r = record(&s3);
    assert!(r.writer.is_some(), "written by the adopter: {r:?}");
    assert_eq!(r.value.as_deref(), Some("leader at 10.0.0.7"));
}

/// A hold keeps the format it was taken in: an adopter keeps the Terraform fields the hold's
/// record has (its ID, its Operation), whatever its own configuration says, and writes none
/// over a hold taken in sets3lock's own format.
#[test]
fn an_adopter_keeps_the_holds_format_and_terraforms_fields() {
    let format = |operation: &str| sets3lock_proto::TerraformFormat {
        who: "alice@ci-7".into(),
        operation: operation.into(),
        path: "b/state.tfstate".into(),
        version: "sets3lock 9".into(),
    };
    let taken = sets3lock_proto::Config {
        terraform: Some(format("sets3lock step-1.sh")),
        ..config()
    };
    let other = sets3lock_proto::Config {
        terraform: Some(format("sets3lock step-2.sh")),
        ..config()
    };
    for (first, second, kept) in [
        (taken.clone(), config(), true),
        (taken.clone(), other.clone(), true),
        (config(), other, false),
    ] {
        let mut s3 = clocked();
        let (handle, _a) = acquired_and_detached(first, &mut s3, 1);
        let before = record(&s3).terraform;
        assert_eq!(before.is_some(), kept);
        let mut b = process_at(second, 2, Instant::ZERO + secs(1));
        b.lock
            .adopt(b.now, EPOCH_MS, &handle, Resume::Hold)
            .expect("idle");
        let until = b.now;
        run_clocked(&mut b, &mut s3, until);
        assert!(b.lock.is_held(b.now), "{:?}", b.timeline());
        let r = record(&s3);
        assert!(r.writer.is_some(), "written by the adopter: {r:?}");
        assert_eq!(r.terraform, before, "the hold's fields, kept as they were");
    }
}

/// Lease 0: a process running under a hold never renews, so it would never learn that another
/// process continued or released the hold. Neither adopting nor releasing from the handle may
/// touch such a record while it is not parked (the gap: an adopter that later parked it made a
/// release from the handle delete it while the first process still ran, and a fourth got in).
/// A parked lease-0 hold is handed on and released as usual.
#[test]
fn a_lease_0_hold_in_use_is_neither_continued_nor_released_from_its_handle() {
    let forever = sets3lock_proto::Config {
        lease: Duration::ZERO,
        ..config()
    };
    let mut s3 = clocked();
    let (handle, _acquirer) = acquired_and_detached(forever.clone(), &mut s3, 1);
    assert_eq!(handle.lease, Duration::ZERO);

    // A runs under the handle: its record is not parked, and it never renews.
    let mut a = process_at(forever.clone(), 2, Instant::ZERO + secs(1));
    a.lock
        .adopt(a.now, EPOCH_MS, &handle, Resume::Hold)
        .expect("idle");
    run_clocked(&mut a, &mut s3, Instant::ZERO + secs(2));
    assert!(a.lock.is_held(a.now), "{:?}", a.timeline());
    let running = etag(&s3);
    assert!(!record(&s3).parked);

    // B (to hold, then hand on) and C (to release) are both refused, and write nothing.
    for (seed, then) in [(3, Resume::Hold), (4, Resume::Release)] {
        let mut p = process_at(forever.clone(), seed, Instant::ZERO + secs(3));
        p.lock.adopt(p.now, EPOCH_MS, &handle, then).expect("idle");
        run_clocked(&mut p, &mut s3, Instant::ZERO + secs(4));
        assert!(
            matches!(
                p.events.last(),
                Some(Event::NotAcquired {
                    reason: NotAcquired::InUse { holder: Holder::Sets3lock(r), etag: e },
                }) if r.owner == handle.owner && Some(e) == running.as_ref()
            ),
            "{then:?}: {:?}",
            p.timeline()
        );
        assert!(p.lock.is_idle(), "{:?}", p.timeline());
        assert_eq!(etag(&s3), running, "{then:?} wrote nothing");
    }

    // D, try-once, finds the lock held; A still holds it, then releases it.
    let mut d = process_at(forever.clone(), 5, Instant::ZERO + secs(5));
    d.lock.acquire(d.now, EPOCH_MS, Wait::No).expect("idle");
    run_clocked(&mut d, &mut s3, Instant::ZERO + secs(5));
    assert!(
        matches!(
            d.events.last(),
            Some(Event::NotAcquired {
                reason: NotAcquired::Busy { .. }
            })
        ),
        "{:?}",
        d.timeline()
    );
    assert!(a.lock.is_held(Instant::ZERO + secs(6)));
    a.lock.release(Instant::ZERO + secs(6)).expect("held");
    run_clocked(&mut a, &mut s3, Instant::ZERO + secs(6));
    assert_eq!(
        a.events.last(),
        Some(&Event::Released {
            outcome: ReleaseOutcome::Deleted
        }),
        "{:?}",
        a.timeline()
    );
}

/// A parked lease-0 hold goes from process to process like any other: adopted, parked again,
/// and released from its handle at once.
#[test]
fn a_parked_lease_0_hold_is_handed_on_and_released() {
    let forever = sets3lock_proto::Config {
        lease: Duration::ZERO,
        ..config()
    };
    let mut s3 = clocked();
    let (handle, _acquirer) = acquired_and_detached(forever.clone(), &mut s3, 1);
    let mut b = process_at(forever.clone(), 2, Instant::ZERO + secs(1));
    b.lock
        .adopt(b.now, EPOCH_MS, &handle, Resume::Hold)
        .expect("idle");
    run_clocked(&mut b, &mut s3, Instant::ZERO + secs(1));
    assert!(b.lock.is_held(b.now), "{:?}", b.timeline());
    assert_eq!(b.lock.detach(b.now, url()), Ok(handle.clone()));
    run_clocked(&mut b, &mut s3, Instant::ZERO + secs(1));
    assert!(record(&s3).parked, "B parks the record it wrote");

    let mut c = process_at(forever, 3, Instant::ZERO + secs(2));
    c.lock
        .adopt(c.now, EPOCH_MS, &handle, Resume::Release)
        .expect("idle");
    run_clocked(&mut c, &mut s3, Instant::ZERO + secs(2));
    assert_eq!(
        c.events.last(),
        Some(&Event::Released {
            outcome: ReleaseOutcome::Deleted
        }),
        "{:?}",
        c.timeline()
    );
    assert_eq!(etag(&s3), None, "deleted at once");
}

/// A holder of `cfg` that has not detached: its record is the hold's, not parked. Returns
/// it with the hold's handle.
fn running_holder(cfg: sets3lock_proto::Config, s3: &mut MockS3, seed: u8) -> (Process, Handle) {
    let mut a = Process::new(cfg, seed);
    a.lock.acquire(a.now, EPOCH_MS, Wait::No).expect("idle");
    let until = a.now;
    run_clocked(&mut a, s3, until);
    assert!(a.lock.is_held(a.now), "{:?}", a.timeline());
    let (owner, _) = a.lock.holding().expect("held");
    let handle = Handle {
        url: url(),
        owner,
        lease: a.lock.config().lease,
        token: None,
    };
    (a, handle)
}

/// A release from the handle reads the runner's unparked record; the runner's detach (its
/// `--keep`) parks it before the release's write lands. The release then finds the hold
/// parked, so nobody runs under it: it releases that version, rather than saying another
/// process holds it (which it did only until the park).
#[test]
fn a_release_from_a_handle_that_loses_to_a_late_park_releases_the_parked_record() {
    let mut s3 = clocked();
    let (mut a, handle) = running_holder(config(), &mut s3, 1);
    let mut c = process_at(config(), 2, Instant::ZERO + secs(1));
    c.lock
        .adopt(c.now, EPOCH_MS, &handle, Resume::Release)
        .expect("idle");
    let read = c.next_request();
    c.serve(&mut s3, &read);
    let rest = c.next_request(); // the resting write, If-Match on A's unparked record

    a.now = Instant::ZERO + secs(1);
    a.lock.detach(a.now, url()).expect("held");
    run_clocked(&mut a, &mut s3, Instant::ZERO + secs(1));
    assert!(record(&s3).parked, "A parked: {:?}", a.timeline());

    c.serve(&mut s3, &rest); // 412: the park landed first
    run_clocked(&mut c, &mut s3, Instant::ZERO + secs(5));
    assert_eq!(
        c.events.last(),
        Some(&Event::Released {
            outcome: ReleaseOutcome::Deleted
        }),
        "{:?}",
        c.timeline()
    );
    assert_eq!(etag(&s3), None, "the parked record released");
}

/// A holder whose hold was released from its handle meanwhile (a resting record of the same
/// hold, by another process) hears, at its own release, that the lock rests: not that
/// someone else took it over.
#[test]
fn a_release_that_finds_its_hold_released_from_the_handle_says_it_rests() {
    let mut s3 = clocked();
    let (mut a, handle) = running_holder(config(), &mut s3, 1);
    let mut c = process_at(config(), 2, Instant::ZERO + secs(1));
    c.lock
        .adopt(c.now, EPOCH_MS, &handle, Resume::Release)
        .expect("idle");
    run_clocked(&mut c, &mut s3, Instant::ZERO + secs(1));
    assert_eq!(
        c.events.last(),
        Some(&Event::Released {
            outcome: ReleaseOutcome::Resting
        }),
        "{:?}",
        c.timeline()
    );

    a.now = Instant::ZERO + secs(2);
    a.lock.release(a.now).expect("held");
    run_clocked(&mut a, &mut s3, Instant::ZERO + secs(2));
    assert_eq!(
        a.events.last(),
        Some(&Event::Released {
            outcome: ReleaseOutcome::Resting
        }),
        "{:?}",
        a.timeline()
    );
    assert!(record(&s3).cooldown, "the resting record is left alone");
}

/// A detach whose park got no answer, and whose read-back finds no object, did not leave a
/// parked hold: it says the lock was already gone (the driver's detach then reports the
/// hold lost), not that it parked.
#[test]
fn an_unanswered_park_that_reads_back_nothing_is_not_reported_parked() {
    let mut s3 = clocked();
    let (mut a, _handle) = running_holder(config(), &mut s3, 1);
    a.lock.detach(a.now, url()).expect("held");
    let park = a.next_request();
    a.answer(
        &park,
        sets3lock_proto::Response::Ambiguous(sets3lock_proto::Ambiguity::Timeout),
    );
    s3.force(B, K, None); // an operator deletes the object meanwhile
    run_clocked(&mut a, &mut s3, Instant::ZERO + secs(5));
    assert_eq!(
        a.events.last(),
        Some(&Event::Released {
            outcome: ReleaseOutcome::AlreadyGone
        }),
        "{:?}",
        a.timeline()
    );
}

/// A holder's own release whose reply was lost, which then finds the hold released from its
/// handle by another process (a resting record of the hold, by another writer), says the lock
/// rests: that record proves its own release did not land (after it, nobody of the hold
/// writes again), so it must not claim a deletion.
#[test]
fn a_release_with_a_lost_reply_that_finds_a_resting_record_of_its_hold_says_it_rests() {
    let mut s3 = clocked();
    let (mut a, handle) = running_holder(config(), &mut s3, 1);
    let mut c = process_at(config(), 2, Instant::ZERO + secs(1));
    c.lock
        .adopt(c.now, EPOCH_MS, &handle, Resume::Release)
        .expect("idle");
    run_clocked(&mut c, &mut s3, Instant::ZERO + secs(1));
    assert!(record(&s3).cooldown, "{:?}", c.timeline());

    a.now = Instant::ZERO + secs(2);
    a.lock.release(a.now).expect("held");
    let delete = a.next_request();
    let refused = s3.execute(B, K, &delete.intent); // 412: the record is the resting one
    assert_eq!(refused.status.as_u16(), 412);
    a.answer(
        &delete,
        sets3lock_proto::Response::Ambiguous(sets3lock_proto::Ambiguity::Timeout),
    );
    run_clocked(&mut a, &mut s3, Instant::ZERO + secs(3));
    assert_eq!(
        a.events.last(),
        Some(&Event::Released {
            outcome: ReleaseOutcome::Resting
        }),
        "{:?}",
        a.timeline()
    );
}

/// A record that claims to be the hold's, parked, but with another token (written by hand,
/// or by a broken client) is not released by a release from the handle: only the hold's own
/// parked record is, so no fenced token goes down.
#[test]
fn a_release_from_a_handle_leaves_a_parked_record_with_another_token_alone() {
    let fenced = sets3lock_proto::Config {
        fenced: true,
        ..config()
    };
    let mut s3 = clocked();
    let (_a, handle) = running_holder(fenced.clone(), &mut s3, 1);
    let handle = Handle {
        token: Some(1),
        ..handle
    };
    let mut c = process_at(fenced, 2, Instant::ZERO + secs(1));
    c.lock
        .adopt(c.now, EPOCH_MS, &handle, Resume::Release)
        .expect("idle");
    let read = c.next_request();
    c.serve(&mut s3, &read);
    let rest = c.next_request();
    // Meanwhile someone writes a parked record of the hold with token 7.
    let mut forged = record(&s3);
    forged.parked = true;
    forged.writer = Some(99);
    forged.seq += 1;
    forged.fence = Some(sets3lock_proto::Fence {
        state: sets3lock_proto::LockState::Held,
        token: 7,
    });
    s3.force(B, K, Some(forged.encode()));
    let before = etag(&s3);
    c.serve(&mut s3, &rest); // 412
    run_clocked(&mut c, &mut s3, Instant::ZERO + secs(5));
    assert_eq!(
        c.events.last(),
        Some(&Event::Released {
            outcome: ReleaseOutcome::HeldElsewhere
        }),
        "{:?}",
        c.timeline()
    );
    assert_eq!(etag(&s3), before, "left alone");
}

/// Renewing a hold from its handle with lease 0 while a process runs under it with a lease
/// would write a record nobody could ever park: refused as in use, nothing written.
#[test]
fn a_lease_0_adoption_over_a_running_hold_with_a_lease_is_refused() {
    let mut s3 = clocked();
    let (_a, handle) = running_holder(config(), &mut s3, 1);
    let before = etag(&s3);
    let forever = sets3lock_proto::Config {
        lease: Duration::ZERO,
        ..config()
    };
    let mut b = process_at(forever, 2, Instant::ZERO + secs(1));
    let handle = Handle {
        lease: Duration::ZERO,
        ..handle
    };
    b.lock
        .adopt(b.now, EPOCH_MS, &handle, Resume::Hold)
        .expect("idle");
    run_clocked(&mut b, &mut s3, Instant::ZERO + secs(2));
    assert!(
        matches!(
            b.events.last(),
            Some(Event::NotAcquired {
                reason: NotAcquired::InUse { .. }
            })
        ),
        "{:?}",
        b.timeline()
    );
    assert_eq!(etag(&s3), before, "nothing written");
}
