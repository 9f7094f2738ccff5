//! The observer core ([`Watch`]) against the mock bucket, on a clock the test moves: what it
//! reports for a key with no holder, a holder, a renewal, a stale holder, a new holder, a
//! fenced release and a store in trouble; its cadence and what it costs.

use bytes::Bytes;
use core::time::Duration;
use sets3lock_mock::MockS3;
use sets3lock_proto::{
    Ambiguity, Fence, Holder, Instant, Intent, LockState, OwnerId, Record, Response, Setback,
    Sighting, Watch, WatchConfig, WatchEvent,
};

const B: &str = "bucket";
const K: &str = "lock";
/// More polls than any test here needs: a watch that spins fails instead of hanging.
const MAX_POLLS: usize = 100_000;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn record(owner: u128, seq: u64, lease: Duration, fence: Option<Fence>) -> Bytes {
    Record {
        owner: OwnerId::from_u128(owner),
        seq,
        lease,
        host: "h".into(),
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
}

/// An observer on the mock bucket: its core, its clock, what it sent and saw.
struct Observer {
    watch: Watch,
    now: Instant,
    sent: Vec<(Instant, Intent)>,
    events: Vec<(Instant, WatchEvent)>,
}

impl Observer {
    fn new(cfg: WatchConfig) -> Observer {
        Observer {
            watch: Watch::new(cfg, [9; 32]).expect("valid config"),
            now: Instant::ZERO,
            sent: Vec::new(),
            events: Vec::new(),
        }
    }

    /// Sends whatever is due to `s3`, answering with `answer` (the bucket's reply by default).
    fn pump(&mut self, s3: &mut MockS3, answer: &mut dyn FnMut(&mut MockS3, &Intent) -> Response) {
        while let Some(request) = self.watch.poll_request() {
            assert!(
                self.sent.len() < MAX_POLLS,
                "spinning: {:?}",
                self.sent.last()
            );
            self.sent.push((self.now, request.intent.clone()));
            let response = answer(s3, &request.intent);
            self.watch.handle_response(request.id, response, self.now);
        }
        while let Some(event) = self.watch.poll_event() {
            self.events.push((self.now, event));
        }
    }

    /// Runs until `until` on the observer's clock, firing every timer on time.
    fn run_until(&mut self, s3: &mut MockS3, until: Instant) {
        self.run_answering(s3, until, &mut |s3, intent| s3.respond(B, K, intent));
    }

    fn run_answering(
        &mut self,
        s3: &mut MockS3,
        until: Instant,
        answer: &mut dyn FnMut(&mut MockS3, &Intent) -> Response,
    ) {
        self.pump(s3, answer);
        for _ in 0..MAX_POLLS {
            match self.watch.poll_timeout() {
                Some(t) if t <= until => {
                    assert!(t >= self.now, "a timer in the past: {t:?} < {:?}", self.now);
                    self.now = t;
                    self.watch.handle_timeout(t);
                    self.pump(s3, answer);
                }
                _ => {
                    self.now = until;
                    return;
                }
            }
        }
        panic!(
            "more than {MAX_POLLS} timers before {until:?}: {:?}",
            self.sent.last()
        );
    }

    fn changes(&self) -> Vec<Sighting> {
        self.events
            .iter()
            .filter_map(|(_, e)| match e {
                WatchEvent::Changed(s) => Some(s.clone()),
                _ => None,
            })
            .collect()
    }
}

fn bucket() -> MockS3 {
    let mut s3 = MockS3::new();
    s3.create_bucket(B);
    s3
}

fn at(d: Duration) -> Instant {
    Instant::ZERO + d
}

#[test]
fn a_key_with_no_object_is_free_and_says_so_once() {
    let mut s3 = bucket();
    let mut o = Observer::new(WatchConfig::default());
    o.run_until(&mut s3, at(ms(30_000)));
    assert_eq!(o.changes(), vec![Sighting::Free]);
    assert!(o.sent.len() > 5, "it kept polling: {}", o.sent.len());
    // Nothing to name: every poll is unconditional.
    assert!(o.sent.iter().all(|(_, i)| *i
        == Intent::Get {
            if_none_match: None
        }));
}

#[test]
fn a_holder_is_seen_and_its_renewals_are_not_changes_but_are_followed() {
    let mut s3 = bucket();
    let lease = ms(9_000);
    s3.force(B, K, Some(record(1, 1, lease, None)));
    let mut o = Observer::new(WatchConfig::default());
    o.run_until(&mut s3, at(ms(1)));
    let first = s3.object(B, K).expect("object").etag.clone();
    let changes = o.changes();
    let [Sighting::Held {
        etag,
        since,
        stale_at,
        holder,
    }] = changes.as_slice()
    else {
        panic!("{changes:?}")
    };
    assert_eq!(
        (etag, *since, *stale_at),
        (&first, Instant::ZERO, Some(at(lease)))
    );
    assert_eq!(holder.owner(), Some(OwnerId::from_u128(1)));
    // Renewed every 3 s for 30 s: no change reported, never stale, and the polls name the
    // latest version (so the unchanged ones cost a 304).
    for seq in 2..12 {
        o.run_until(&mut s3, at(ms(3_000 * (seq - 1))));
        s3.force(B, K, Some(record(1, seq, lease, None)));
    }
    o.run_until(&mut s3, at(ms(33_000)));
    assert_eq!(o.changes().len(), 1, "{:?}", o.changes());
    let latest = s3.object(B, K).expect("object").etag.clone();
    assert_eq!(
        o.sent.last().map(|(_, i)| i.clone()),
        Some(Intent::Get {
            if_none_match: Some(latest.clone())
        })
    );
    let Some(Sighting::Held {
        etag,
        since,
        stale_at,
        ..
    }) = o.watch.current()
    else {
        panic!("{:?}", o.watch.current())
    };
    assert_eq!(etag, &latest);
    assert_eq!(
        *since,
        Instant::ZERO,
        "a renewal keeps when the holder was first seen"
    );
    assert!(stale_at.is_some_and(|t| t > at(ms(33_000))), "{stale_at:?}");
}

#[test]
fn a_record_unchanged_for_a_full_lease_is_stale_exactly_then() {
    let mut s3 = bucket();
    let lease = ms(6_000);
    s3.force(B, K, Some(record(1, 1, lease, None)));
    let mut o = Observer::new(WatchConfig::default());
    o.run_until(&mut s3, at(lease - ms(1)));
    assert_eq!(o.changes().len(), 1, "not stale before a full lease");
    o.run_until(&mut s3, at(lease + ms(5_000)));
    let changes = o.changes();
    assert!(
        matches!(changes.as_slice(), [Sighting::Held { .. }, Sighting::Stale { since, .. }] if *since == Instant::ZERO),
        "{changes:?}"
    );
    let stale_seen = o
        .events
        .iter()
        .find(|(_, e)| matches!(e, WatchEvent::Changed(Sighting::Stale { .. })))
        .map(|(t, _)| *t);
    assert_eq!(stale_seen, Some(at(lease)));
    // The holder comes back (a frozen process renewing late): held again, same since.
    s3.force(B, K, Some(record(1, 2, lease, None)));
    o.run_until(&mut s3, at(lease + ms(8_000)));
    let changes = o.changes();
    assert!(
        matches!(changes.as_slice(), [.., Sighting::Held { since, .. }] if *since == Instant::ZERO),
        "{changes:?}"
    );
    assert_eq!(changes.len(), 3);
}

#[test]
fn a_new_holder_and_a_delete_are_changes_in_the_order_they_happened() {
    let mut s3 = bucket();
    let lease = ms(30_000);
    let mut o = Observer::new(WatchConfig::default());
    o.run_until(&mut s3, at(ms(5_000)));
    s3.force(B, K, Some(record(1, 1, lease, None)));
    o.run_until(&mut s3, at(ms(10_000)));
    s3.force(B, K, Some(record(2, 1, lease, None)));
    o.run_until(&mut s3, at(ms(15_000)));
    s3.force(B, K, None);
    o.run_until(&mut s3, at(ms(20_000)));
    let owners: Vec<Option<u128>> = o
        .changes()
        .iter()
        .map(|s| s.holder().and_then(Holder::owner).map(OwnerId::as_u128))
        .collect();
    assert_eq!(owners, vec![None, Some(1), Some(2), None]);
    // Each change is seen within 5/4 of the interval after it happened.
    let seen: Vec<Instant> = o.events.iter().map(|(t, _)| *t).collect();
    for (t, happened) in seen.iter().skip(1).zip([5_000, 10_000, 15_000]) {
        let late = t.saturating_duration_since(at(ms(happened)));
        assert!(late <= ms(2_500), "seen {late:?} after it happened");
    }
    // The second holder's since is when it was first seen, not the first holder's.
    let Some(Sighting::Held { since, .. }) = o.changes().get(2).cloned() else {
        panic!("{:?}", o.changes())
    };
    assert!(since > at(ms(10_000)), "{since:?}");
}

#[test]
fn a_fenced_free_record_is_released_with_its_token() {
    let mut s3 = bucket();
    let held = Some(Fence {
        state: LockState::Held,
        token: 7,
    });
    let free = Some(Fence {
        state: LockState::Free,
        token: 7,
    });
    s3.force(B, K, Some(record(1, 1, ms(9_000), held)));
    let mut o = Observer::new(WatchConfig::default());
    o.run_until(&mut s3, at(ms(3_000)));
    s3.force(B, K, Some(record(1, 2, ms(9_000), free)));
    o.run_until(&mut s3, at(ms(30_000)));
    let changes = o.changes();
    assert_eq!(changes.len(), 2, "{changes:?}");
    let Sighting::Released { holder, .. } = &changes[1] else {
        panic!("{changes:?}")
    };
    assert_eq!(holder.fence().map(|f| f.token), Some(7));
    assert!(!changes[1].is_held());
}

#[test]
fn a_holder_without_a_lease_is_never_stale_unless_a_foreign_lease_is_given() {
    let go = Bytes::from_static(br#"{"id":"4f1c","created_at":"2026-11-30T10:00:00Z"}"#);
    for (foreign, stale) in [(None, false), (Some(ms(10_000)), true)] {
        let mut s3 = bucket();
        s3.force(B, K, Some(go.clone()));
        let cfg = WatchConfig {
            foreign_lease: foreign,
            ..WatchConfig::default()
        };
        let mut o = Observer::new(cfg);
        o.run_until(&mut s3, at(ms(60_000)));
        let changes = o.changes();
        let went_stale = changes.iter().any(|s| matches!(s, Sighting::Stale { .. }));
        assert_eq!(went_stale, stale, "foreign lease {foreign:?}: {changes:?}");
        assert!(matches!(changes[0], Sighting::Held { .. }), "{changes:?}");
    }
}

#[test]
fn polls_are_spread_between_three_quarters_and_five_quarters_of_the_interval() {
    let mut s3 = bucket();
    s3.force(B, K, Some(record(1, 1, Duration::ZERO, None)));
    let interval = ms(2_000);
    let mut o = Observer::new(WatchConfig {
        interval,
        ..WatchConfig::default()
    });
    let hour = at(ms(3_600_000));
    o.run_until(&mut s3, hour);
    let gaps: Vec<Duration> = o
        .sent
        .windows(2)
        .map(|w| w[1].0.saturating_duration_since(w[0].0))
        .collect();
    let (lo, hi) = (interval * 3 / 4, interval * 5 / 4);
    assert!(
        gaps.iter().all(|g| *g >= lo && *g <= hi),
        "{:?}",
        gaps.iter().min()
    );
    assert!(gaps.iter().any(|g| *g < ms(1_800)) && gaps.iter().any(|g| *g > ms(2_200)));
    // About 30 a minute: 1,800 in the hour, within 3%.
    let n = o.sent.len() as f64;
    assert!((n - 1_800.0).abs() < 54.0, "{n} polls in an hour");
    // After the first, every poll names the ETag: an unchanged lock costs 304s.
    assert!(o.sent[1..].iter().all(|(_, i)| matches!(
        i,
        Intent::Get {
            if_none_match: Some(_)
        }
    )));
}

#[test]
fn the_interval_is_start_to_start_whatever_the_round_trip() {
    let mut watch = Watch::new(WatchConfig::default(), [3; 32]).expect("valid");
    let mut now = Instant::ZERO;
    let mut starts = Vec::new();
    for _ in 0..200 {
        let request = watch.poll_request().expect("a poll is due");
        starts.push(now);
        // Each reply takes 300 ms.
        watch.handle_response(request.id, Response::Absent, now + ms(300));
        now = watch.poll_timeout().expect("the next poll");
        watch.handle_timeout(now);
    }
    let span = starts[199]
        .saturating_duration_since(starts[0])
        .as_secs_f64();
    let mean = span / 199.0;
    assert!(
        (1.9..=2.1).contains(&mean),
        "mean {mean:.3} s between starts"
    );
}

#[test]
fn two_observers_with_different_seeds_do_not_poll_in_lockstep() {
    let mut s3 = bucket();
    let times = |seed: u8, s3: &mut MockS3| {
        let mut o = Observer::new(WatchConfig::default());
        o.watch = Watch::new(WatchConfig::default(), [seed; 32]).expect("valid");
        o.run_until(s3, at(ms(60_000)));
        o.sent.iter().map(|(t, _)| *t).collect::<Vec<_>>()
    };
    let (a, b) = (times(1, &mut s3), times(2, &mut s3));
    let same = a.iter().filter(|t| b.contains(t)).count();
    assert_eq!(same, 1, "only the first poll is shared: {same}");
}

#[test]
fn trouble_is_reported_once_retried_sooner_and_its_end_reported() {
    let mut s3 = bucket();
    let mut o = Observer::new(WatchConfig::default());
    o.run_until(&mut s3, at(ms(5_000)));
    let before = o.sent.len();
    let mut failing = |_: &mut MockS3, _: &Intent| Response::Ambiguous(Ambiguity::Timeout);
    o.run_answering(&mut s3, at(ms(15_000)), &mut failing);
    let retries = o.sent.len() - before;
    assert!(
        retries > 5,
        "failed polls are retried sooner than the interval: {retries}"
    );
    let unreachable = o
        .events
        .iter()
        .filter(|(_, e)| {
            matches!(
                e,
                WatchEvent::Unreachable {
                    setback: Setback::Ambiguous(Ambiguity::Timeout)
                }
            )
        })
        .count();
    assert_eq!(unreachable, 1);
    o.run_until(&mut s3, at(ms(20_000)));
    let kinds: Vec<&WatchEvent> = o.events.iter().map(|(_, e)| e).collect();
    assert!(
        matches!(
            kinds.as_slice(),
            [
                WatchEvent::Changed(Sighting::Free),
                WatchEvent::Unreachable { .. },
                WatchEvent::Reachable
            ]
        ),
        "{kinds:?}"
    );
}

#[test]
fn a_missing_bucket_stops_the_watch_with_the_error() {
    let mut s3 = MockS3::new();
    let mut o = Observer::new(WatchConfig::default());
    o.run_until(&mut s3, at(ms(60_000)));
    assert_eq!(o.sent.len(), 1, "no poll after a permanent refusal");
    assert!(o.watch.is_stopped());
    assert_eq!(o.watch.poll_timeout(), None);
    let [(_, WatchEvent::Failed { error })] = o.events.as_slice() else {
        panic!("{:?}", o.events)
    };
    assert!(error.to_string().contains("create the bucket"), "{error}");
}

#[test]
fn replies_to_other_requests_and_after_stop_are_ignored() {
    let mut o = Observer::new(WatchConfig::default());
    let first = o.watch.poll_request().expect("the first poll");
    let other = sets3lock_proto::RequestId::from_u64(first.id.as_u64() + 1);
    o.watch
        .handle_response(other, Response::Absent, Instant::ZERO);
    assert_eq!(o.watch.poll_event(), None);
    assert_eq!(o.watch.current(), None);
    o.watch.stop();
    o.watch
        .handle_response(first.id, Response::Absent, Instant::ZERO);
    assert_eq!(o.watch.poll_event(), None);
    assert_eq!(o.watch.poll_request(), None);
}

#[test]
fn a_store_that_ignores_if_none_match_changes_nothing() {
    let mut s3 = bucket();
    s3.force(B, K, Some(record(1, 1, ms(60_000), None)));
    let mut o = Observer::new(WatchConfig::default());
    // Every poll answered 200 with the whole object, as if unconditional.
    let mut full = |s3: &mut MockS3, _: &Intent| {
        s3.respond(
            B,
            K,
            &Intent::Get {
                if_none_match: None,
            },
        )
    };
    o.run_answering(&mut s3, at(ms(30_000)), &mut full);
    assert_eq!(o.changes().len(), 1, "{:?}", o.changes());
}

#[test]
fn a_304_without_an_etag_named_is_a_failed_poll() {
    let mut s3 = bucket();
    let mut o = Observer::new(WatchConfig::default());
    let mut odd = |_: &mut MockS3, _: &Intent| Response::NotModified;
    o.run_answering(&mut s3, at(ms(1)), &mut odd);
    assert!(
        matches!(o.events.as_slice(), [(_, WatchEvent::Unreachable { .. })]),
        "{:?}",
        o.events
    );
    assert_eq!(o.watch.current(), None);
}

#[test]
fn too_short_an_interval_is_refused() {
    let cfg = WatchConfig {
        interval: ms(5),
        ..WatchConfig::default()
    };
    let e = Watch::new(cfg, [0; 32]).expect_err("refused");
    assert_eq!(
        e.to_string(),
        "a polling interval of 5ms is too short: use at least 10ms"
    );
}

#[test]
fn settings_at_their_limits() {
    let with = |interval: u64, floor: u64, cap: u64| WatchConfig {
        interval: ms(interval),
        retry: sets3lock_proto::Backoff::new(ms(floor), ms(cap)),
        ..WatchConfig::default()
    };
    assert!(with(10, 50, 50).validate().is_ok(), "10 ms is allowed");
    assert!(with(9, 50, 50).validate().is_err());
    assert!(with(2_000, 0, 50).validate().is_err(), "a zero retry floor");
    assert!(
        with(2_000, 60, 50).validate().is_err(),
        "a floor above the cap"
    );
    assert!(with(2_000, 50, 60).validate().is_ok());
    assert_eq!(with(2_000, 50, 50).requests_per_minute(), 30.0);
    assert_eq!(with(10_000, 50, 50).requests_per_minute(), 6.0);
    assert_eq!(with(500, 50, 50).requests_per_minute(), 120.0);
}

#[test]
fn sightings_say_whether_the_lock_is_held_and_by_what() {
    let body = record(1, 1, ms(9_000), None);
    let holder = Holder::decode(&body);
    let etag = sets3lock_mock::etag_of(&body);
    let held = Sighting::Held {
        etag: etag.clone(),
        holder: holder.clone(),
        since: Instant::ZERO,
        stale_at: None,
    };
    let stale = Sighting::Stale {
        etag: etag.clone(),
        holder: holder.clone(),
        since: Instant::ZERO,
    };
    let released = Sighting::Released {
        etag: etag.clone(),
        holder: holder.clone(),
    };
    assert!(held.is_held() && stale.is_held());
    assert!(!released.is_held() && !Sighting::Free.is_held());
    for s in [&held, &stale, &released] {
        assert_eq!((s.etag(), s.holder()), (Some(&etag), Some(&holder)));
    }
}

#[test]
fn polls_are_numbered_one_two_three_and_a_running_watch_is_not_stopped() {
    let mut s3 = bucket();
    let mut o = Observer::new(WatchConfig::default());
    assert!(!o.watch.is_stopped());
    let mut ids = Vec::new();
    for _ in 0..5 {
        let request = o.watch.poll_request().expect("a poll");
        ids.push(request.id.as_u64());
        let reply = s3.respond(B, K, &request.intent);
        o.watch.handle_response(request.id, reply, o.now);
        o.now = o.watch.poll_timeout().expect("next");
        o.watch.handle_timeout(o.now);
    }
    assert_eq!(ids, [1, 2, 3, 4, 5]);
    assert!(!o.watch.is_stopped());
}

fn refused(code: &str) -> Response {
    Response::Refused(sets3lock_proto::Error::Refused {
        op: sets3lock_proto::IntentKind::Get,
        status: 403,
        code: Some(code.to_owned()),
        message: None,
        hint: "",
    })
}

#[test]
fn a_refusal_that_may_pass_is_retried_and_one_that_cannot_stops_the_watch() {
    for (code, stops) in [
        ("ExpiredToken", false),
        ("RequestTimeTooSkewed", false),
        ("AccessDenied", true),
        ("SignatureDoesNotMatch", true),
    ] {
        let mut o = Observer::new(WatchConfig::default());
        let request = o.watch.poll_request().expect("a poll");
        o.watch
            .handle_response(request.id, refused(code), Instant::ZERO);
        assert_eq!(o.watch.is_stopped(), stops, "{code}");
        let event = o.watch.poll_event();
        match stops {
            true => assert!(
                matches!(event, Some(WatchEvent::Failed { .. })),
                "{code}: {event:?}"
            ),
            false => assert!(
                matches!(event, Some(WatchEvent::Unreachable { .. })),
                "{code}: {event:?}"
            ),
        }
        assert_eq!(o.watch.poll_timeout().is_some(), !stops, "{code}");
    }
}

#[test]
fn retries_back_off_from_the_floor() {
    let cfg = WatchConfig::default();
    let mut watch = Watch::new(cfg.clone(), [5; 32]).expect("valid");
    let mut now = Instant::ZERO;
    for n in 0..6u32 {
        let request = watch.poll_request().expect("a poll");
        watch.handle_response(request.id, Response::Ambiguous(Ambiguity::Timeout), now);
        let next = watch.poll_timeout().expect("a retry");
        let pause = next.saturating_duration_since(now);
        // The first retry waits exactly the floor; the nth at most the nth ceiling.
        if n == 0 {
            assert_eq!(pause, cfg.retry.floor);
        }
        assert!(pause <= cfg.retry.ceiling(n), "retry {n}: {pause:?}");
        now = next;
        watch.handle_timeout(now);
    }
}

#[test]
fn a_store_that_ignores_if_none_match_still_goes_stale_and_released_once() {
    let lease = ms(6_000);
    let mut full = |s3: &mut MockS3, _: &Intent| {
        s3.respond(
            B,
            K,
            &Intent::Get {
                if_none_match: None,
            },
        )
    };
    let mut s3 = bucket();
    s3.force(B, K, Some(record(1, 1, lease, None)));
    let mut o = Observer::new(WatchConfig::default());
    o.run_answering(&mut s3, at(lease + ms(3_000)), &mut full);
    let stale_at = o
        .events
        .iter()
        .find(|(_, e)| matches!(e, WatchEvent::Changed(Sighting::Stale { .. })))
        .map(|(t, _)| *t);
    assert_eq!(stale_at, Some(at(lease)), "{:?}", o.events);
    // A fenced free record read again and again is one change.
    let free = Some(Fence {
        state: LockState::Free,
        token: 3,
    });
    let mut s3 = bucket();
    s3.force(B, K, Some(record(1, 2, lease, free)));
    let mut o = Observer::new(WatchConfig::default());
    o.run_answering(&mut s3, at(ms(20_000)), &mut full);
    assert_eq!(o.changes().len(), 1, "{:?}", o.changes());
    // Another free record (another release) is a change.
    s3.force(B, K, Some(record(2, 2, lease, free)));
    o.run_answering(&mut s3, at(ms(25_000)), &mut full);
    assert_eq!(o.changes().len(), 2, "{:?}", o.changes());
}
