//! The core on Azure's and GCS's replies (the mock's dialects): acquiring, waiting, taking
//! over, renewing and releasing mean the same on every store. And a GCS quirk: a conditional
//! read answered `200` with the very object it named (fake-gcs-server never answers 304) is
//! "unchanged", exactly as a 304 is, so a crashed holder is still taken over after one lease.

use crate::scenario::*;
use core::time::Duration;
use sets3lock_mock::{Dialect, MissingKeyIfMatch, MockS3, Reply, Semantics};
use sets3lock_proto::{ConditionalDelete, Event, Holder, Intent, Purpose, ReleaseOutcome, Wait};

/// The stores: S3, Azure, Azurite (412 for If-Match on a missing blob), GCS, and
/// fake-gcs-server (a DELETE that ignores its condition, reads never 304).
fn stores() -> Vec<(&'static str, Semantics)> {
    let on = |dialect| Semantics {
        dialect,
        ..Semantics::default()
    };
    vec![
        ("S3", on(Dialect::S3)),
        ("Azure", on(Dialect::Azure)),
        (
            "Azurite",
            Semantics {
                missing_key_if_match: MissingKeyIfMatch::PreconditionFailed,
                ..on(Dialect::Azure)
            },
        ),
        ("GCS", on(Dialect::Gcs)),
        (
            "fake-gcs-server",
            Semantics {
                conditional_delete: ConditionalDelete::IgnoresIfMatch,
                not_modified: false,
                ..on(Dialect::Gcs)
            },
        ),
    ]
}

fn store(semantics: Semantics) -> MockS3 {
    let mut s3 = MockS3::with_semantics(semantics);
    s3.create_bucket(B);
    s3
}

#[test]
fn a_crashed_holder_is_taken_over_after_a_full_lease_on_every_store() {
    for (name, semantics) in stores() {
        let mut s3 = store(semantics);
        let _holder = holding_with(config(), &mut s3, 1);
        // The holder crashes: it never runs again.
        let mut w = Process::new(config(), 2);
        w.now = w.at(secs(5));
        w.lock.acquire(w.now, 0, Wait::Forever).expect("idle");
        // It first sees the object at 5 s: takeover is due at 35 s, by its own clock. Were a
        // 200 with the same generation read as a change, every poll would restart the count
        // and the takeover would never come.
        w.run(&mut s3, w.at(secs(35) - Duration::from_millis(1)));
        assert!(!w.lock.is_held(w.now), "{name}");
        assert!(!w.purposes().contains(&Purpose::Takeover), "{name}");
        let polls = w.purposes().len();
        assert!(polls > 3, "{name}: {polls} requests");
        w.run(&mut s3, w.at(secs(35)));
        assert!(w.lock.is_held(w.now), "{name}: {:?}", w.events);
        assert!(
            matches!(
                w.events.last(),
                Some(Event::Acquired {
                    took_over: Some(Holder::Sets3lock(_)),
                    ..
                })
            ),
            "{name}: {:?}",
            w.events
        );
    }
}

#[test]
fn fake_gcs_servers_200_to_a_conditional_read_carries_the_generation_the_read_named() {
    let (_, fake) = stores().pop().expect("fake-gcs-server");
    let mut s3 = store(fake);
    let holder = holding_with(config(), &mut s3, 1);
    let etag = acquired_etag(&holder.events);
    let read = Intent::Get {
        if_none_match: Some(etag.clone()),
    };
    let reply = s3.execute(B, K, &read);
    assert_eq!(reply.status, 200);
    assert_eq!(reply.headers["x-goog-generation"], etag.as_str());
    assert!(matches!(
        reply.classify(read.kind()),
        sets3lock_proto::Response::Object { etag: e, .. } if e == etag
    ));
}

#[test]
fn a_live_holder_keeps_its_lock_against_a_waiter_on_every_store() {
    for (name, semantics) in stores() {
        let mut s3 = store(semantics);
        let mut holder = holding_with(config(), &mut s3, 1);
        let mut w = Process::new(config(), 2);
        w.lock.acquire(w.now, 0, Wait::Forever).expect("idle");
        // Both run, a second at a time, for three leases: the holder renews, the waiter sees
        // each renewal as a new version and never takes over.
        for t in 1..=90 {
            holder.run(&mut s3, holder.at(secs(t)));
            w.run(&mut s3, w.at(secs(t)));
            assert!(holder.lock.is_held(holder.now), "{name} at {t} s");
        }
        assert!(!w.lock.is_held(w.now), "{name}");
        assert!(!w.purposes().contains(&Purpose::Takeover), "{name}");
        // Released, the lock passes to the waiter.
        holder.lock.release(holder.now).expect("held");
        holder.run(&mut s3, holder.at(secs(91)));
        assert!(
            holder.events.iter().any(|e| matches!(
                e,
                Event::Released {
                    outcome: ReleaseOutcome::Deleted,
                    ..
                }
            )),
            "{name}: {:?}",
            holder.events
        );
        w.run(&mut s3, w.at(secs(120)));
        assert!(w.lock.is_held(w.now), "{name}: {:?}", w.events);
    }
}

/// GCS takes about one write a second on one object and answers more with 429: a burst of
/// 429s on every write for 15 s while the holder renews (each read back, found not applied,
/// written again) never ends a lock that is still valid, and the first write after the burst
/// renews it.
#[test]
fn a_burst_of_429s_while_renewing_never_loses_a_valid_lock_on_gcs() {
    let (_, gcs) = stores()
        .into_iter()
        .find(|(name, _)| *name == "GCS")
        .expect("GCS");
    let mut s3 = store(gcs);
    let mut holder = holding_with(config(), &mut s3, 1);
    let throttled = || {
        let reply = Reply::gcs_error_saying(
            http::StatusCode::TOO_MANY_REQUESTS,
            "rateLimitExceeded",
            "The object exceeded the rate limit for object mutation operations (create, update, and delete).",
        );
        reply.classify(sets3lock_proto::IntentKind::PutIfMatch)
    };
    assert!(matches!(
        throttled(),
        sets3lock_proto::Response::Ambiguous(_)
    ));
    let (mut throttled_writes, mut reads) = (0, 0);
    // From the first renewal (at 20 s) for 15 s, every write is refused with 429 unapplied.
    while holder.now < holder.at(secs(35)) {
        let req = holder.next_request();
        if holder.now < holder.at(secs(20)) || req.intent.kind() == sets3lock_proto::IntentKind::Get
        {
            reads += usize::from(req.intent.kind() == sets3lock_proto::IntentKind::Get);
            holder.serve(&mut s3, &req);
        } else {
            throttled_writes += 1;
            holder.answer(&req, throttled());
        }
        assert!(
            holder.lock.is_held(holder.now),
            "lost at {:?}: {:?}",
            holder.now,
            holder.events
        );
    }
    holder.run(&mut s3, holder.at(secs(45)));
    assert!(holder.lock.is_held(holder.now), "{:?}", holder.events);
    assert!(throttled_writes >= 2, "{throttled_writes} writes throttled");
    assert!(reads >= 1, "the unknown outcomes were read back");
    assert!(
        !holder
            .events
            .iter()
            .any(|e| matches!(e, Event::Lost { .. } | Event::Expired)),
        "{:?}",
        holder.events
    );
    assert!(
        holder
            .events
            .iter()
            .any(|e| matches!(e, Event::Renewed { .. })),
        "renewed after the burst: {:?}",
        holder.events
    );
}
