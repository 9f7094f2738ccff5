//! One scenario suite, run against the mock (over HTTP), SeaweedFS and MiniStack, through the
//! async and the blocking driver, with the same expected outcomes everywhere.
//!
//! Where servers differ (SeaweedFS answers 412 to `If-Match` on a missing key, the others
//! 404), the expected outcome is still the same: the core tells the cases apart.

use crate::support;

use crate::support::{fresh_key, Driver, RawAccess, Server};
use sets3lock::blocking::Blocking;
use sets3lock::generic::Tokio;
use sets3lock::proto::{Fence, Holder, LockState, OwnerId, Record, ReleaseOutcome};
use sets3lock::{Error, Loss, Wait};
use std::time::{Duration, Instant};

pub(crate) fn scenarios<D: Driver>(server: &Server) {
    eprintln!(
        "== {} via the {} driver",
        server.name,
        std::any::type_name::<D>()
    );
    acquire_and_release::<D>(server);
    with_lock::<D>(server);
    contend::<D>(server);
    renew::<D>(server);
    take_over_a_stale_lock::<D>(server);
    lost_reply_is_recovered::<D>(server);
    release_after_takeover::<D>(server);
    release_of_an_absent_lock::<D>(server);
    lock_deleted_while_held_is_reported::<D>(server);
    wrong_bucket::<D>(server);
    wrong_credentials::<D>(server);
    outages::<D>(server);
    silences::<D>(server);
}

/// Fenced mode, the same everywhere: the object persists, tokens grow with every grant, and
/// no DELETE is sent, so it also works where `DELETE If-Match` is ignored or refused.
pub(crate) fn fenced_scenarios<D: Driver>(server: &Server) {
    eprintln!(
        "== fenced mode on {} via the {} driver",
        server.name,
        std::any::type_name::<D>()
    );
    fenced_tokens_grow::<D>(server);
    fenced_takeover_of_a_stale_holder::<D>(server);
    fenced_lost_reply_is_recovered::<D>(server);
    fenced_release_after_takeover::<D>(server);
    fenced_tokens_never_go_back_for_a_locker_after_the_object_is_removed::<D>(server);
}

fn fenced(s: &Server) -> sets3lock::Options {
    let mut o = s.options();
    o.lock.fenced = true;
    o
}

/// The record at `key`, which a fenced lock never deletes.
fn fence_at(s: &Server, key: &str) -> Fence {
    let (_, body) = s.raw_get(key).expect("a fenced object is never deleted");
    Holder::decode(&body).fence().expect("a fenced record")
}

fn fenced_tokens_grow<D: Driver>(s: &Server) {
    let key = fresh_key("fenced");
    for n in 1..=3 {
        // The third time configured for presence mode: the key decides. (The store check
        // cannot know the key's mode in advance, and refuses a presence-mode lock on a store
        // without a safe DELETE: here it is skipped to show that the key decides.)
        let options = if n == 3 {
            let mut o = s.options();
            o.store_check = sets3lock::StoreCheck::Off;
            o
        } else {
            fenced(s)
        };
        let held = D::acquire(&s.url(&key), options, Wait::No).expect("acquire");
        assert_eq!(held.token(), Some(n), "{}", s.name);
        assert_eq!(
            fence_at(s, &key),
            Fence {
                state: LockState::Held,
                token: n
            }
        );
        assert_eq!(D::release(held).expect("release"), ReleaseOutcome::Freed);
        assert_eq!(
            fence_at(s, &key),
            Fence {
                state: LockState::Free,
                token: n
            },
            "{}: released means free, not deleted",
            s.name
        );
    }
    s.raw_delete(&key);
}

/// Someone removes the lock object behind the lock's back (an operator's `aws s3 rm`, a
/// lifecycle rule): a locker that saw token 2 grants 3 next, not 1, while a fresh locker,
/// which saw nothing, starts again at 1; and `Locks` remembers each key's tokens as well.
fn fenced_tokens_never_go_back_for_a_locker_after_the_object_is_removed<D: Driver>(s: &Server) {
    let key = fresh_key("fenced-removed");
    let locker = sets3lock::generic::Locker::<D>::new(&s.url(&key), fenced(s)).expect("locker");
    for n in 1..=2 {
        let held = D::acquire_with(&locker, Wait::No).expect("acquire");
        assert_eq!(held.token(), Some(n), "{}", s.name);
        D::release(held).expect("release");
    }
    s.raw_delete(&key);
    let held = D::acquire_with(&locker, Wait::No).expect("acquire over nothing");
    assert_eq!(
        held.token(),
        Some(3),
        "{}: the locker remembers token 2",
        s.name
    );
    D::release(held).expect("release");
    s.raw_delete(&key);
    let fresh = D::acquire(&s.url(&key), fenced(s), Wait::No).expect("a fresh locker");
    assert_eq!(
        fresh.token(),
        Some(1),
        "{}: a locker that saw nothing",
        s.name
    );
    D::release(fresh).expect("release");
    s.raw_delete(&key);
    // `Locks` (and so a semaphore's slots) remember each key's tokens the same way.
    let locks = sets3lock::generic::Locks::<D>::new(&s.url(&key), fenced(s)).expect("locks");
    let keys = [key.clone()];
    for n in 1..=2 {
        let held = D::acquire_many(&locks, &keys, Wait::No).pop().expect("one");
        let held = held.expect("acquire through Locks");
        assert_eq!(held.token(), Some(n), "{}: Locks", s.name);
        D::release(held).expect("release");
        s.raw_delete(&key);
    }
}

fn fenced_stale_record(token: u64, lease_ms: u64) -> Vec<u8> {
    let fence = Fence {
        state: LockState::Held,
        token,
    };
    record_of_someone_else(lease_ms, Some(fence))
}

fn fenced_takeover_of_a_stale_holder<D: Driver>(s: &Server) {
    let key = fresh_key("fenced-stale");
    s.raw_put(&key, &fenced_stale_record(41, 1500)); // a fenced holder that crashed
    let started = Instant::now();
    let held = D::acquire(
        &s.url(&key),
        fenced(s),
        Wait::Timeout(Duration::from_secs(20)),
    )
    .expect("takeover after the crashed holder's lease");
    assert!(
        started.elapsed() >= Duration::from_millis(1500),
        "{}: before the lease",
        s.name
    );
    assert_eq!(held.token(), Some(42), "{}", s.name);
    assert_eq!(D::release(held).expect("release"), ReleaseOutcome::Freed);
    assert_eq!(fence_at(s, &key).token, 42);
    s.raw_delete(&key);
}

fn fenced_lost_reply_is_recovered<D: Driver>(s: &Server) {
    let key = fresh_key("fenced-lost-reply");
    let (proxy, mut options) = s.proxied();
    options.lock.fenced = true;
    options.request_timeout = Duration::from_secs(1);
    options.store_check = sets3lock::StoreCheck::Off; // the proxy would eat its replies
    proxy.lose_replies_on_connection(1); // the grant lands, its reply is lost
    let held = D::acquire(
        &s.url(&key),
        options,
        Wait::Timeout(Duration::from_secs(30)),
    )
    .expect("acquire");
    assert_eq!(held.token(), Some(1), "{}", s.name);
    assert_eq!(held.etag(), s.raw_get(&key).expect("exists").0);
    assert_eq!(D::release(held).expect("release"), ReleaseOutcome::Freed);
    s.raw_delete(&key);
}

fn fenced_release_after_takeover<D: Driver>(s: &Server) {
    release_after_takeover_in::<D>(s, fenced(s), &fenced_stale_record(2, 60_000));
}

fn acquire_and_release<D: Driver>(s: &Server) {
    let key = fresh_key("acquire");
    let held = D::acquire(&s.url(&key), s.options(), Wait::No).expect("acquire");
    let (etag, body) = s.raw_get(&key).expect("the lock object exists while held");
    assert_eq!(held.etag(), etag);
    let Holder::Sets3lock(record) = Holder::decode(&body) else {
        panic!("our record")
    };
    assert_eq!(record.pid, std::process::id());
    assert_eq!(D::release(held).expect("release"), ReleaseOutcome::Deleted);
    assert!(s.raw_get(&key).is_none(), "released means deleted");
}

fn with_lock<D: Driver>(s: &Server) {
    let key = fresh_key("with-lock");
    let (etag, outcome) = D::with_lock(&s.url(&key), s.options(), Wait::No, |held| {
        assert!(held.is_held());
        held.etag()
    })
    .expect("with_lock");
    assert_eq!(outcome, ReleaseOutcome::Deleted);
    assert!(!etag.as_str().is_empty());
    assert!(
        s.raw_get(&key).is_none(),
        "released before with_lock returns"
    );
    let first = D::acquire(&s.url(&key), s.options(), Wait::No).expect("acquire");
    match D::with_lock(&s.url(&key), s.options(), Wait::No, |_| ()) {
        Err(Error::Busy { .. }) => {}
        Err(e) => panic!("{}: expected busy, got {e}", s.name),
        Ok(_) => panic!("{}: two holders", s.name),
    }
    assert_eq!(D::release(first).expect("release"), ReleaseOutcome::Deleted);
}

fn contend<D: Driver>(s: &Server) {
    let key = fresh_key("contend");
    let first = D::acquire(&s.url(&key), s.options(), Wait::No).expect("acquire");
    match D::acquire(&s.url(&key), s.options(), Wait::No) {
        Err(Error::Busy { holder, etag }) => {
            let Holder::Sets3lock(r) = *holder else {
                panic!("{}: the holder's record did not decode", s.name)
            };
            assert_eq!(r.pid, std::process::id());
            assert_eq!(etag, first.etag());
        }
        Err(e) => panic!("{}: expected busy, got {e}", s.name),
        Ok(_) => panic!("{}: two holders", s.name),
    }
    // A waiter gets it once the first releases.
    let url = s.url(&key);
    let options = s.options();
    let waiter = std::thread::spawn(move || {
        D::acquire(&url, options, Wait::Timeout(Duration::from_secs(20)))
    });
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(D::release(first).expect("release"), ReleaseOutcome::Deleted);
    let second = waiter
        .join()
        .expect("thread")
        .expect("the waiter acquires after the release");
    assert_eq!(
        D::release(second).expect("release"),
        ReleaseOutcome::Deleted
    );
}

/// The network fails under a held lock: a short outage (shorter than what is left of the
/// lease) is ridden out, the hold renewed once replies come back; a long one ends the hold as
/// expired, before its lease could have run out for anyone else.
fn outages<D: Driver>(s: &Server) {
    let fenced = s.scheme == sets3lock::proto::Scheme::Gcs; // fake-gcs-server: fenced only
    let lease = Duration::from_secs(4);
    let through = |proxy_options: sets3lock::Options| {
        let mut o = proxy_options;
        o.lock.lease = lease;
        o.lock.fenced = fenced;
        o.request_timeout = Duration::from_millis(500);
        o.store_check = sets3lock::StoreCheck::Off; // the outage would eat its replies
        o
    };
    // Short: 1.2 s without replies, from half a second in.
    let (proxy, options) = s.proxied();
    let held = D::acquire(
        &s.url(&fresh_key("outage-short")),
        through(options),
        Wait::No,
    )
    .expect("acquire");
    std::thread::sleep(Duration::from_millis(500));
    proxy.blackout();
    std::thread::sleep(Duration::from_millis(1200));
    proxy.restore();
    // Past the first lease: the hold lives on only if a renewal landed after the outage.
    assert_eq!(
        D::wait_lost(&held, Duration::from_millis(4500)),
        None,
        "{}",
        s.name
    );
    assert!(held.is_held(), "{}: held after a short outage", s.name);
    D::release(held).expect("release after the outage");
    // Long: the outage outlasts the lease.
    let (proxy, options) = s.proxied();
    let held = D::acquire(
        &s.url(&fresh_key("outage-long")),
        through(options),
        Wait::No,
    )
    .expect("acquire");
    proxy.blackout();
    let dark = Instant::now();
    let loss = D::wait_lost(&held, Duration::from_secs(8));
    assert_eq!(loss, Some(Loss::Expired), "{}", s.name);
    assert!(
        dark.elapsed() <= lease,
        "{}: ended {:?} after the outage began: later than its lease",
        s.name,
        dark.elapsed()
    );
}

/// The store goes silent under a hold whose request timeout (20 s, the default) is longer
/// than its lease: each of the hold's requests waits a third of the lease at most, so a short
/// silence whose stuck requests are never answered is ridden out, and a long one ends the hold
/// at its lease's end, not 20 s later.
fn silences<D: Driver>(s: &Server) {
    let fenced = s.scheme == sets3lock::proto::Scheme::Gcs; // fake-gcs-server: fenced only
    let through = |proxy_options: sets3lock::Options, lease: Duration| {
        let mut o = proxy_options;
        o.lock.lease = lease;
        o.lock.fenced = fenced;
        o.request_timeout = Duration::from_secs(20);
        o.store_check = sets3lock::StoreCheck::Off; // the silence would eat its replies
        o
    };
    // Short: 1.5 s of silence from just before the first renewal (at 2 s of a 6 s lease).
    let lease = Duration::from_secs(6);
    let (proxy, options) = s.proxied();
    let held = D::acquire(
        &s.url(&fresh_key("silence-short")),
        through(options, lease),
        Wait::No,
    )
    .expect("acquire");
    std::thread::sleep(Duration::from_millis(1900));
    proxy.blackout();
    std::thread::sleep(Duration::from_millis(1500));
    proxy.restore();
    assert_eq!(
        D::wait_lost(&held, Duration::from_secs(7)),
        None,
        "{}: a 1.5 s silence under a 6 s lease ended the hold",
        s.name
    );
    assert!(held.is_held(), "{}: held after a short silence", s.name);
    D::release(held).expect("release after the silence");
    // Long: the silence outlasts the lease; the end is reported at the lease's end.
    let lease = Duration::from_secs(4);
    let (proxy, options) = s.proxied();
    let held = D::acquire(
        &s.url(&fresh_key("silence-long")),
        through(options, lease),
        Wait::No,
    )
    .expect("acquire");
    proxy.blackout();
    let dark = Instant::now();
    let loss = D::wait_lost(&held, Duration::from_secs(15));
    assert_eq!(loss, Some(Loss::Expired), "{}", s.name);
    assert!(
        dark.elapsed() <= lease + Duration::from_millis(500),
        "{}: ended {:?} after the silence began, with a {lease:?} lease",
        s.name,
        dark.elapsed()
    );
}

/// `s`'s options with this lease, and polls between 50 and 300 ms.
pub(crate) fn short_lease(s: &Server, lease: Duration) -> sets3lock::Options {
    let mut o = s.options();
    o.lock.lease = lease;
    o.lock.poll =
        sets3lock::proto::Backoff::new(Duration::from_millis(50), Duration::from_millis(300));
    o
}

fn renew<D: Driver>(s: &Server) {
    let key = fresh_key("renew");
    let held = D::acquire(
        &s.url(&key),
        short_lease(s, Duration::from_secs(3)),
        Wait::No,
    )
    .expect("acquire");
    let first = held.etag();
    // Three leases later: renewed every second, still held, the object rewritten.
    assert_eq!(
        D::wait_lost(&held, Duration::from_secs(9)),
        None,
        "{}: lost while renewing",
        s.name
    );
    assert!(held.is_held());
    // A renewal may be in flight while we read (one a second): the store may already hold its
    // version while its reply is still on the way to the handle. So the object's version is the
    // handle's before the read, or the one the handle learns within a request's round trip.
    let before = held.etag();
    let (etag, body) = s.raw_get(&key).expect("exists");
    assert_ne!(etag, first, "renewals write new versions");
    let mut seen = vec![before];
    let settle = Instant::now();
    while !seen.contains(&etag) && settle.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(10));
        let now = held.etag();
        if seen.last() != Some(&now) {
            seen.push(now);
        }
    }
    assert!(
        seen.contains(&etag),
        "{}: the object's ETag {etag:?} is none the handle had while and 2 s after it was read ({seen:?})",
        s.name
    );
    let Holder::Sets3lock(r) = Holder::decode(&body) else {
        panic!()
    };
    assert!(
        r.seq >= 5,
        "{}: only {} writes in 9 s with a 3 s lease",
        s.name,
        r.seq
    );
    assert_eq!(D::release(held).expect("release"), ReleaseOutcome::Deleted);
}

fn stale_record(lease_ms: u64) -> Vec<u8> {
    record_of_someone_else(lease_ms, None)
}

/// A record another holder wrote, with this lease (and fence).
fn record_of_someone_else(lease_ms: u64, fence: Option<Fence>) -> Vec<u8> {
    Record {
        owner: OwnerId::from_u128(u128::from(support::rand_u64())),
        seq: 1,
        lease: Duration::from_millis(lease_ms),
        host: "crashed-host".into(),
        pid: 1,
        acquired_unix_ms: 0,
        written_unix_ms: 0,
        fence,
        value: None,
        writer: None,
        cooldown: false,
        parked: false,
        terraform: None,
    }
    .encode()
    .to_vec()
}

fn take_over_a_stale_lock<D: Driver>(s: &Server) {
    let key = fresh_key("stale");
    s.raw_put(&key, &stale_record(1500)); // a holder that crashed
    let started = Instant::now();
    let held = D::acquire(
        &s.url(&key),
        s.options(),
        Wait::Timeout(Duration::from_secs(20)),
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
    assert_eq!(D::release(held).expect("release"), ReleaseOutcome::Deleted);
}

fn lost_reply_is_recovered<D: Driver>(s: &Server) {
    let key = fresh_key("lost-reply");
    let (proxy, mut options) = s.proxied();
    options.request_timeout = Duration::from_secs(1);
    proxy.lose_replies_on_connection(1); // the first PUT lands, its reply is lost
    let started = Instant::now();
    let held = D::acquire(
        &s.url(&key),
        options,
        Wait::Timeout(Duration::from_secs(30)),
    )
    .expect("acquire");
    let waited = started.elapsed();
    // Recovered by reading back, not by waiting out a lease on our own lock.
    assert!(waited < Duration::from_secs(10), "{}: {waited:?}", s.name);
    let (etag, _) = s.raw_get(&key).expect("exists");
    assert_eq!(held.etag(), etag);
    assert_eq!(D::release(held).expect("release"), ReleaseOutcome::Deleted);
}

fn release_after_takeover<D: Driver>(s: &Server) {
    release_after_takeover_in::<D>(s, s.options(), &stale_record(60_000));
}

/// Someone else's object (`theirs`) replaced ours while we held the lock: the release reports
/// it and leaves it alone.
fn release_after_takeover_in<D: Driver>(s: &Server, options: sets3lock::Options, theirs: &[u8]) {
    let key = fresh_key("taken-over");
    let held = D::acquire(&s.url(&key), options, Wait::No).expect("acquire");
    let theirs = s.raw_put(&key, theirs);
    assert_eq!(
        D::release(held).expect("release"),
        ReleaseOutcome::TakenOver
    );
    assert_eq!(
        s.raw_get(&key).map(|(e, _)| e),
        Some(theirs),
        "{}: release touched another's lock",
        s.name
    );
    s.raw_delete(&key);
}

fn release_of_an_absent_lock<D: Driver>(s: &Server) {
    let key = fresh_key("absent");
    let held = D::acquire(&s.url(&key), s.options(), Wait::No).expect("acquire");
    s.raw_delete(&key);
    assert_eq!(
        D::release(held).expect("release"),
        ReleaseOutcome::AlreadyGone,
        "{} (answers {} to If-Match on a missing key)",
        s.name,
        s.missing_if_match
    );
}

fn lock_deleted_while_held_is_reported<D: Driver>(s: &Server) {
    let key = fresh_key("deleted");
    let held = D::acquire(
        &s.url(&key),
        short_lease(s, Duration::from_secs(3)),
        Wait::No,
    )
    .expect("acquire");
    s.raw_delete(&key);
    let loss = D::wait_lost(&held, Duration::from_secs(5));
    assert_eq!(
        loss,
        Some(Loss::Lost(sets3lock::proto::LostReason::Deleted)),
        "{}",
        s.name
    );
    assert!(!held.is_held());
}

fn wrong_bucket<D: Driver>(s: &Server) {
    let url = format!(
        "{}://no-such-bucket-{:08x}/k",
        s.scheme,
        support::rand_u64() as u32
    );
    let mut options = s.options();
    options.lock.fenced = s.scheme == sets3lock::proto::Scheme::Gcs; // fake-gcs-server: fenced only
    match D::acquire(&url, options, Wait::No) {
        Err(Error::Store(e @ sets3lock::proto::Error::NoSuchBucket { .. })) => {
            assert!(e.to_string().contains("create the bucket"), "{e}")
        }
        Err(Error::Store(e @ sets3lock::proto::Error::MissingContainer { .. })) => {
            let how = match s.scheme {
                sets3lock::proto::Scheme::Azure => "az storage container create",
                _ => "gcloud storage buckets create",
            };
            assert!(e.to_string().contains(how), "{e}")
        }
        Err(e) => panic!("{}: expected NoSuchBucket, got {e}", s.name),
        Ok(_) => panic!("{}: acquired in a missing bucket", s.name),
    }
}

fn wrong_credentials<D: Driver>(s: &Server) {
    let Some(options) = s.wrong_secret() else {
        return; // an emulator that checks no credentials
    };
    match D::acquire(&s.url(&fresh_key("creds")), options, Wait::No) {
        Err(Error::Store(sets3lock::proto::Error::Refused {
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
    scenarios::<Tokio>(&support::mock(404));
    scenarios::<Tokio>(&support::mock(412));
}

#[test]
fn mock_through_the_blocking_driver() {
    scenarios::<Blocking>(&support::mock(404));
    scenarios::<Blocking>(&support::mock(412));
}

#[test]
fn seaweedfs_through_the_async_driver() {
    if let Some(s) = support::real("seaweedfs") {
        scenarios::<Tokio>(&s);
    }
}

#[test]
fn seaweedfs_through_the_blocking_driver() {
    if let Some(s) = support::real("seaweedfs") {
        scenarios::<Blocking>(&s);
    }
}

#[test]
fn ministack_through_the_async_driver() {
    if let Some(s) = support::real("ministack") {
        scenarios::<Tokio>(&s);
    }
}

#[test]
fn ministack_through_the_blocking_driver() {
    if let Some(s) = support::real("ministack") {
        scenarios::<Blocking>(&s);
    }
}

/// moto (an AWS emulator, not a store: it checks no signature, and its conditional writes
/// are checked and applied without a lock; see scripts/s3-server.sh): the suite as on the
/// others, so that the store that also serves the credential chain's tests is one the lock
/// works on (one test per driver, so that the two run side by side).
#[test]
fn moto_through_the_async_driver_in_both_modes() {
    if let Some(s) = support::real("moto") {
        scenarios::<Tokio>(&s);
        fenced_scenarios::<Tokio>(&s);
    }
}

#[test]
fn moto_through_the_blocking_driver_in_both_modes() {
    if let Some(s) = support::real("moto") {
        scenarios::<Blocking>(&s);
        fenced_scenarios::<Blocking>(&s);
    }
}

#[test]
fn fenced_on_the_mock_through_both_drivers() {
    for server in [support::mock(404), support::mock(412)] {
        fenced_scenarios::<Tokio>(&server);
        fenced_scenarios::<Blocking>(&server);
    }
}

#[test]
fn fenced_on_seaweedfs_through_both_drivers() {
    if let Some(s) = support::real("seaweedfs") {
        fenced_scenarios::<Tokio>(&s);
        fenced_scenarios::<Blocking>(&s);
    }
}

#[test]
fn fenced_on_ministack_through_both_drivers() {
    if let Some(s) = support::real("ministack") {
        fenced_scenarios::<Tokio>(&s);
        fenced_scenarios::<Blocking>(&s);
    }
}

/// The whole suite on `s`: both modes, both drivers.
#[cfg(any(feature = "azure", feature = "gcs"))]
fn every_scenario(s: &Server) {
    scenarios::<Tokio>(s);
    scenarios::<Blocking>(s);
    fenced_scenarios::<Tokio>(s);
    fenced_scenarios::<Blocking>(s);
}

/// The mock in Azure's dialect, answering 404 for `If-Match` on a missing blob as Azure does:
/// the whole suite, both modes, both drivers.
#[cfg(feature = "azure")]
#[test]
fn the_mock_in_azures_dialect_through_both_drivers_in_both_modes() {
    every_scenario(&support::mock_azure(404));
}

/// The mock in Azure's dialect, answering 412 for `If-Match` on a missing blob as Azurite
/// does.
#[cfg(feature = "azure")]
#[test]
fn the_mock_in_azurites_dialect_through_both_drivers_in_both_modes() {
    every_scenario(&support::mock_azure(412));
}

/// The mock in GCS's dialect (conditional DELETE and 304, as real GCS): presence mode on GCS
/// is proven here (fake-gcs-server cannot take it).
#[cfg(feature = "gcs")]
#[test]
fn the_mock_in_gcss_dialect_through_both_drivers_in_both_modes() {
    every_scenario(&support::mock_gcs());
}

/// Azure refuses a request dated more than 15 minutes from its clock. A machine whose clock is
/// 40 minutes off still locks: the refusal's `Date` teaches the server's time, and the request
/// is signed again and sent once more. (Azurite checks no skew: the mock's Azure dialect does.)
#[cfg(feature = "azure")]
#[test]
fn an_azure_server_40_minutes_off_this_machines_clock_is_locked_on_all_the_same() {
    let semantics = sets3lock_mock::Semantics {
        dialect: sets3lock_mock::Dialect::Azure,
        ..sets3lock_mock::Semantics::default()
    };
    let m = support::mock_server::MockServer::start(semantics, "mock-bucket");
    m.set_clock_offset(40 * 60 * 1000);
    let mut azure = sets3lock::AzureSettings::default();
    azure.account = Some(support::mock_server::AZURE_ACCOUNT.into());
    azure.key = Some({
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(support::mock_server::AZURE_KEY)
    });
    azure.endpoint = Some(
        sets3lock::parse_endpoint(&format!(
            "{}/{}",
            m.endpoint,
            support::mock_server::AZURE_ACCOUNT
        ))
        .expect("endpoint"),
    );
    let mut options = sets3lock::Options::default();
    options.azure = azure;
    let url = format!("az://mock-bucket/{}", fresh_key("skew"));
    let held = Blocking::acquire(&url, options, Wait::No).expect("acquired after one resend");
    assert_eq!(
        Blocking::release(held).expect("release"),
        ReleaseOutcome::Deleted
    );
    let sent = m.requests.load(std::sync::atomic::Ordering::SeqCst);
    // The store check's question whether it may delete, its 5 probes, its clean-up and the
    // read that the probe is gone, the create and the release, and one resend after the first
    // refusal (every later request is signed at the server's time).
    assert_eq!(sent, 11, "requests");
}

/// Azurite: the whole suite, both modes, both drivers. (Azurite answers 412 where Azure
/// answers 404 for `If-Match` on a missing blob: the core tells the cases apart.)
#[cfg(feature = "azure")]
#[test]
fn azurite_through_both_drivers_in_both_modes() {
    if let Some(s) = support::azurite() {
        scenarios::<Tokio>(&s);
        scenarios::<Blocking>(&s);
        fenced_scenarios::<Tokio>(&s);
        fenced_scenarios::<Blocking>(&s);
    }
}

/// A SAS instead of the account key: one with read, write and delete holds a lock; a
/// read-only one is refused by the store check before anything is written, with a line that
/// names the permissions a presence-mode lock needs.
#[cfg(feature = "azure")]
#[test]
fn an_azure_sas_with_rwd_holds_a_lock_and_a_read_only_one_is_refused_naming_the_permission() {
    let Some(s) = support::azurite() else {
        return;
    };
    let with_sas = |permissions: &str| {
        let mut options = s.options();
        options.azure.key = None;
        options.azure.sas = Some(support::sas::service_sas(
            &s.access_key,
            &s.secret,
            &s.bucket,
            permissions,
        ));
        options
    };
    let key = fresh_key("sas");
    let held =
        Blocking::acquire(&s.url(&key), with_sas("rwd"), Wait::No).expect("acquire with a SAS");
    assert_eq!(
        Blocking::release(held).expect("release"),
        ReleaseOutcome::Deleted
    );
    match Blocking::acquire(&s.url(&fresh_key("sas-r")), with_sas("r"), Wait::No) {
        Err(e @ Error::StoreCheck(sets3lock::StoreCheckError::MayNotDelete { .. })) => {
            let text = e.to_string();
            assert!(
                text.contains("AuthorizationPermissionMismatch") && text.contains("sp=rwd"),
                "{text}"
            );
        }
        other => panic!("a read-only SAS was not refused: {other:?}"),
    }
    // Fenced, it may not write the kept probe either (a 403 is not held against the store: a
    // policy may cover only the lock's key): the lock's own write says why.
    let mut fenced = with_sas("r");
    fenced.lock.fenced = true;
    match Blocking::acquire(&s.url(&fresh_key("sas-r-fenced")), fenced, Wait::No) {
        Err(Error::Store(e @ sets3lock::proto::Error::Refused { status: 403, .. })) => {
            let text = e.to_string();
            assert!(
                text.contains("AuthorizationPermissionMismatch") && text.contains("sp=rwd"),
                "{text}"
            );
        }
        other => panic!("a read-only SAS was not refused: {other:?}"),
    }
}

/// fake-gcs-server 1.54 honours `ifGenerationMatch` on uploads but ignores it on DELETE: the
/// fenced suite passes through both drivers, and the store check refuses presence mode there
/// with an error that names fenced mode.
#[cfg(feature = "gcs")]
#[test]
fn fake_gcs_takes_fenced_locks_through_both_drivers_and_refuses_presence_ones() {
    let Some(s) = support::fake_gcs() else {
        return;
    };
    fenced_scenarios::<Tokio>(&s);
    fenced_scenarios::<Blocking>(&s);
    wrong_bucket::<Tokio>(&s);
    wrong_bucket::<Blocking>(&s);
    outages::<Tokio>(&s);
    outages::<Blocking>(&s);
    for refused in [
        Blocking::acquire(&s.url(&fresh_key("presence")), s.options(), Wait::No).map(|_| ()),
        Tokio::acquire(&s.url(&fresh_key("presence")), s.options(), Wait::No).map(|_| ()),
    ] {
        match refused {
            Err(e @ Error::StoreCheck(sets3lock::StoreCheckError::DeleteUnsafe { .. })) => {
                assert!(e.to_string().contains("--fenced"), "{e}")
            }
            other => panic!("{}: presence mode was not refused: {other:?}", s.name),
        }
    }
}

/// Where `DELETE If-Match` deletes whatever is there (MinIO CE) or answers 501 (LocalStack),
/// fenced mode passes everything, and presence mode is refused up front by the store check,
/// with an error that names fenced mode.
#[test]
fn stores_without_a_safe_conditional_delete_take_fenced_locks_and_refuse_presence_ones() {
    for server in [support::mock_like_minio(), support::mock_like_localstack()] {
        fenced_scenarios::<Tokio>(&server);
        fenced_scenarios::<Blocking>(&server);
        for refused in [
            Blocking::acquire(
                &server.url(&fresh_key("presence")),
                server.options(),
                Wait::No,
            )
            .map(|_| ()),
            Tokio::acquire(
                &server.url(&fresh_key("presence")),
                server.options(),
                Wait::No,
            )
            .map(|_| ()),
        ] {
            match refused {
                Err(e @ Error::StoreCheck(sets3lock::StoreCheckError::DeleteUnsafe { .. })) => {
                    assert!(e.to_string().contains("--fenced"), "{e}")
                }
                other => panic!("{}: presence mode was not refused: {other:?}", server.name),
            }
        }
    }
}

/// Without the store check, presence mode on a store that answers 501 to `DELETE If-Match`
/// acquires, and its release fails with an error that names fenced mode.
#[test]
fn presence_release_on_a_store_without_conditional_delete_names_fenced_mode() {
    let server = support::mock_like_localstack();
    let mut options = server.options();
    options.store_check = sets3lock::StoreCheck::Off;
    let held = Blocking::acquire(&server.url(&fresh_key("501")), options, Wait::No)
        .expect("acquire works: it is a conditional PUT");
    match Blocking::release(held) {
        Err(Error::Store(e @ sets3lock::proto::Error::ConditionalUnsupported { .. })) => {
            assert!(e.to_string().contains("--fenced"), "{e}")
        }
        other => panic!("expected 501 on release, got {other:?}"),
    }
}

/// `Client::send_versioned` (what `sets3lock doctor` uses) tells a versioned bucket, where
/// every renewal leaves a version behind, from one without versioning.
#[test]
fn a_versioned_bucket_is_told_apart_by_the_version_id_of_a_put() {
    let put = sets3lock::proto::Intent::PutIfNoneMatch {
        body: bytes::Bytes::from_static(b"{}"),
    };
    for (server, versioned) in [
        (support::mock_versioned(), true),
        (support::mock(404), false),
    ] {
        let client = sets3lock::Client::new(&server.bucket, &server.options()).expect("client");
        let (reply, version) = client.send_versioned(&fresh_key("versioned"), &put);
        assert!(
            matches!(reply, sets3lock::proto::Response::Written { .. }),
            "{}: {reply:?}",
            server.name
        );
        assert_eq!(version.is_some(), versioned, "{}: {version:?}", server.name);
    }
}

/// `Client::unlock` (the library's force-unlock, which `sets3lock unlock` and the Python
/// package's `unlock` call) removes only the version it is given: another version is left as
/// it was and named; the right one is deleted (presence) or freed with its token kept
/// (fenced); a second unlock finds it free. On the mock in S3's dialects (404 and 412 for
/// `If-Match` on a missing key, and MinIO's, whose `DELETE` ignores `If-Match`: only reading
/// first keeps another version's lock there), Azure's and GCS's.
#[test]
fn client_unlock_removes_only_the_version_it_is_given() {
    use sets3lock::{Client, Unlocked};
    #[allow(unused_mut)] // Azure's and GCS's are added with their features
    let mut servers = vec![
        support::mock(404),
        support::mock(412),
        support::mock_like_minio(),
    ];
    #[cfg(feature = "azure")]
    servers.push(support::mock_azure(404));
    #[cfg(feature = "gcs")]
    servers.push(support::mock_gcs());
    for server in servers {
        let client = Client::new(&server.url(""), &server.options()).expect("client");
        for fenced in [false, true] {
            let key = fresh_key("unlock");
            let mut options = server.options();
            options.lock.fenced = fenced;
            // (MinIO's presence locks are refused by the store check: the unlock is tested.)
            options.store_check = sets3lock::StoreCheck::Off;
            let held = Blocking::acquire(&server.url(&key), options, Wait::No).expect("acquire");
            let (etag, holder) = client.status(&key).expect("status").expect("held");
            let other = match server.name {
                n if n.contains("GCS") => sets3lock::ETag::parse("1").expect("etag"),
                _ => sets3lock::ETag::parse("\"0123456789abcdef0123456789abcdef\"").expect("etag"),
            };
            match client.unlock(&key, &other).expect("unlock another version") {
                Unlocked::Changed {
                    now: Some((now, h)),
                } => {
                    assert_eq!((now, *h), (etag.clone(), holder.clone()), "{}", server.name)
                }
                other => panic!("{} fenced={fenced}: {other:?}", server.name),
            }
            assert_eq!(
                client.status(&key).expect("status").map(|(e, _)| e),
                Some(etag.clone()),
                "{}: another version's unlock left it as it was",
                server.name
            );
            let want = match fenced {
                false => Unlocked::Deleted,
                true => Unlocked::Freed {
                    token: held.token().expect("a fenced hold's token"),
                },
            };
            assert_eq!(
                client.unlock(&key, &etag).expect("unlock"),
                want,
                "{}",
                server.name
            );
            assert_eq!(
                client.unlock(&key, &etag).expect("again"),
                Unlocked::AlreadyFree,
                "{}",
                server.name
            );
            drop(held);
        }
        if server.name.contains("GCS") {
            let bad = sets3lock::ETag::parse("\"abc\"").expect("etag");
            match client.unlock("k", &bad) {
                Err(e @ Error::BadETag { .. }) => {
                    assert_eq!(e.kind(), sets3lock::ErrorKind::InvalidInput)
                }
                other => panic!("a gs:// ETag that is not a generation: {other:?}"),
            }
        }
    }
}
