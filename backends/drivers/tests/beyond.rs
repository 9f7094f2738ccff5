//! Beyond one mutex, through both drivers, on the mock over HTTP and on the real servers (the
//! same scenarios, so the mock must agree with them): a watcher following a lock (free, held,
//! a renewal that is no change, released, stale, a missing bucket) at the cost it states; a
//! semaphore that lets at most N threads in, gives up on a full one, and times out; a hold's
//! health.

mod support;

use sets3lock::generic::Watcher;
use sets3lock::proto::{Sighting, WatchConfig, WatchEvent};
use sets3lock::{Error, Health, Wait};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{Driver, RawAccess, Server};

/// The tests of this file one at a time: they count threads and requests per second.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn fast_watch() -> WatchConfig {
    WatchConfig {
        interval: Duration::from_millis(100),
        ..WatchConfig::default()
    }
}

/// The next change the watcher reports, failing after 20 events that are not one.
fn next_change<D: Driver>(w: &mut Watcher<D>) -> Sighting {
    for _ in 0..20 {
        match D::next_event(w) {
            Some(WatchEvent::Changed(s)) => return s,
            Some(other) => eprintln!("{other:?}"),
            None => panic!("the watch stopped"),
        }
    }
    panic!("no change in 20 events");
}

fn short_lease(s: &Server, lease: Duration) -> sets3lock::Options {
    let mut options = s.options();
    options.lock.lease = lease;
    options.lock.poll =
        sets3lock::proto::Backoff::new(Duration::from_millis(20), Duration::from_millis(200));
    options
}

fn watcher_follows_a_lock<D: Driver>(s: &Server) {
    let key = support::fresh_key("watch");
    let url = s.url(&key);
    let mut w = Watcher::<D>::new(&url, s.options(), fast_watch()).expect("watcher");
    assert_eq!(next_change(&mut w), Sighting::Free, "{}", s.name);
    let held =
        D::acquire(&url, short_lease(s, Duration::from_millis(1500)), Wait::No).expect("acquire");
    let Sighting::Held { holder, .. } = next_change(&mut w) else {
        panic!("{}: not held", s.name)
    };
    assert_eq!(holder.owner(), Some(held.owner()));
    // Renewed every 0.5 s for 2 s: no renewal is a change, the next one is the release.
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(2));
        D::release(held)
    });
    assert_eq!(
        next_change(&mut w),
        Sighting::Free,
        "{}: no renewal reported",
        s.name
    );
    let released = releaser.join().expect("releaser").expect("release");
    assert_eq!(released, sets3lock::proto::ReleaseOutcome::Deleted);
    // A holder that stops renewing: stale a full lease after it was first seen.
    s.raw_put(&key, &support_record(1_000));
    let Sighting::Held { since, .. } = next_change(&mut w) else {
        panic!("{}: not held", s.name)
    };
    let Sighting::Stale {
        since: stale_since, ..
    } = next_change(&mut w)
    else {
        panic!("{}: not stale", s.name)
    };
    assert_eq!(since, stale_since);
    assert!(
        w.now().saturating_duration_since(since) >= Duration::from_secs(1),
        "stale only after a full lease"
    );
    s.raw_delete(&key);
}

/// A record of someone else's, with this lease.
fn support_record(lease_ms: u64) -> Vec<u8> {
    format!(
        r#"{{"sets3lock":1,"owner":"00000000000000000000000000000abc","seq":1,"lease_ms":{lease_ms},"host":"elsewhere","pid":9}}"#
    )
    .into_bytes()
}

fn watcher_costs_what_it_says<D: Driver>(s: &Server) {
    let key = support::fresh_key("watch-cost");
    let url = s.url(&key);
    s.raw_put(&key, &support_record(0));
    let mut w = Watcher::<D>::new(&url, s.options(), fast_watch()).expect("watcher");
    assert!(matches!(
        next_change(&mut w),
        Sighting::Held { stale_at: None, .. }
    ));
    // Nothing changes: `next` polls until a deadline the test sets by deleting from another
    // thread after 3 s; 30 polls expected (10 a second), within ±25%.
    let s2 = s.clone();
    let key2 = key.clone();
    let started = Instant::now();
    let deleter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(3));
        s2.raw_delete(&key2);
    });
    let before = w.requests();
    assert_eq!(next_change(&mut w), Sighting::Free);
    let took = started.elapsed().as_secs_f64();
    let per_second = (w.requests() - before) as f64 / took;
    assert!(
        (7.5..=12.5).contains(&per_second),
        "{}: {per_second:.1} polls a second with a 100 ms interval",
        s.name
    );
    deleter.join().expect("deleter");
}

fn watcher_on_a_missing_bucket_stops_with_the_error<D: Driver>(s: &Server) {
    let url = format!("s3://no-such-bucket-{:x}/k", support::rand_u64());
    let mut w = Watcher::<D>::new(&url, s.options(), fast_watch()).expect("watcher");
    let Some(WatchEvent::Failed { error }) = D::next_event(&mut w) else {
        panic!("{}: not failed", s.name)
    };
    assert!(
        error.to_string().contains("bucket does not exist"),
        "{error}"
    );
    assert_eq!(D::next_event(&mut w), None);
    assert_eq!(w.requests(), 1);
}

fn semaphore_lets_at_most_n_in<D: Driver>(s: &Server) {
    let url = s.url(&support::fresh_key("slots"));
    let inside = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..6)
        .map(|_| {
            let (url, options) = (url.clone(), short_lease(s, Duration::from_secs(3)));
            let (inside, most) = (inside.clone(), most.clone());
            std::thread::spawn(move || {
                let held = D::take_slot(&url, 3, options, Wait::Timeout(Duration::from_secs(60)))
                    .expect("a slot");
                let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                let slot = held.slot().expect("a slot number");
                assert!(slot < 3);
                assert!(held.url().to_string().ends_with(&format!("/slot-{slot}")));
                std::thread::sleep(Duration::from_millis(300));
                inside.fetch_sub(1, Ordering::SeqCst);
                D::release(held).expect("release")
            })
        })
        .collect();
    for t in threads {
        assert_eq!(
            t.join().expect("thread"),
            sets3lock::proto::ReleaseOutcome::Deleted
        );
    }
    let most = most.load(Ordering::SeqCst);
    assert!(most <= 3, "{most} inside a semaphore of 3");
    assert!(most >= 2, "the slots were not used side by side: {most}");
}

fn a_full_semaphore_is_busy_or_times_out<D: Driver>(s: &Server) {
    let url = s.url(&support::fresh_key("slots-full"));
    let options = || short_lease(s, Duration::from_secs(3));
    let a = D::take_slot(&url, 2, options(), Wait::No).expect("slot");
    let b = D::take_slot(&url, 2, options(), Wait::No).expect("slot");
    assert_ne!(a.slot(), b.slot());
    match D::take_slot(&url, 2, options(), Wait::No) {
        Err(Error::AllSlotsBusy { slots: 2 }) => {}
        Err(other) => panic!("{}: {other:?}", s.name),
        Ok(held) => panic!("{}: got slot {:?}", s.name, held.slot()),
    }
    let started = Instant::now();
    match D::take_slot(
        &url,
        2,
        options(),
        Wait::Timeout(Duration::from_millis(800)),
    ) {
        Err(Error::TimedOut { .. }) => {}
        Err(other) => panic!("{}: {other:?}", s.name),
        Ok(held) => panic!("{}: got slot {:?}", s.name, held.slot()),
    }
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(800) && took < Duration::from_secs(5),
        "{took:?}"
    );
    // A slot freed while waiting is taken.
    let waiter = {
        let (url, options) = (url.clone(), options());
        std::thread::spawn(move || D::take_slot(&url, 2, options, Wait::Forever))
    };
    std::thread::sleep(Duration::from_millis(300));
    let freed = b.slot();
    D::release(b).expect("release");
    let c = waiter.join().expect("waiter").expect("the freed slot");
    assert_eq!(c.slot(), freed);
    D::release(a).expect("release");
    D::release(c).expect("release");
}

fn health_is_renewing_while_renewals_land<D: Driver>(s: &Server) {
    let url = s.url(&support::fresh_key("health"));
    let held = D::acquire(&url, short_lease(s, Duration::from_secs(3)), Wait::No).expect("acquire");
    for _ in 0..4 {
        assert_eq!(held.health(), Health::Renewing, "{}", s.name);
        std::thread::sleep(Duration::from_millis(500));
    }
    D::release(held).expect("release");
}

/// How many threads this process has.
fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, Iterator::count)
}

fn many_keys_through_one_client<D: Driver>(s: &Server) {
    let prefix = support::fresh_key("many");
    let keys: Vec<String> = (0..40).map(|i| format!("{prefix}/{i}")).collect();
    let locks =
        sets3lock::generic::Locks::<D>::new(&s.url(""), short_lease(s, Duration::from_secs(3)))
            .expect("locks");
    let threads_before = threads();
    let held: Vec<_> = D::acquire_many(&locks, &keys, Wait::No)
        .into_iter()
        .map(|h| h.expect("acquired"))
        .collect();
    assert!(held.iter().all(|h| h.is_held()));
    for (h, k) in held.iter().zip(&keys) {
        assert_eq!(h.url().key(), k.as_str());
        assert!(s.raw_get(k).is_some(), "{}: {k} not written", s.name);
    }
    // A second client finds them held.
    let other = sets3lock::generic::Locks::<D>::new(&s.url(""), s.options()).expect("locks");
    let busy = D::acquire_many(&other, &keys[..1], Wait::No);
    assert!(matches!(busy[0], Err(Error::Busy { .. })), "{}", s.name);
    // Held through two renewals each (every second): all still held, renewed by the one hub.
    let before = locks.requests();
    std::thread::sleep(Duration::from_millis(2_300));
    assert!(
        held.iter().all(|h| h.is_held()),
        "{}: a lock was lost",
        s.name
    );
    let renewals = locks.requests() - before;
    assert!(
        (2 * 40..=3 * 40).contains(&renewals),
        "{}: {renewals} renewals of 40 locks in 2.3 s",
        s.name
    );
    // One driver for all: not a thread per lock (the hub's thread, and the second client's
    // hub and HTTP threads in the blocking mode).
    let grew = threads().saturating_sub(threads_before);
    assert!(grew <= 6, "{}: {grew} more threads for 40 locks", s.name);
    for h in held {
        assert_eq!(
            D::release(h).expect("release"),
            sets3lock::proto::ReleaseOutcome::Deleted
        );
    }
    assert!(keys.iter().all(|k| s.raw_get(k).is_none()));
}

fn value_of(s: &Sighting) -> Option<String> {
    match s.holder() {
        Some(sets3lock::proto::Holder::Sets3lock(r)) if s.is_held() => r.value.clone(),
        _ => None,
    }
}

fn election_campaign_resign_observe<D: Driver>(s: &Server) {
    let url = s.url(&support::fresh_key("election"));
    let options = || short_lease(s, Duration::from_secs(3));
    let a = sets3lock::generic::Election::<D>::new(&url, "candidate-a", options()).expect("a");
    let b = sets3lock::generic::Election::<D>::new(&url, "candidate-b", options()).expect("b");
    assert_eq!(D::leader(&a).expect("leader"), Sighting::Free);
    let mut watcher = b.observe(fast_watch()).expect("observe");
    assert_eq!(next_change(&mut watcher), Sighting::Free);
    let leading = D::campaign(&a).expect("a leads");
    assert_eq!(
        value_of(&D::leader(&b).expect("leader")).as_deref(),
        Some("candidate-a")
    );
    assert_eq!(
        value_of(&next_change(&mut watcher)).as_deref(),
        Some("candidate-a")
    );
    assert_eq!(leading.health(), Health::Renewing);
    // b campaigns meanwhile; a resigns after 1 s; b leads.
    let b_campaign = std::thread::spawn(move || D::campaign(&b).map(|h| (h, b)));
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(
        D::release(leading).expect("resign"),
        sets3lock::proto::ReleaseOutcome::Deleted
    );
    let (b_leading, b) = b_campaign.join().expect("b").expect("b leads");
    let mut seen = next_change(&mut watcher);
    if seen == Sighting::Free {
        seen = next_change(&mut watcher);
    }
    assert_eq!(
        value_of(&seen).as_deref(),
        Some("candidate-b"),
        "{}",
        s.name
    );
    assert_eq!(
        value_of(&D::leader(&b).expect("leader")).as_deref(),
        Some("candidate-b")
    );
    D::release(b_leading).expect("resign");
}

fn scenarios<D: Driver>(s: &Server) {
    election_campaign_resign_observe::<D>(s);
    many_keys_through_one_client::<D>(s);
    watcher_follows_a_lock::<D>(s);
    watcher_costs_what_it_says::<D>(s);
    watcher_on_a_missing_bucket_stops_with_the_error::<D>(s);
    semaphore_lets_at_most_n_in::<D>(s);
    a_full_semaphore_is_busy_or_times_out::<D>(s);
    health_is_renewing_while_renewals_land::<D>(s);
}

#[test]
fn mock_through_both_drivers() {
    let _serial = serial();
    let s = support::mock(404);
    scenarios::<sets3lock::generic::Tokio>(&s);
    scenarios::<sets3lock::blocking::Blocking>(&s);
}

#[test]
fn seaweedfs_through_both_drivers() {
    let _serial = serial();
    let Some(s) = support::real("seaweedfs") else {
        return;
    };
    scenarios::<sets3lock::generic::Tokio>(&s);
    scenarios::<sets3lock::blocking::Blocking>(&s);
}

#[test]
fn a_hold_whose_renewals_stop_getting_through_is_behind_before_it_ends() {
    let _serial = serial();
    let s = support::mock(404);
    let proxy = support::proxy::LossyProxy::start(&s.endpoint);
    let mut options = short_lease(&s, Duration::from_secs(3));
    options.s3.endpoint = Some(sets3lock::parse_endpoint(&proxy.endpoint).expect("endpoint"));
    options.request_timeout = Duration::from_millis(500);
    let url = s.url(&support::fresh_key("health-behind"));
    let locker = sets3lock::blocking::Locker::new(&url, options).expect("locker");
    let held = locker.acquire(Wait::No).expect("acquire");
    assert_eq!(held.health(), Health::Renewing);
    proxy.blackout();
    let started = Instant::now();
    let mut seen = Vec::new();
    while started.elapsed() < Duration::from_secs(5) {
        let h = held.health();
        if seen.last() != Some(&h) {
            seen.push(h);
        }
        if h == Health::Ended {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let kinds: Vec<&str> = seen
        .iter()
        .map(|h| match h {
            Health::Renewing => "renewing",
            Health::Behind { .. } => "behind",
            _ => "ended",
        })
        .fold(Vec::new(), |mut v, k| {
            if v.last() != Some(&k) {
                v.push(k);
            }
            v
        });
    assert_eq!(kinds, ["renewing", "behind", "ended"], "{seen:?}");
}

#[test]
fn a_next_dropped_mid_request_does_not_lose_the_watch() {
    let _serial = serial();
    let s = support::mock(404);
    let key = support::fresh_key("watch-cancel");
    let url = s.url(&key);
    let rt = support::runtime();
    let mut w = sets3lock::Watcher::new(&url, s.options(), fast_watch()).expect("watcher");
    let first = rt.block_on(w.next());
    assert_eq!(first, Some(WatchEvent::Changed(Sighting::Free)));
    // `next` dropped again and again, some while a poll is on its way (as a `select!` with a
    // busier branch does).
    let before = w.requests();
    for i in 0..200u64 {
        let patience = Duration::from_micros(200 + (i * 37) % 900);
        let _ = rt.block_on(async { tokio::time::timeout(patience, w.next()).await });
        if w.requests() > before + 3 {
            break;
        }
    }
    assert!(w.requests() > before, "no poll was started");
    s.raw_put(&key, &support_record(60_000));
    let seen = rt.block_on(async { tokio::time::timeout(Duration::from_secs(10), w.next()).await });
    assert!(
        matches!(seen, Ok(Some(WatchEvent::Changed(Sighting::Held { .. })))),
        "{seen:?}"
    );
    s.raw_delete(&key);
}

/// A `Locks` kept beyond the runtime its hub first ran on (one in a static, across
/// `#[tokio::test]` runtimes) starts a new hub on the next runtime: the old hub went with its
/// runtime, and no driver is left waiting for it.
#[test]
fn a_locks_outlives_the_runtime_its_hub_ran_on() {
    let _serial = serial();
    let s = support::mock(404);
    let prefix = support::fresh_key("outlived");
    let runtime = || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
    };
    let first = runtime();
    let locks = first.block_on(async {
        let locks = sets3lock::Locks::new(&s.url(""), s.options()).expect("locks");
        let held = locks.acquire(&format!("{prefix}/a"), Wait::No).await;
        held.expect("acquired").release().await.expect("released");
        locks
    });
    drop(first); // its hub with it
    runtime().block_on(async {
        let key = format!("{prefix}/b");
        let acquired = locks.acquire(&key, Wait::No);
        let held = tokio::time::timeout(Duration::from_secs(10), acquired).await;
        let held =
            held.expect("acquired through a new hub within 10 s, not queued for the old one");
        let held = held.expect("acquired");
        held.release().await.expect("released");
    });
}
