//! A store of one's own, plugged in with `Locker::with_store`: the mock in-process (no HTTP)
//! behind the public `Store` trait, in each store's dialect, through both drivers. The whole
//! driver stack (engine, handles, renewals, release) runs on it unchanged.

use sets3lock::proto::{Intent, LockUrl, ReleaseOutcome, Response, Scheme};
use sets3lock::BoxFuture;
use sets3lock::{Options, Store, StoreCheck, StoreId, Wait};
use sets3lock_mock::{Dialect, MockS3, Semantics};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The mock bucket as a `Store`: each intent executed at once and read by the dialect's table.
#[derive(Debug)]
struct InProcess {
    id: StoreId,
    mock: Mutex<MockS3>,
    sent: AtomicU64,
    /// How many discards to leave undone (a store failing its DELETEs), and the keys asked.
    ignore_discards: AtomicU64,
    discarded: Mutex<Vec<String>>,
    /// Credentials that may not delete: every DELETE refused with 403, as S3 without
    /// s3:DeleteObject or Azure with a SAS of `sp=rcw` answer.
    may_not_delete: AtomicBool,
    /// Reads of missing keys refused with 403, as S3 answers without s3:ListBucket.
    may_not_list: AtomicBool,
}

impl InProcess {
    fn new(dialect: Dialect) -> Arc<InProcess> {
        InProcess::named(dialect, &format!("in-process-{dialect:?}"))
    }

    /// One with an endpoint of its own (a store check of its own, too).
    fn named(dialect: Dialect, endpoint: &str) -> Arc<InProcess> {
        let mut mock = MockS3::with_semantics(Semantics {
            dialect,
            ..Semantics::default()
        });
        mock.create_bucket("bucket");
        Arc::new(InProcess {
            // One id per dialect: a passed store check is remembered per store.
            id: StoreId::new(Scheme::S3, endpoint, "bucket"),
            mock: Mutex::new(mock),
            sent: AtomicU64::new(0),
            ignore_discards: AtomicU64::new(0),
            discarded: Mutex::new(Vec::new()),
            may_not_delete: AtomicBool::new(false),
            may_not_list: AtomicBool::new(false),
        })
    }
}

impl Store for InProcess {
    fn send<'a>(
        &'a self,
        key: &'a str,
        intent: &'a Intent,
        _: Duration,
    ) -> BoxFuture<'a, Response> {
        Box::pin(async move {
            self.sent.fetch_add(1, Ordering::SeqCst);
            let mut mock = self.mock.lock().unwrap_or_else(|e| e.into_inner());
            let denied = match intent {
                Intent::DeleteIfMatch { .. } => self.may_not_delete.load(Ordering::SeqCst),
                Intent::Get { .. } => {
                    self.may_not_list.load(Ordering::SeqCst) && mock.object("bucket", key).is_none()
                }
                _ => false,
            };
            if denied {
                return Response::Refused(sets3lock::proto::Error::Refused {
                    op: intent.kind(),
                    status: 403,
                    code: Some("AccessDenied".into()),
                    message: None,
                    hint: "check the credentials' permissions",
                });
            }
            mock.execute("bucket", key, intent).classify(intent.kind())
        })
    }

    fn discard<'a>(&'a self, key: &'a str, _: Duration) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            self.discarded
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(key.to_owned());
            let ignored =
                self.ignore_discards
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
            if ignored.is_ok() || self.may_not_delete.load(Ordering::SeqCst) {
                return;
            }
            let mut mock = self.mock.lock().unwrap_or_else(|e| e.into_inner());
            mock.force("bucket", key, None);
        })
    }

    fn id(&self) -> &StoreId {
        &self.id
    }
}

fn options() -> Options {
    let mut o = Options::default();
    o.store_check = StoreCheck::Once;
    o.lock.lease = Duration::from_secs(3);
    o.lock.poll =
        sets3lock::proto::Backoff::new(Duration::from_millis(20), Duration::from_millis(100));
    o
}

/// The tests of this binary one at a time: `drivers_running` counts the whole process's.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn a_store_of_ones_own_holds_renews_and_hands_over_the_lock_in_every_dialect() {
    let _one_at_a_time = serial();
    for dialect in [Dialect::S3, Dialect::Azure, Dialect::Gcs] {
        let store = InProcess::new(dialect);
        let url = LockUrl::new("bucket", "locks/own").expect("url");
        let first = sets3lock::blocking::Locker::with_store(store.clone(), url.clone(), options())
            .expect("locker");
        let second = sets3lock::blocking::Locker::with_store(store.clone(), url.clone(), options())
            .expect("locker");
        let held = first.acquire(Wait::No).expect("acquire");
        // Held by the first: the second cannot have it now.
        assert!(
            matches!(second.acquire(Wait::No), Err(sets3lock::Error::Busy { .. })),
            "{dialect:?}"
        );
        // Past the lease: still held only if renewals landed in the background.
        std::thread::sleep(Duration::from_millis(3500));
        assert!(held.is_held(), "{dialect:?}");
        assert_eq!(
            held.release().expect("release"),
            ReleaseOutcome::Deleted,
            "{dialect:?}"
        );
        // Free again: the second takes it at once, through the async driver as well.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let asynchronous =
            sets3lock::Locker::with_store(store.clone(), url, options()).expect("locker");
        let held = rt
            .block_on(asynchronous.acquire(Wait::No))
            .expect("acquire (async)");
        assert_eq!(
            rt.block_on(held.release()).expect("release"),
            ReleaseOutcome::Deleted,
            "{dialect:?}"
        );
        rt.block_on(asynchronous.shutdown());
        // The store check ran through the store too (its probes, then the lock's requests).
        assert!(store.sent.load(Ordering::SeqCst) > 8, "{dialect:?}");
    }
}

/// Waits (at most 5 s) until `drivers_running` is `n`; what it was at the end.
fn drivers_settle_to(n: usize) -> usize {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while sets3lock::drivers_running() != n && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    sets3lock::drivers_running()
}

#[test]
fn a_loss_watch_sees_the_loss_from_another_thread_and_drivers_running_counts_each_driver() {
    let _one_at_a_time = serial();
    let store = InProcess::new(Dialect::S3);
    let url = LockUrl::new("bucket", "locks/watched").expect("url");
    let locker =
        sets3lock::blocking::Locker::with_store(store.clone(), url, options()).expect("locker");
    assert_eq!(
        drivers_settle_to(0),
        0,
        "no driver before the first acquisition"
    );
    let held = locker.acquire(Wait::No).expect("acquire");
    assert_eq!(sets3lock::drivers_running(), 1, "one driver while held");
    let watch = held.loss_watch();
    // Healthy: the watch times out, and says nothing is lost.
    assert_eq!(watch.wait_lost(Some(Duration::from_millis(50))), None);
    assert_eq!(watch.loss(), None);
    // Waiting in another thread, while this one deletes the object behind the holder's back.
    let waiter = {
        let watch = watch.clone();
        std::thread::spawn(move || watch.wait_lost(Some(Duration::from_secs(10))))
    };
    std::thread::sleep(Duration::from_millis(50));
    store
        .mock
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .force("bucket", "locks/watched", None);
    // The deletion is seen at the next renewal (a third of the 3 s lease).
    let seen = waiter.join().expect("waiter thread");
    assert_eq!(
        seen,
        Some(sets3lock::Loss::Lost(sets3lock::proto::LostReason::Deleted)),
        "the watch reports the deletion"
    );
    assert!(!held.is_held());
    drop(held);
    assert_eq!(drivers_settle_to(0), 0, "the driver ends with the hold");
    // A released hold: the watch reports the driver stopped, at once.
    let held = locker.acquire(Wait::No).expect("acquire again");
    let watch = held.loss_watch();
    assert_eq!(held.release().expect("release"), ReleaseOutcome::Deleted);
    assert_eq!(
        watch.wait_lost(Some(Duration::from_secs(1))),
        Some(sets3lock::Loss::DriverStopped)
    );
    assert_eq!(drivers_settle_to(0), 0, "no driver after the release");
}

/// The store check's probe object is removed even when the first DELETEs fail (each removal
/// is read back), and when the store never removes it, it is said, with its key.
#[test]
fn the_store_check_removes_its_probe_or_says_it_is_left() {
    let _serial = serial();
    for (failing, left) in [(2, false), (100, true)] {
        let store = InProcess::named(Dialect::S3, &format!("failing-deletes-{failing}"));
        store.ignore_discards.store(failing, Ordering::SeqCst);
        let said = Arc::new(Mutex::new(Vec::<String>::new()));
        let seen = said.clone();
        let mut o = options();
        o.observer = Some(sets3lock::Observer::new(move |ob| {
            if let sets3lock::Observation::ProbeLeftBehind { key } = ob {
                seen.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(key.to_owned());
            }
        }));
        let url =
            LockUrl::in_store(Scheme::S3, "bucket", &format!("probe-{failing}")).expect("url");
        let locker =
            sets3lock::blocking::Locker::with_store(store.clone(), url, o).expect("locker");
        let held = locker.acquire(Wait::No).expect("acquire");
        held.release().expect("release");
        let asked = store
            .discarded
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let probe = asked.first().cloned().expect("the probe was discarded");
        let present = store
            .mock
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .object("bucket", &probe)
            .is_some();
        let said = said.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if left {
            assert!(present, "{failing} failing DELETEs: the probe is gone?");
            assert_eq!(asked.len(), 3, "three removals, each read back: {asked:?}");
            assert_eq!(said, vec![probe], "the leftover is said, with its key");
        } else {
            assert!(
                !present,
                "{failing} failing DELETEs: the probe was left behind"
            );
            assert_eq!(asked.len(), 3, "{asked:?}");
            assert!(said.is_empty(), "{said:?}");
        }
    }
}

/// Credentials that may not delete: a presence-mode lock is refused before anything is
/// written (where reads of missing keys are refused too, only the kept probe is written), and
/// asked again once they may; fenced mode locks, with one kept probe that a later check
/// uses again.
#[test]
fn credentials_that_may_not_delete_are_named_and_leave_one_kept_probe_at_most() {
    let _serial = serial();
    for may_not_list in [false, true] {
        let store = InProcess::named(Dialect::S3, &format!("may-not-delete-{may_not_list}"));
        store.may_not_delete.store(true, Ordering::SeqCst);
        store.may_not_list.store(may_not_list, Ordering::SeqCst);
        let keys = || {
            let mock = store.mock.lock().unwrap_or_else(|e| e.into_inner());
            mock.keys("bucket").collect::<Vec<_>>()
        };
        let url = LockUrl::new("bucket", "locks/a").expect("url");
        let presence =
            sets3lock::blocking::Locker::with_store(store.clone(), url.clone(), options())
                .expect("locker");
        match presence.acquire(Wait::No) {
            Err(
                e @ sets3lock::Error::StoreCheck(sets3lock::StoreCheckError::MayNotDelete {
                    ..
                }),
            ) => {
                let text = e.to_string();
                assert!(
                    text.contains("may not delete")
                        && text.contains("s3:DeleteObject")
                        && text.contains("--fenced"),
                    "{text}"
                );
                assert_eq!(e.kind(), sets3lock::ErrorKind::AccessDenied);
            }
            other => panic!("may_not_list {may_not_list}: not refused: {other:?}"),
        }
        let kept: Vec<String> = if may_not_list {
            vec!["locks/a.sets3lock-store-check".into()]
        } else {
            vec![]
        };
        assert_eq!(keys(), kept, "may_not_list {may_not_list}");
        // Fenced: it locks, and the kept probe is the only one.
        let mut fenced = options();
        fenced.lock.fenced = true;
        let locker = sets3lock::blocking::Locker::with_store(store.clone(), url.clone(), fenced)
            .expect("locker");
        let held = locker.acquire(Wait::No).expect("a fenced lock");
        held.release().expect("release");
        assert_eq!(
            keys(),
            vec!["locks/a".to_owned(), "locks/a.sets3lock-store-check".into()],
            "may_not_list {may_not_list}"
        );
        // A verdict for fenced mode is not one for presence mode: asked again, refused again,
        // and, once deletes are allowed, passed.
        let other = LockUrl::new("bucket", "locks/b").expect("url");
        let presence =
            sets3lock::blocking::Locker::with_store(store.clone(), other.clone(), options())
                .expect("locker");
        assert!(
            matches!(
                presence.acquire(Wait::No),
                Err(sets3lock::Error::StoreCheck(
                    sets3lock::StoreCheckError::MayNotDelete { .. }
                ))
            ),
            "may_not_list {may_not_list}"
        );
        store.may_not_delete.store(false, Ordering::SeqCst);
        let held = presence.acquire(Wait::No).expect("deletes allowed now");
        assert_eq!(held.release().expect("release"), ReleaseOutcome::Deleted);
    }
}

/// A probe kept by an earlier check (credentials that may not delete) is used again: refused
/// as a create, read, replaced; the check passes, and nothing else is written beside it.
#[test]
fn a_kept_probe_left_by_an_earlier_check_is_used_again() {
    let _serial = serial();
    let store = InProcess::named(Dialect::Azure, "kept-probe");
    store.may_not_delete.store(true, Ordering::SeqCst);
    let before = bytes::Bytes::from_static(b"{\"sets3lock-store-check\":4}");
    store.mock.lock().unwrap_or_else(|e| e.into_inner()).force(
        "bucket",
        "locks/k.sets3lock-store-check",
        Some(before.clone()),
    );
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let mut fenced = options();
    fenced.lock.fenced = true;
    fenced.observer = Some(sets3lock::Observer::new(move |o| {
        if let sets3lock::Observation::StoreChecked(found) = o {
            log.lock().unwrap_or_else(|e| e.into_inner()).push(found);
        }
    }));
    let url = LockUrl::new("bucket", "locks/k").expect("url");
    let locker =
        sets3lock::blocking::Locker::with_store(store.clone(), url, fenced).expect("locker");
    locker
        .acquire(Wait::No)
        .expect("a fenced lock")
        .release()
        .expect("release");
    assert_eq!(
        *seen.lock().unwrap_or_else(|e| e.into_inner()),
        vec![Some(sets3lock::proto::ConditionalDelete::NotImplemented)],
        "a verdict, not an inconclusive check"
    );
    let mock = store.mock.lock().unwrap_or_else(|e| e.into_inner());
    let after = mock
        .object("bucket", "locks/k.sets3lock-store-check")
        .expect("the kept probe stays");
    assert_ne!(after.body, before, "the check replaced it");
    let beside: Vec<String> = mock.keys("bucket").collect();
    assert_eq!(
        beside,
        vec!["locks/k".to_owned(), "locks/k.sets3lock-store-check".into()]
    );
}

/// The threads each request of `options`' lockers was sent from, in order.
fn sent_from(options: &mut Options) -> Arc<Mutex<Vec<std::thread::ThreadId>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    options.observer = Some(sets3lock::Observer::new(move |o| {
        if let sets3lock::Observation::Sending(_) = o {
            let mut log = log.lock().unwrap_or_else(|e| e.into_inner());
            log.push(std::thread::current().id());
        }
    }));
    seen
}

#[test]
fn a_blocking_acquisition_is_driven_on_the_callers_thread_and_one_that_is_refused_leaves_no_driver()
{
    let _one_at_a_time = serial();
    assert_eq!(drivers_settle_to(0), 0, "drivers left by another test");
    let store = InProcess::new(Dialect::S3);
    let url = LockUrl::new("bucket", "locks/here").expect("url");
    let mut options = options();
    let seen = sent_from(&mut options);
    let take = |seen: &Mutex<Vec<_>>| std::mem::take(&mut *seen.lock().expect("log"));
    let holder =
        sets3lock::blocking::Locker::with_store(store.clone(), url.clone(), options.clone())
            .expect("locker");
    let waiter = sets3lock::blocking::Locker::with_store(store, url, options).expect("locker");
    let here = std::thread::current().id();
    let held = holder.acquire(Wait::No).expect("acquire");
    let acquiring = take(&seen);
    assert!(!acquiring.is_empty(), "no request seen");
    assert!(
        acquiring.iter().all(|t| *t == here),
        "the acquisition's requests were sent from another thread: {acquiring:?}"
    );
    // Refused, on this thread, with nothing left to do: no driver is handed on.
    assert!(matches!(
        waiter.acquire(Wait::No),
        Err(sets3lock::Error::Busy { .. })
    ));
    assert_eq!(
        sets3lock::drivers_running(),
        1,
        "a refused acquisition left a driver running"
    );
    assert!(take(&seen).iter().all(|t| *t == here));
    // Renewals come from the hold's own thread (the first at a third of the 3 s lease).
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let renewal = loop {
        let renewals = take(&seen);
        if let Some(t) = renewals.first() {
            break *t;
        }
        assert!(std::time::Instant::now() < deadline, "no renewal in 5 s");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_ne!(renewal, here, "a renewal was sent from the caller's thread");
    assert_eq!(held.release().expect("release"), ReleaseOutcome::Deleted);
    assert_eq!(drivers_settle_to(0), 0, "no driver after the release");
}

/// A store that panics when asked to create the lock object.
#[derive(Debug)]
struct PanicsOnCreate(Arc<InProcess>);

impl Store for PanicsOnCreate {
    fn send<'a>(
        &'a self,
        key: &'a str,
        intent: &'a Intent,
        limit: Duration,
    ) -> BoxFuture<'a, Response> {
        assert!(
            !matches!(intent, Intent::PutIfNoneMatch { .. }),
            "a store of one's own that panics"
        );
        self.0.send(key, intent, limit)
    }

    fn discard<'a>(&'a self, key: &'a str, limit: Duration) -> BoxFuture<'a, ()> {
        self.0.discard(key, limit)
    }

    fn id(&self) -> &StoreId {
        self.0.id()
    }
}

#[test]
fn a_store_that_panics_during_a_blocking_acquisition_panics_the_caller_and_leaves_no_driver() {
    let _one_at_a_time = serial();
    assert_eq!(drivers_settle_to(0), 0, "drivers left by another test");
    let store = Arc::new(PanicsOnCreate(InProcess::new(Dialect::S3)));
    let url = LockUrl::new("bucket", "locks/panics").expect("url");
    let mut options = options();
    options.store_check = StoreCheck::Off;
    let locker = sets3lock::blocking::Locker::with_store(store, url, options).expect("locker");
    // On a thread of its own, so that a hang (a drop waiting for a driver that is gone) fails
    // the test within 10 s instead of hanging it.
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            locker.acquire(Wait::No).map(drop)
        }));
        let _ = done.send(outcome.is_err());
    });
    let panicked = finished
        .recv_timeout(Duration::from_secs(10))
        .expect("the acquisition ended within 10 s");
    assert!(panicked, "the store's panic did not reach the caller");
    assert_eq!(drivers_settle_to(0), 0, "a driver was left running");
}
