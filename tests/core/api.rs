//! The `Lock` API's small promises and the value types' round trips: the settings a lock was
//! given, request numbers, a request answered before it was taken, a cancel during a read,
//! which events end an operation, and what each store verdict allows.

use core::time::Duration;
use sets3lock_proto::{
    ConditionalDelete, Config, ETag, Error, Event, Holder, Instant, Lock, LostReason, NotAcquired,
    OwnerId, Purpose, ReleaseOutcome, RequestId, Response, Setback, Wait,
};

fn lock() -> Lock {
    Lock::new(Config::default(), [9; 32]).expect("the default config is valid")
}

#[test]
fn a_lock_keeps_the_settings_it_was_given() {
    let cfg = Config {
        lease: Duration::from_secs(17),
        host: "h".into(),
        pid: 3,
        ..Config::default()
    };
    let lock = Lock::new(cfg.clone(), [1; 32]).expect("valid");
    assert_eq!(lock.config(), &cfg);
}

#[test]
fn requests_are_numbered_from_one_in_the_order_sent() {
    let mut lock = lock();
    let now = Instant::ZERO;
    lock.acquire(now, 0, Wait::Forever).expect("idle");
    let first = lock.poll_request().expect("the create");
    assert_eq!(first.id, RequestId::from_u64(1));
    lock.handle_response(first.id, Response::Exists, now);
    let second = lock.poll_request().expect("a read of the holder");
    assert_eq!(second.id, RequestId::from_u64(2));
}

#[test]
fn a_request_answered_before_it_was_taken_is_not_handed_out_afterwards() {
    let mut lock = lock();
    let now = Instant::ZERO;
    lock.acquire(now, 0, Wait::No).expect("idle");
    // The driver answers request #1 without having taken it (it is still in the outbox).
    let etag = ETag::parse("\"e1\"").expect("an ETag");
    lock.handle_response(RequestId::from_u64(1), Response::Written { etag }, now);
    assert!(matches!(lock.poll_event(), Some(Event::Acquired { .. })));
    assert!(
        lock.poll_request()
            .is_none_or(|r| r.id != RequestId::from_u64(1)),
        "an answered request was handed out to be sent"
    );
}

#[test]
fn a_cancel_while_reading_the_holder_leaves_the_lock_idle_at_once() {
    let mut lock = lock();
    let now = Instant::ZERO;
    lock.acquire(now, 0, Wait::Forever).expect("idle");
    let create = lock.poll_request().expect("the create");
    lock.handle_response(create.id, Response::Exists, now);
    let read = lock.poll_request().expect("a read of the holder");
    assert_eq!(read.purpose, Purpose::Observe);
    lock.release(now).expect("acquiring");
    assert_eq!(lock.poll_event(), Some(Event::Cancelled));
    assert!(
        lock.is_idle(),
        "a read's reply does not matter after a cancel"
    );
    // Its late reply is ignored.
    lock.handle_response(read.id, Response::Absent, now);
    assert!(lock.is_idle());
    assert_eq!(lock.poll_request(), None);
}

#[test]
fn owner_ids_and_instants_round_trip() {
    for bits in [0, 1, 0x0123_4567_89ab_cdef_0123_4567_89ab_cdef, u128::MAX] {
        assert_eq!(OwnerId::from_u128(bits).as_u128(), bits);
    }
    for d in [
        Duration::ZERO,
        Duration::from_nanos(1),
        Duration::from_secs(86_400),
    ] {
        let t = Instant::from_duration(d);
        assert_eq!(Duration::from_nanos(t.as_nanos()), d);
        assert_eq!(Instant::ZERO + d, t);
    }
    // Past u64 nanoseconds (584 years) it saturates rather than wrapping.
    assert_eq!(Instant::from_duration(Duration::MAX).as_nanos(), u64::MAX);
}

#[test]
fn events_that_end_an_operation_are_final_and_the_others_are_not() {
    let etag = ETag::parse("\"e\"").expect("an ETag");
    let finals = [
        Event::Acquired {
            owner: OwnerId::from_u128(1),
            etag: etag.clone(),
            valid_until: None,
            took_over: None,
            token: None,
        },
        Event::NotAcquired {
            reason: NotAcquired::TimedOut { holder: None },
        },
        Event::Expired,
        Event::Released {
            outcome: ReleaseOutcome::Deleted,
        },
        Event::Cancelled,
        Event::Lost {
            reason: LostReason::Deleted,
        },
        Event::Failed {
            error: Error::NoSuchBucket { message: None },
        },
    ];
    for e in finals {
        assert!(e.is_final(), "{e:?}");
    }
    let progress = [
        Event::Renewed {
            etag,
            valid_until: None,
        },
        Event::RenewalDelayed {
            setback: Setback::LostRace,
        },
        Event::Contended {
            holder: Holder::decode(b"not a record"),
            etag: ETag::parse("\"h\"").expect("an ETag"),
            stale_at: None,
        },
    ];
    for e in progress {
        assert!(!e.is_final(), "{e:?}");
    }
}

#[test]
fn only_a_store_that_honours_delete_if_match_is_safe_for_presence_mode() {
    let verdicts = [
        (ConditionalDelete::Honored, true, "honours DELETE If-Match"),
        (
            ConditionalDelete::IgnoresIfMatch,
            false,
            "ignores If-Match on DELETE (it deletes whatever is there)",
        ),
        (
            ConditionalDelete::NotImplemented,
            false,
            "refuses DELETE If-Match (501 NotImplemented, or no permission to delete)",
        ),
    ];
    for (verdict, safe, text) in verdicts {
        assert_eq!(verdict.is_safe_for_presence_mode(), safe, "{verdict:?}");
        assert_eq!(verdict.to_string(), text);
    }
}
