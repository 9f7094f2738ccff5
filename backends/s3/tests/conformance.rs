//! One scenario suite, run against the mock (over HTTP), SeaweedFS and MiniStack, through the
//! async and the blocking driver, with the same expected outcomes everywhere.
//!
//! Where servers differ (SeaweedFS answers 412 to `If-Match` on a missing key, the others
//! 404), the expected outcome is still the same: the core tells the cases apart.

mod support;

use sets3lock::{Holder, OwnerId, Record, ReleaseOutcome};
use sets3lock_s3::{Error, Loss, WaitFor};
use std::time::{Duration, Instant};
use support::{fresh_key, Driver, Server};

fn scenarios(server: &Server, driver: Driver) {
    eprintln!("== {} via the {driver:?} driver", server.name);
    acquire_and_release(server, driver);
    contend(server, driver);
    renew(server, driver);
    take_over_a_stale_lock(server, driver);
    lost_reply_is_recovered(server, driver);
    release_after_takeover(server, driver);
    release_of_an_absent_lock(server, driver);
    lock_deleted_while_held_is_reported(server, driver);
    wrong_bucket(server, driver);
    wrong_credentials(server, driver);
}

fn acquire_and_release(s: &Server, d: Driver) {
    let key = fresh_key("acquire");
    let held = d
        .acquire(&s.url(&key), s.options(), WaitFor::No)
        .expect("acquire");
    let (etag, body) = s.raw_get(&key).expect("the lock object exists while held");
    assert_eq!(held.etag(), Some(etag));
    let Holder::Sets3lock(record) = Holder::decode(&body) else {
        panic!("our record")
    };
    assert_eq!(record.pid, std::process::id());
    assert_eq!(held.release().expect("release"), ReleaseOutcome::Deleted);
    assert!(s.raw_get(&key).is_none(), "released means deleted");
}

fn contend(s: &Server, d: Driver) {
    let key = fresh_key("contend");
    let first = d
        .acquire(&s.url(&key), s.options(), WaitFor::No)
        .expect("acquire");
    match d.acquire(&s.url(&key), s.options(), WaitFor::No) {
        Err(Error::Busy { holder, etag }) => {
            let Holder::Sets3lock(r) = *holder else {
                panic!("{}: the holder's record did not decode", s.name)
            };
            assert_eq!(r.pid, std::process::id());
            assert_eq!(Some(etag), first.etag());
        }
        Err(e) => panic!("{}: expected busy, got {e}", s.name),
        Ok(_) => panic!("{}: two holders", s.name),
    }
    // A waiter gets it once the first releases.
    let url = s.url(&key);
    let options = s.options();
    let waiter = std::thread::spawn(move || {
        d.acquire(&url, options, WaitFor::Timeout(Duration::from_secs(20)))
    });
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(first.release().expect("release"), ReleaseOutcome::Deleted);
    let second = waiter
        .join()
        .expect("thread")
        .expect("the waiter acquires after the release");
    assert_eq!(second.release().expect("release"), ReleaseOutcome::Deleted);
}

fn short_lease(s: &Server, lease: Duration) -> sets3lock_s3::S3Options {
    let mut o = s.options();
    o.lock.lease = lease;
    o.lock.poll = sets3lock::Backoff::new(Duration::from_millis(50), Duration::from_millis(300));
    o
}

fn renew(s: &Server, d: Driver) {
    let key = fresh_key("renew");
    let held = d
        .acquire(
            &s.url(&key),
            short_lease(s, Duration::from_secs(3)),
            WaitFor::No,
        )
        .expect("acquire");
    let first = held.etag();
    // Three leases later: renewed every second, still held, the object rewritten.
    assert_eq!(
        held.wait_lost(Duration::from_secs(9)),
        None,
        "{}: lost while renewing",
        s.name
    );
    assert!(held.is_held());
    let (etag, body) = s.raw_get(&key).expect("exists");
    assert_ne!(Some(etag.clone()), first, "renewals write new versions");
    assert_eq!(held.etag(), Some(etag));
    let Holder::Sets3lock(r) = Holder::decode(&body) else {
        panic!()
    };
    assert!(
        r.seq >= 5,
        "{}: only {} writes in 9 s with a 3 s lease",
        s.name,
        r.seq
    );
    assert_eq!(held.release().expect("release"), ReleaseOutcome::Deleted);
}

fn stale_record(lease_ms: u64) -> Vec<u8> {
    Record {
        owner: OwnerId::from_u128(u128::from(support::rand_u64())),
        seq: 1,
        lease: Duration::from_millis(lease_ms),
        host: "crashed-host".into(),
        pid: 1,
        acquired_unix_ms: 0,
        written_unix_ms: 0,
        fence: None,
    }
    .encode()
    .to_vec()
}

fn take_over_a_stale_lock(s: &Server, d: Driver) {
    let key = fresh_key("stale");
    s.raw_put(&key, &stale_record(1500)); // a holder that crashed
    let started = Instant::now();
    let held = d
        .acquire(
            &s.url(&key),
            s.options(),
            WaitFor::Timeout(Duration::from_secs(20)),
        )
        .expect("takeover after the crashed holder's lease");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(1500),
        "{}: took over after {waited:?}, before the lease",
        s.name
    );
    assert!(
        waited < Duration::from_secs(8),
        "{}: took {waited:?}",
        s.name
    );
    let (_, body) = s.raw_get(&key).expect("exists");
    assert_eq!(
        Holder::decode(&body).owner(),
        Some(held.owner()),
        "{}: the object is ours now",
        s.name
    );
    assert_eq!(held.release().expect("release"), ReleaseOutcome::Deleted);
}

fn lost_reply_is_recovered(s: &Server, d: Driver) {
    let key = fresh_key("lost-reply");
    let proxy = support::proxy::LossyProxy::start(&s.endpoint);
    let mut options = s.options();
    options.endpoint = Some(sets3lock_s3::parse_endpoint(&proxy.endpoint).expect("endpoint"));
    options.request_timeout = Duration::from_secs(1);
    proxy.lose_replies_on_connection(1); // the first PUT lands, its reply is lost
    let started = Instant::now();
    let held = d
        .acquire(
            &s.url(&key),
            options,
            WaitFor::Timeout(Duration::from_secs(30)),
        )
        .expect("acquire");
    let waited = started.elapsed();
    // Recovered by reading back, not by waiting out a lease on our own lock.
    assert!(waited < Duration::from_secs(10), "{}: {waited:?}", s.name);
    let (etag, _) = s.raw_get(&key).expect("exists");
    assert_eq!(held.etag(), Some(etag));
    assert_eq!(held.release().expect("release"), ReleaseOutcome::Deleted);
}

fn release_after_takeover(s: &Server, d: Driver) {
    let key = fresh_key("taken-over");
    let held = d
        .acquire(&s.url(&key), s.options(), WaitFor::No)
        .expect("acquire");
    let theirs = s.raw_put(&key, &stale_record(60_000)); // someone else's object now
    assert_eq!(held.release().expect("release"), ReleaseOutcome::TakenOver);
    assert_eq!(
        s.raw_get(&key).map(|(e, _)| e),
        Some(theirs),
        "{}: release touched another's lock",
        s.name
    );
    s.raw_delete(&key);
}

fn release_of_an_absent_lock(s: &Server, d: Driver) {
    let key = fresh_key("absent");
    let held = d
        .acquire(&s.url(&key), s.options(), WaitFor::No)
        .expect("acquire");
    s.raw_delete(&key);
    assert_eq!(
        held.release().expect("release"),
        ReleaseOutcome::AlreadyGone,
        "{} (answers {} to If-Match on a missing key)",
        s.name,
        s.missing_if_match
    );
}

fn lock_deleted_while_held_is_reported(s: &Server, d: Driver) {
    let key = fresh_key("deleted");
    let held = d
        .acquire(
            &s.url(&key),
            short_lease(s, Duration::from_secs(3)),
            WaitFor::No,
        )
        .expect("acquire");
    s.raw_delete(&key);
    let loss = held.wait_lost(Duration::from_secs(5));
    assert_eq!(
        loss,
        Some(Loss::Lost(sets3lock::LostReason::Deleted)),
        "{}",
        s.name
    );
    assert!(!held.is_held());
}

fn wrong_bucket(s: &Server, d: Driver) {
    let url = format!("s3://no-such-bucket-{:08x}/k", support::rand_u64() as u32);
    match d.acquire(&url, s.options(), WaitFor::No) {
        Err(Error::S3(e @ sets3lock::Error::NoSuchBucket { .. })) => {
            assert!(e.to_string().contains("create the bucket"), "{e}")
        }
        Err(e) => panic!("{}: expected NoSuchBucket, got {e}", s.name),
        Ok(_) => panic!("{}: acquired in a missing bucket", s.name),
    }
}

fn wrong_credentials(s: &Server, d: Driver) {
    let mut options = s.options();
    options.credentials = Some(sets3lock_s3::Credentials::new(
        s.access_key.clone(),
        "wrong-secret",
    ));
    match d.acquire(&s.url(&fresh_key("creds")), options, WaitFor::No) {
        Err(Error::S3(sets3lock::Error::Refused {
            status: 403,
            code,
            hint,
            ..
        })) => {
            eprintln!("  {}: wrong credentials -> 403 {code:?}: {hint}", s.name);
        }
        Err(e) => panic!("{}: expected 403, got {e}", s.name),
        Ok(_) => panic!("{}: acquired with wrong credentials", s.name),
    }
}

#[test]
fn mock_through_the_async_driver() {
    scenarios(&support::mock(404), Driver::Async);
    scenarios(&support::mock(412), Driver::Async);
}

#[test]
fn mock_through_the_blocking_driver() {
    scenarios(&support::mock(404), Driver::Blocking);
    scenarios(&support::mock(412), Driver::Blocking);
}

#[test]
fn seaweedfs_through_the_async_driver() {
    if let Some(s) = support::real("seaweedfs") {
        scenarios(&s, Driver::Async);
    }
}

#[test]
fn seaweedfs_through_the_blocking_driver() {
    if let Some(s) = support::real("seaweedfs") {
        scenarios(&s, Driver::Blocking);
    }
}

#[test]
fn ministack_through_the_async_driver() {
    if let Some(s) = support::real("ministack") {
        scenarios(&s, Driver::Async);
    }
}

#[test]
fn ministack_through_the_blocking_driver() {
    if let Some(s) = support::real("ministack") {
        scenarios(&s, Driver::Blocking);
    }
}
