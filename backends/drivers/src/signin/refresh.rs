//! Temporary credentials kept fresh in the background: a cache that one thread per source
//! refills ahead of expiry, so that no request ever waits for a token service.
//!
//! - The thread starts on first use (a source that is never used fetches nothing).
//! - The first fetch is waited for, within a bound; later fetches happen while the cached value
//!   still has [`AHEAD`] (or half its life, if shorter) to live.
//! - A failed fetch keeps the cached value until it expires and is retried with growing pauses
//!   ([`RETRY_FIRST`] doubling up to [`RETRY_MOST`]); a request with nothing valid to sign is
//!   "not sent", which the lock's core treats as a safe retry.
//! - The thread ends when the last handle to the source is dropped.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

/// Fetch again this long before the value expires (or at half its life, if that is sooner).
pub(crate) const AHEAD: Duration = Duration::from_secs(300);
/// A value this close to its expiry is not used to sign: a request signed with it could
/// arrive after it.
pub(crate) const USABLE_MARGIN: Duration = Duration::from_secs(5);
/// How long opening a lock waits, at most, for a source's first value: longer than any
/// source's own limits (a credential process or an executable may take a minute or two), so
/// that what ends the wait is the fetch's own answer or error.
pub(crate) const FIRST_WAIT: Duration = Duration::from_secs(150);
/// The first pause after a failed fetch.
const RETRY_FIRST: Duration = Duration::from_secs(1);
/// The longest pause between failed fetches.
const RETRY_MOST: Duration = Duration::from_secs(30);

/// A value with the time it stops being valid (`None`: it does not expire). Its `Debug` shows
/// the expiry only: the value is a credential.
#[derive(Clone)]
pub(crate) struct Fetched<T> {
    /// The credentials or token.
    pub(crate) value: T,
    /// When they expire.
    pub(crate) expires: Option<SystemTime>,
    /// What a user should know about them (old credentials kept through a failure, as the
    /// SDKs keep instance metadata's): shown as the sign-in's problem until the next fetch.
    pub(crate) note: Option<String>,
}

impl<T> core::fmt::Debug for Fetched<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Fetched")
            .field("expires", &self.expires.map(shown))
            .finish_non_exhaustive()
    }
}

/// One kind of source: how to fetch a value (blocking; it runs on the source's own thread,
/// within time limits of its own).
pub(crate) trait Fetch: Send + 'static {
    /// What is fetched.
    type Value: Clone + Send + 'static;
    /// A value and its expiry, or why there is none (one line, never a secret).
    fn fetch(&mut self) -> Result<Fetched<Self::Value>, String>;
}

struct State<T> {
    current: Option<Fetched<T>>,
    /// Why the last fetch failed, if it did.
    error: Option<String>,
    /// Fetches finished, successful or not.
    fetches: u64,
    /// No handle is left: the thread ends.
    stop: bool,
}

struct Shared<T> {
    state: Mutex<State<T>>,
    changed: Condvar,
}

impl<T> Shared<T> {
    fn state(&self) -> MutexGuard<'_, State<T>> {
        // Poisoned only by a panic while a value is stored: the state is still whole.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What a source looks like now, for `doctor` and `--verbose`: never the value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Status {
    /// When the cached value expires, if there is one and it does.
    pub(crate) expires: Option<SystemTime>,
    /// Whether there is a value at all.
    pub(crate) has_value: bool,
    /// Why the last fetch failed, if it did; else what the last one noted.
    pub(crate) error: Option<String>,
}

/// A cache of `F`'s values, filled by a thread of its own (started on first use, and again in
/// a child made by `fork`, which has none of its parent's threads).
pub(crate) struct Refreshing<F: Fetch> {
    shared: Arc<Shared<F::Value>>,
    /// Makes the thread's fetcher: the first thread's, and a forked child's.
    make: Box<dyn Fn() -> F + Send + Sync>,
    /// The process whose thread keeps the cache fresh (`None` before first use).
    running_in: Mutex<Option<u32>>,
    /// The thread's name.
    name: &'static str,
}

impl<F: Fetch> Refreshing<F> {
    /// A cache whose thread fetches with what `make` makes; nothing is fetched until
    /// [`get`](Refreshing::get) or [`wait_first`](Refreshing::wait_first).
    pub(crate) fn new(
        make: impl Fn() -> F + Send + Sync + 'static,
        name: &'static str,
    ) -> Refreshing<F> {
        Refreshing {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    current: None,
                    error: None,
                    fetches: 0,
                    stop: false,
                }),
                changed: Condvar::new(),
            }),
            make: Box::new(make),
            running_in: Mutex::new(None),
            name,
        }
    }

    /// Starts the thread, unless this process has it already. (A child made by `fork` has a
    /// copy of the cache but not the thread: it starts one of its own, which fetches at once.
    /// A fork while the parent's thread was storing a value would leave the child's cache
    /// locked, as a fork without `exec` in a threaded program risks for any lock.)
    fn start(&self) {
        let pid = std::process::id();
        {
            let mut running_in = self.running_in.lock().unwrap_or_else(|e| e.into_inner());
            if *running_in == Some(pid) {
                return;
            }
            *running_in = Some(pid);
        }
        let fetcher = (self.make)();
        let shared = self.shared.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("sets3lock-{}", self.name))
            .spawn(move || keep_fresh(fetcher, &shared));
        if let Err(e) = spawned {
            let mut state = self.shared.state();
            state.error = Some(format!(
                "could not start a thread to fetch credentials: {e}"
            ));
            state.fetches += 1;
            self.shared.changed.notify_all();
        }
    }

    /// Starts the thread if it has not started, and waits (at most `limit`) for the first
    /// fetch to finish; its error if it failed.
    pub(crate) fn wait_first(&self, limit: Duration) -> Result<(), String> {
        self.start();
        let deadline = Instant::now() + limit;
        let mut state = self.shared.state();
        while state.fetches == 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!("no answer within {} s", limit.as_secs()));
            }
            state = match self.shared.changed.wait_timeout(state, left) {
                Ok((s, _)) => s,
                Err(e) => e.into_inner().0,
            };
        }
        match (&state.current, &state.error) {
            (Some(_), _) => Ok(()),
            (None, Some(e)) => Err(e.clone()),
            (None, None) => Err("nothing fetched".into()),
        }
    }

    /// The value to sign with now: the cached one while it is usable (waiting at most
    /// `first` for the very first fetch), or why there is none.
    pub(crate) fn get(&self, first: Duration) -> Result<F::Value, String> {
        let waited = self.wait_first(first);
        let state = self.shared.state();
        match &state.current {
            Some(f) if usable(f.expires, SystemTime::now()) => Ok(f.value.clone()),
            Some(f) => Err(format!(
                "the credentials expired{} and fetching new ones failed: {}",
                f.expires
                    .map(|e| format!(" at {}", shown(e)))
                    .unwrap_or_default(),
                state.error.as_deref().unwrap_or("no answer yet")
            )),
            None => Err(waited.err().unwrap_or_else(|| "nothing fetched".into())),
        }
    }

    /// What the cache holds now.
    pub(crate) fn status(&self) -> Status {
        let state = self.shared.state();
        Status {
            expires: state.current.as_ref().and_then(|f| f.expires),
            has_value: state.current.is_some(),
            error: state
                .error
                .clone()
                .or_else(|| state.current.as_ref().and_then(|f| f.note.clone())),
        }
    }
}

impl<F: Fetch> Drop for Refreshing<F> {
    fn drop(&mut self) {
        self.shared.state().stop = true;
        self.shared.changed.notify_all();
    }
}

/// Whether a value expiring at `expires` may still sign a request at `now`.
pub(crate) fn usable(expires: Option<SystemTime>, now: SystemTime) -> bool {
    expires.is_none_or(|e| now + USABLE_MARGIN < e)
}

/// When to fetch again after a value that expires at `expires` was fetched at `now`: `AHEAD`
/// before it expires, or at half its life if that is sooner; and in any case
/// [`REFRESH_SLACK`] before it stops being usable, so that a short-lived value's successor
/// is at hand when it is needed; `None` if it never expires.
pub(crate) fn refresh_at(now: SystemTime, expires: Option<SystemTime>) -> Option<SystemTime> {
    let expires = expires?;
    let life = expires.duration_since(now).unwrap_or_default();
    let ahead = life.saturating_sub(AHEAD).max(life / 2);
    Some(now + ahead.min(life.saturating_sub(USABLE_MARGIN + REFRESH_SLACK)))
}

/// How long before a value stops being usable its successor is asked for, at the latest: the
/// time a token service takes to answer, with room to spare.
const REFRESH_SLACK: Duration = Duration::from_secs(1);

/// The pause after `failures` failed fetches in a row.
pub(crate) fn retry_after(failures: u32) -> Duration {
    let doubled = RETRY_FIRST.saturating_mul(1u32 << failures.saturating_sub(1).min(8));
    doubled.min(RETRY_MOST)
}

/// A time as a user reads it (UTC, to the second).
pub(crate) fn shown(t: SystemTime) -> String {
    jiff::Timestamp::try_from(t)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|_| "?".into())
}

/// Says what a fetch noted: a warning for the `tracing` subscriber, with the `tracing`
/// feature (the sign-in's problem shows it in any case).
fn noted(note: &str) {
    #[cfg(feature = "tracing")]
    tracing::warn!(target: "sets3lock", note, "credentials");
    #[cfg(not(feature = "tracing"))]
    let _ = note;
}

/// The thread: fetch, store, sleep until the next fetch is due (or the source is dropped).
fn keep_fresh<F: Fetch>(mut fetcher: F, shared: &Shared<F::Value>) {
    let mut failures = 0u32;
    loop {
        // A fetcher that panics (a bug) is a failed fetch, not a thread gone quiet.
        let fetched = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fetcher.fetch()))
            .unwrap_or_else(|_| Err("fetching credentials failed (a bug: it panicked)".into()));
        let now = SystemTime::now();
        // A value that is already unusable (expired, or about to) is a failed fetch: kept
        // out of the cache, and asked for again only after a pause.
        let fetched = fetched.and_then(|f| match usable(f.expires, now) {
            true => Ok(f),
            false => Err(format!(
                "the credentials fetched expire{} already",
                f.expires
                    .map(|e| format!(" at {}", shown(e)))
                    .unwrap_or_default()
            )),
        });
        let next = {
            let mut state = shared.state();
            if state.stop {
                return;
            }
            state.fetches += 1;
            let next = match fetched {
                Ok(f) => {
                    failures = 0;
                    if let Some(note) = &f.note {
                        noted(note);
                    }
                    // Never sooner than a failure's first pause: a source whose values live
                    // only seconds is not asked in a loop.
                    let next = refresh_at(now, f.expires).map(|at| at.max(now + RETRY_FIRST));
                    state.current = Some(f);
                    state.error = None;
                    next
                }
                Err(e) => {
                    failures = failures.saturating_add(1);
                    state.error = Some(e);
                    Some(now + retry_after(failures))
                }
            };
            shared.changed.notify_all();
            next
        };
        // A value that never expires is never fetched again.
        let Some(next) = next else { return };
        let mut state = shared.state();
        loop {
            if state.stop {
                return;
            }
            let Ok(left) = next.duration_since(SystemTime::now()) else {
                break;
            };
            if left.is_zero() {
                break;
            }
            // Wakes at least every minute, so that a wall clock that jumps (suspend, NTP) is
            // noticed.
            state = match shared
                .changed
                .wait_timeout(state, left.min(Duration::from_secs(60)))
            {
                Ok((s, _)) => s,
                Err(e) => e.into_inner().0,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[derive(Clone)]
    struct Script {
        calls: Arc<AtomicU32>,
        answers: Vec<Result<Fetched<u32>, String>>,
    }

    impl Fetch for Script {
        type Value = u32;
        fn fetch(&mut self) -> Result<Fetched<u32>, String> {
            let n = self.calls.fetch_add(1, Ordering::SeqCst) as usize;
            self.answers
                .get(n)
                .cloned()
                .unwrap_or_else(|| Err("no more answers".into()))
        }
    }

    fn maker(script: Script) -> impl Fn() -> Script + Send + Sync + 'static {
        move || script.clone()
    }

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000 + secs)
    }

    #[test]
    fn a_value_is_fetched_again_five_minutes_before_it_expires_or_at_half_its_life() {
        assert_eq!(refresh_at(at(0), Some(at(3600))), Some(at(3300)));
        assert_eq!(refresh_at(at(0), Some(at(400))), Some(at(200)));
        assert_eq!(refresh_at(at(0), Some(at(20))), Some(at(10)));
        // A value usable 5 s (10 s less the margin) is asked for again a second before then,
        // not at the very instant it stops being usable.
        assert_eq!(refresh_at(at(0), Some(at(10))), Some(at(4)));
        assert_eq!(refresh_at(at(0), Some(at(3))), Some(at(0)));
        assert_eq!(refresh_at(at(0), None), None);
        // Already expired: at once.
        assert_eq!(refresh_at(at(10), Some(at(5))), Some(at(10)));
    }

    #[test]
    fn a_value_about_to_expire_signs_nothing() {
        assert!(usable(None, at(0)));
        assert!(usable(Some(at(60)), at(0)));
        assert!(usable(Some(at(60)), at(54)));
        assert!(!usable(Some(at(60)), at(56)));
        assert!(!usable(Some(at(60)), at(61)));
    }

    #[test]
    fn failed_fetches_are_retried_ever_more_slowly_up_to_half_a_minute() {
        let pauses: Vec<u64> = (1..=8).map(|n| retry_after(n).as_secs()).collect();
        assert_eq!(pauses, [1, 2, 4, 8, 16, 30, 30, 30]);
        assert_eq!(retry_after(u32::MAX), RETRY_MOST);
    }

    #[test]
    fn nothing_is_fetched_before_first_use_and_the_first_failure_is_said() {
        let calls = Arc::new(AtomicU32::new(0));
        let cache = Refreshing::new(
            maker(Script {
                calls: calls.clone(),
                answers: vec![Err("the endpoint said 403".into())],
            }),
            "test",
        );
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(calls.load(Ordering::SeqCst), 0, "fetched before first use");
        let e = cache.get(Duration::from_secs(5)).expect_err("no value");
        assert_eq!(e, "the endpoint said 403");
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_value_that_never_expires_is_fetched_once() {
        let calls = Arc::new(AtomicU32::new(0));
        let cache = Refreshing::new(
            maker(Script {
                calls: calls.clone(),
                answers: vec![Ok(Fetched {
                    value: 7,
                    expires: None,
                    note: None,
                })],
            }),
            "test",
        );
        for _ in 0..3 {
            assert_eq!(cache.get(Duration::from_secs(5)), Ok(7));
        }
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_eq!(cache.status().expires, None);
    }

    #[test]
    fn a_short_lived_value_is_replaced_in_the_background_and_a_failed_refresh_keeps_the_old_one() {
        let calls = Arc::new(AtomicU32::new(0));
        let soon = |value: u32, secs: u64| {
            Ok(Fetched {
                value,
                expires: Some(SystemTime::now() + Duration::from_secs(secs)),
                note: None,
            })
        };
        // The first value lives 12 s: asked for again at half its life (6 s), which fails;
        // the old value is served meanwhile; the retry a second later brings the third.
        let cache = Refreshing::new(
            maker(Script {
                calls: calls.clone(),
                answers: vec![soon(1, 12), Err("token service down".into()), soon(3, 3600)],
            }),
            "test",
        );
        assert_eq!(cache.get(Duration::from_secs(5)), Ok(1));
        let deadline = Instant::now() + Duration::from_secs(15);
        let mut served_after_the_failure = false;
        loop {
            let got = cache.get(Duration::from_secs(1));
            let status = cache.status();
            if status.error.is_some() {
                assert_eq!(got, Ok(1), "the old value is kept through a failed refresh");
                served_after_the_failure = true;
            }
            if got == Ok(3) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "no fresh value after 15 s: {status:?}, {} fetches",
                calls.load(Ordering::SeqCst)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(
            served_after_the_failure,
            "the failed refresh was never seen"
        );
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        assert_eq!(cache.status().error, None);
    }

    #[test]
    fn a_value_already_expired_is_a_failure_and_is_not_asked_for_in_a_loop() {
        let calls = Arc::new(AtomicU32::new(0));
        let stale = Ok(Fetched {
            value: 1,
            expires: Some(SystemTime::now()),
            note: None,
        });
        let cache = Refreshing::new(
            maker(Script {
                calls: calls.clone(),
                answers: vec![stale; 100],
            }),
            "test",
        );
        let e = cache.get(Duration::from_secs(5)).expect_err("not usable");
        assert!(e.contains("expire"), "{e}");
        std::thread::sleep(Duration::from_millis(2500));
        // Pauses of 1 s, then 2 s: three fetches at most in 2.5 s.
        assert!(
            calls.load(Ordering::SeqCst) <= 3,
            "{} fetches",
            calls.load(Ordering::SeqCst)
        );
    }

    #[test]
    fn a_fetcher_that_panics_is_a_failed_fetch() {
        struct Panics;
        impl Fetch for Panics {
            type Value = u32;
            fn fetch(&mut self) -> Result<Fetched<u32>, String> {
                panic!("a bug")
            }
        }
        let cache = Refreshing::new(|| Panics, "test");
        let e = cache.get(Duration::from_secs(5)).expect_err("no value");
        assert!(e.contains("panicked"), "{e}");
    }

    #[test]
    fn the_thread_ends_when_the_source_is_dropped() {
        let calls = Arc::new(AtomicU32::new(0));
        let cache = Refreshing::new(
            maker(Script {
                calls: calls.clone(),
                answers: vec![Err("down".into()); 100],
            }),
            "test",
        );
        let _ = cache.get(Duration::from_secs(5));
        drop(cache);
        std::thread::sleep(Duration::from_millis(1500));
        assert_eq!(calls.load(Ordering::SeqCst), 1, "fetched after the drop");
    }

    #[test]
    fn a_forked_child_starts_a_thread_of_its_own_which_fetches_at_once() {
        let calls = Arc::new(AtomicU32::new(0));
        let cache = Refreshing::new(
            maker(Script {
                calls: calls.clone(),
                answers: vec![
                    Ok(Fetched {
                        value: 1,
                        expires: Some(SystemTime::now() + Duration::from_secs(3600)),
                        note: None,
                    }),
                    Ok(Fetched {
                        value: 2,
                        expires: Some(SystemTime::now() + Duration::from_secs(3600)),
                        note: None,
                    }),
                ],
            }),
            "test",
        );
        assert_eq!(cache.get(Duration::from_secs(5)), Ok(1));
        assert_eq!(
            cache.get(Duration::from_secs(5)),
            Ok(1),
            "one thread per process"
        );
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        // As a child made by fork sees it: the thread was started by another process.
        *cache.running_in.lock().expect("pid") = Some(std::process::id().wrapping_add(1));
        let deadline = Instant::now() + Duration::from_secs(5);
        while cache.get(Duration::from_secs(5)) != Ok(2) {
            assert!(
                Instant::now() < deadline,
                "no thread fetched in the child: {} fetches",
                calls.load(Ordering::SeqCst)
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn what_a_fetch_notes_is_the_sign_in_s_problem_until_the_next_one() {
        let calls = Arc::new(AtomicU32::new(0));
        let cache = Refreshing::new(
            maker(Script {
                calls,
                answers: vec![Ok(Fetched {
                    value: 1,
                    expires: None,
                    note: Some("old credentials kept".into()),
                })],
            }),
            "test",
        );
        assert_eq!(cache.get(Duration::from_secs(5)), Ok(1));
        assert_eq!(
            cache.status().error.as_deref(),
            Some("old credentials kept")
        );
    }

    #[test]
    fn a_cached_value_past_its_expiry_never_signs_while_its_refresh_fails() {
        let calls = Arc::new(AtomicU32::new(0));
        // Usable for 2 s (7 s less the margin), asked for again at 3.5 s: that fails.
        let cache = Refreshing::new(
            maker(Script {
                calls,
                answers: vec![
                    Ok(Fetched {
                        value: 1,
                        expires: Some(SystemTime::now() + Duration::from_secs(7)),
                        note: None,
                    }),
                    Err("token service down".into()),
                ],
            }),
            "test",
        );
        assert_eq!(cache.get(Duration::from_secs(5)), Ok(1));
        std::thread::sleep(Duration::from_millis(2500));
        let e = cache.get(Duration::from_secs(5)).expect_err("expired");
        assert!(e.starts_with("the credentials expired at"), "{e}");
    }

    #[test]
    fn a_fetched_value_shows_its_expiry_and_never_itself() {
        let f = Fetched {
            value: "ya29.secret-token",
            expires: Some(at(0)),
            note: None,
        };
        let shown = format!("{f:?}");
        assert!(shown.contains("2027-01-15T08:00:00Z"), "{shown}");
        assert!(!shown.contains("secret-token"), "{shown}");
    }
}
