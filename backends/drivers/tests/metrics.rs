//! The instruments (feature `metrics`) read back through a recorder, against what happened:
//! on the mock over HTTP and on SeaweedFS, one contended acquisition, a try-once acquisition
//! refused, two renewals, a loss by deletion, a lost reply recovered by a read-back, and the
//! store requests by method and result, counted against what a proxy saw go by.

mod support;

use metrics::{
    Counter, CounterFn, Gauge, GaugeFn, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder,
    SharedString, Unit,
};
use sets3lock::metrics as m;
use sets3lock::{blocking::Locker, Error, Loss, StoreCheck, Wait};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use support::{fresh_key, RawAccess, Server};

/// One series: its name and labels, sorted.
type Series = (String, Vec<(String, String)>);

/// A recorder that keeps every value, for the tests to read back.
#[derive(Default)]
struct Kept {
    counters: Mutex<BTreeMap<Series, Arc<Count>>>,
    gauges: Mutex<BTreeMap<Series, Arc<Level>>>,
    histograms: Mutex<BTreeMap<Series, Arc<Samples>>>,
}

#[derive(Default)]
struct Count(AtomicU64);
impl CounterFn for Count {
    fn increment(&self, value: u64) {
        self.0.fetch_add(value, Ordering::SeqCst);
    }
    fn absolute(&self, value: u64) {
        self.0.fetch_max(value, Ordering::SeqCst);
    }
}

#[derive(Default)]
struct Level(Mutex<f64>);
impl GaugeFn for Level {
    fn increment(&self, value: f64) {
        *self.0.lock().expect("gauge") += value;
    }
    fn decrement(&self, value: f64) {
        *self.0.lock().expect("gauge") -= value;
    }
    fn set(&self, value: f64) {
        *self.0.lock().expect("gauge") = value;
    }
}

#[derive(Default)]
struct Samples(Mutex<Vec<f64>>);
impl HistogramFn for Samples {
    fn record(&self, value: f64) {
        self.0.lock().expect("histogram").push(value);
    }
}

fn series(key: &Key) -> Series {
    let mut labels: Vec<(String, String)> = key
        .labels()
        .map(|l| (l.key().to_owned(), l.value().to_owned()))
        .collect();
    labels.sort();
    (key.name().to_owned(), labels)
}

fn entry<T: Default>(map: &Mutex<BTreeMap<Series, Arc<T>>>, key: &Key) -> Arc<T> {
    map.lock()
        .expect("recorder")
        .entry(series(key))
        .or_default()
        .clone()
}

impl Recorder for Kept {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(entry(&self.counters, key))
    }
    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::from_arc(entry(&self.gauges, key))
    }
    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::from_arc(entry(&self.histograms, key))
    }
}

/// The process's recorder (the tests of this file share it; each reads its own lock's
/// series, named apart).
fn kept() -> &'static Kept {
    static KEPT: OnceLock<&'static Kept> = OnceLock::new();
    KEPT.get_or_init(|| {
        let kept: &'static Kept = Box::leak(Box::default());
        metrics::set_global_recorder(kept).expect("the only recorder");
        m::describe();
        kept
    })
}

/// Whether `labels` has every pair of `want`.
fn has(labels: &[(String, String)], want: &[(&str, &str)]) -> bool {
    want.iter()
        .all(|(k, v)| labels.iter().any(|(lk, lv)| lk == k && lv == v))
}

/// The sum of counter `name` over the series with the labels `want`.
fn counter(name: &str, want: &[(&str, &str)]) -> u64 {
    let map = kept().counters.lock().expect("recorder");
    map.iter()
        .filter(|((n, l), _)| n == name && has(l, want))
        .map(|(_, c)| c.0.load(Ordering::SeqCst))
        .sum()
}

fn gauge(name: &str, want: &[(&str, &str)]) -> Option<f64> {
    let map = kept().gauges.lock().expect("recorder");
    map.iter()
        .find(|((n, l), _)| n == name && has(l, want))
        .map(|(_, g)| *g.0.lock().expect("gauge"))
}

/// Every sample of histogram `name` over the series with the labels `want`.
fn samples(name: &str, want: &[(&str, &str)]) -> Vec<f64> {
    let map = kept().histograms.lock().expect("recorder");
    map.iter()
        .filter(|((n, l), _)| n == name && has(l, want))
        .flat_map(|(_, h)| h.0.lock().expect("histogram").clone())
        .collect()
}

/// Waits (bounded) until `done`, failing with what was seen.
fn wait_for(what: &str, within: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < within, "{what}: not within {within:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The servers, the recorder installed first.
fn servers() -> Vec<Server> {
    kept();
    let mut all = vec![support::mock(412)];
    all.extend(support::real("seaweedfs"));
    all
}

fn locker(url: &str, mut options: sets3lock::Options, name: &str) -> Locker {
    options.metrics_name = Some(name.to_owned());
    options.store_check = StoreCheck::Off;
    options.lock.lease = Duration::from_secs(3);
    Locker::new(url, options).expect("locker")
}

#[test]
fn the_instruments_say_what_happened_to_a_lock() {
    for s in servers() {
        let key = fresh_key("metrics");
        let url = s.url(&key);
        let suffix = support::rand_u64();
        let (a_name, b_name) = (format!("a-{suffix}"), format!("b-{suffix}"));
        let (proxy, options) = s.proxied();
        let b_lock = [("lock", b_name.as_str())];

        // A holds; B, try-once, is refused; then B waits while A holds, and gets in when A
        // releases: one contended acquisition.
        let a = locker(&url, s.options(), &a_name);
        let held_a = a.acquire(Wait::No).expect("A acquires");
        assert_eq!(gauge(m::LOCKS_HELD, &[("lock", &a_name)]), Some(1.0));
        let b = locker(&url, options, &b_name);
        assert!(matches!(b.acquire(Wait::No), Err(Error::Busy { .. })));
        let releaser = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(800));
            held_a.release().expect("A releases")
        });
        let held_b = b
            .acquire(Wait::Timeout(Duration::from_secs(20)))
            .expect("B acquires after A");
        releaser.join().expect("A's thread");
        assert_eq!(gauge(m::LOCKS_HELD, &[("lock", &a_name)]), Some(0.0));
        assert_eq!(samples(m::HOLD_DURATION, &[("lock", &a_name)]).len(), 1);
        assert_eq!(
            counter(m::RELEASES, &[("lock", &a_name), ("outcome", "deleted")]),
            1
        );
        let acquired = |outcome: &str, contended: &str| {
            samples(
                m::ACQUIRE_DURATION,
                &[
                    ("lock", b_name.as_str()),
                    ("mode", "presence"),
                    ("outcome", outcome),
                    ("contended", contended),
                ],
            )
        };
        assert_eq!(acquired("busy", "true").len(), 1, "{}: try-once", s.name);
        let waited = acquired("acquired", "true");
        assert_eq!(waited.len(), 1, "{}: one contended acquisition", s.name);
        assert!(waited[0] >= 0.5, "{}: it waited for A: {waited:?}", s.name);
        assert_eq!(gauge(m::LOCKS_HELD, &b_lock), Some(1.0));

        // Two renewals (lease 3 s: one a second), then the object is deleted behind B's back:
        // the next renewal finds it gone.
        wait_for("two renewals", Duration::from_secs(10), || {
            counter(m::RENEWALS, &[b_lock[0], ("result", "ok")]) >= 2
        });
        s.raw_delete(&key);
        assert_eq!(
            held_b.wait_lost(Some(Duration::from_secs(10))),
            Some(Loss::Lost(sets3lock::proto::LostReason::Deleted)),
            "{}",
            s.name
        );
        // Two renewals at least (a third may have landed before the deletion, on a slow
        // machine), and then the one that found the object gone.
        let renewed = counter(m::RENEWALS, &[b_lock[0], ("result", "ok")]);
        assert!(renewed >= 2, "{}: {renewed} renewals", s.name);
        assert_eq!(counter(m::LOSSES, &[b_lock[0], ("reason", "deleted")]), 1);
        assert_eq!(counter(m::LOSSES, &b_lock), 1, "one loss in all");
        let left = samples(m::RENEWAL_LEASE_LEFT, &b_lock);
        let sent = usize::try_from(renewed + 1).expect("small");
        assert_eq!(
            left.len(),
            sent,
            "{}: the renewals and the one that failed",
            s.name
        );
        assert!(
            left.iter().all(|&l| l > 1.0 && l <= 3.0),
            "{}: renewed a third of the way in: {left:?}",
            s.name
        );
        assert_eq!(samples(m::RENEWAL_DURATION, &b_lock).len(), sent);
        drop(held_b);
        wait_for("B's hold ended", Duration::from_secs(5), || {
            gauge(m::LOCKS_HELD, &b_lock) == Some(0.0)
        });
        assert_eq!(samples(m::HOLD_DURATION, &b_lock).len(), 1);
        assert_eq!(counter(m::LOST_REPLIES_RECOVERED, &b_lock), 0);

        // The bill: B's requests by method, as the proxy saw them go by; the results that
        // must be there.
        for method in ["GET", "PUT", "DELETE"] {
            let seen = proxy
                .requests()
                .iter()
                .filter(|r| r.start.split(' ').next() == Some(method))
                .count();
            let counted = counter(m::STORE_REQUESTS, &[b_lock[0], ("method", method)]);
            assert_eq!(counted, seen as u64, "{}: {method} requests", s.name);
        }
        let put = |result: &str| {
            counter(
                m::STORE_REQUESTS,
                &[b_lock[0], ("method", "PUT"), ("result", result)],
            )
        };
        // B's writes: its try-once create, its waiting create(s), the grant and two renewals
        // written; the failed renewal refused (412, or 404 where If-Match on a missing key
        // says so).
        assert_eq!(
            put("written"),
            1 + renewed,
            "{}: the grant and the renewals",
            s.name
        );
        assert!(
            put("exists") + put("mismatch") >= 2,
            "{}: refused creates",
            s.name
        );
        assert_eq!(
            samples(m::STORE_REQUEST_DURATION, &[b_lock[0]]).len() as u64,
            counter(m::STORE_REQUESTS, &b_lock),
            "{}: a latency for every request",
            s.name
        );
    }
}

#[test]
fn a_lost_reply_recovered_by_a_read_back_is_counted_once() {
    for s in servers() {
        let key = fresh_key("metrics-lost-reply");
        let name = format!("lost-reply-{}", support::rand_u64());
        let (proxy, mut options) = s.proxied();
        options.request_timeout = Duration::from_secs(1);
        proxy.lose_replies_on_connection(1); // the create lands, its reply is lost
        let held = locker(&s.url(&key), options, &name)
            .acquire(Wait::Timeout(Duration::from_secs(30)))
            .expect("acquire");
        let lock = [("lock", name.as_str())];
        assert_eq!(counter(m::LOST_REPLIES_RECOVERED, &lock), 1, "{}", s.name);
        assert_eq!(
            counter(
                m::STORE_REQUESTS,
                &[lock[0], ("method", "PUT"), ("result", "ambiguous")]
            ),
            1,
            "{}",
            s.name
        );
        let acquired = samples(
            m::ACQUIRE_DURATION,
            &[lock[0], ("outcome", "acquired"), ("contended", "false")],
        );
        assert_eq!(acquired.len(), 1, "{}: {acquired:?}", s.name);
        held.release().expect("release");
    }
}

#[test]
fn a_fenced_grant_sets_the_token_gauge() {
    kept();
    let s = support::mock(412);
    let key = fresh_key("metrics-fenced");
    let name = format!("fenced-{}", support::rand_u64());
    let mut options = s.options();
    options.lock.fenced = true;
    let locker = locker(&s.url(&key), options, &name);
    for token in 1..=2u32 {
        let held = locker.acquire(Wait::No).expect("acquire");
        assert_eq!(held.token(), Some(u64::from(token)));
        assert_eq!(
            gauge(m::FENCING_TOKEN, &[("lock", &name)]),
            Some(f64::from(token))
        );
        assert_eq!(
            gauge(m::LOCKS_HELD, &[("lock", &name), ("mode", "fenced")]),
            Some(1.0)
        );
        held.release().expect("release");
    }
    assert_eq!(
        counter(m::RELEASES, &[("lock", &name), ("outcome", "freed")]),
        2
    );
}

/// A semaphore's acquisition counts once, whichever slots it tried: try-once with every slot
/// held is one `busy` sample; a wait that gets the slot freed meanwhile is one contended
/// `acquired` sample.
#[test]
fn a_semaphore_acquisition_counts_once() {
    kept();
    let s = support::mock(412);
    let url = s.url(&fresh_key("metrics-semaphore"));
    let name = format!("semaphore-{}", support::rand_u64());
    let mut options = s.options();
    options.metrics_name = Some(name.clone());
    options.store_check = StoreCheck::Off;
    let others = sets3lock::blocking::Semaphore::new(&url, 2, s.options()).expect("semaphore");
    let first = others.acquire(Wait::No).expect("slot");
    let second = others.acquire(Wait::No).expect("slot");
    let ours = sets3lock::blocking::Semaphore::new(&url, 2, options).expect("semaphore");
    assert!(matches!(
        ours.acquire(Wait::No),
        Err(Error::AllSlotsBusy { .. })
    ));
    let lock = ("lock", name.as_str());
    let busy = samples(
        m::ACQUIRE_DURATION,
        &[lock, ("outcome", "busy"), ("contended", "true")],
    );
    assert_eq!(busy.len(), 1, "one try-once acquisition");
    let freer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        first.release().expect("release")
    });
    let held = ours
        .acquire(Wait::Timeout(Duration::from_secs(20)))
        .expect("the freed slot");
    freer.join().expect("freer");
    let all = samples(m::ACQUIRE_DURATION, &[lock]);
    assert_eq!(
        all.len(),
        2,
        "one sample per acquisition, not per slot: {all:?}"
    );
    let got = samples(
        m::ACQUIRE_DURATION,
        &[lock, ("outcome", "acquired"), ("contended", "true")],
    );
    assert_eq!(got.len(), 1);
    assert_eq!(gauge(m::LOCKS_HELD, &[lock]), Some(1.0), "the slot held");
    held.release().expect("release");
    second.release().expect("release");
}

/// A hold whose store stops answering (every reply lost) expires, and the loss is counted
/// as `unreachable`, not as a plain expiry.
#[test]
fn a_hold_cut_off_from_its_store_is_lost_as_unreachable() {
    for s in servers() {
        let key = fresh_key("metrics-unreachable");
        let name = format!("unreachable-{}", support::rand_u64());
        let (proxy, mut options) = s.proxied();
        options.request_timeout = Duration::from_secs(1);
        let held = locker(&s.url(&key), options, &name)
            .acquire(Wait::No)
            .expect("acquire");
        proxy.blackout();
        assert_eq!(
            held.wait_lost(Some(Duration::from_secs(10))),
            Some(Loss::Expired),
            "{}",
            s.name
        );
        // The handle sees the expiry by its own clock; the driver says so once the request
        // it was waiting on has timed out.
        let lock = ("lock", name.as_str());
        wait_for("the loss counted", Duration::from_secs(5), || {
            counter(m::LOSSES, &[lock]) >= 1
        });
        assert_eq!(
            counter(m::LOSSES, &[lock, ("reason", "unreachable")]),
            1,
            "{}",
            s.name
        );
        assert_eq!(counter(m::LOSSES, &[lock, ("reason", "expired")]), 0);
        assert_eq!(gauge(m::LOCKS_HELD, &[lock]), Some(0.0), "{}", s.name);
        proxy.restore();
        drop(held);
    }
}
