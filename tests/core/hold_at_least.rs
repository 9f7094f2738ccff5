//! `Config::hold_at_least`: at most one acquisition per period on a key, for waiters and for
//! try-once acquisitions started at any time, and a run after the period gets in at once.

use core::time::Duration;
use sets3lock_proto::{Config, Event, Holder, Instant, NotAcquired, ReleaseOutcome, Wait};

use crate::scenario::*;
use sets3lock_mock::MockS3;

/// A 10 s lease, at most one acquisition per 60 s.
fn hourly() -> Config {
    Config {
        lease: secs(10),
        hold_at_least: secs(60),
        ..config()
    }
}

fn acquired(events: &[Event]) -> bool {
    events.iter().any(|e| matches!(e, Event::Acquired { .. }))
}

fn busy(events: &[Event]) -> bool {
    events.iter().any(|e| {
        matches!(
            e,
            Event::NotAcquired {
                reason: NotAcquired::Busy { .. }
            }
        )
    })
}

/// Acquires with `cfg` at `t`, holds for `held`, releases: what the release found.
fn run_for(s3: &mut MockS3, cfg: Config, seed: u8, t: Instant, held: Duration) -> ReleaseOutcome {
    let mut p = process_at(cfg, seed, t);
    p.lock.acquire(t, EPOCH_MS, Wait::No).expect("idle");
    let until = t;
    run_clocked(&mut p, s3, until);
    assert!(acquired(&p.events), "{:?}", p.events);
    let until = t + held;
    run_clocked(&mut p, s3, until);
    p.lock.release(p.now).expect("held");
    let until = p.now;
    run_clocked(&mut p, s3, until);
    p.events
        .iter()
        .find_map(|e| match e {
            Event::Released { outcome } => Some(*outcome),
            _ => None,
        })
        .unwrap_or_else(|| panic!("not released: {:?}", p.events))
}

/// A try-once acquisition at `t`: whether it got the lock (then released at once, which
/// rests it again).
fn try_once(s3: &mut MockS3, cfg: Config, seed: u8, t: Instant) -> bool {
    let mut p = process_at(cfg, seed, t);
    p.lock.acquire(t, EPOCH_MS, Wait::No).expect("idle");
    let until = t;
    run_clocked(&mut p, s3, until);
    assert!(acquired(&p.events) || busy(&p.events), "{:?}", p.events);
    acquired(&p.events)
}

#[test]
fn a_short_run_leaves_the_lock_resting_until_the_period_is_up() {
    let mut s3 = clocked();
    let outcome = run_for(&mut s3, hourly(), 1, Instant::ZERO, secs(5));
    assert_eq!(outcome, ReleaseOutcome::Resting);
    let Holder::Sets3lock(r) = Holder::decode(&s3.object(B, K).expect("kept").body) else {
        panic!("not a record")
    };
    assert!(r.cooldown, "{r:?}");
    // 60 s stretched by the 1% drift bound both ways (60 × 1.01 / 0.99 = 61.212 s), less
    // the 5 s held, plus the millisecond of rounding up.
    assert!(
        r.lease >= Duration::from_millis(56_212) && r.lease <= Duration::from_millis(56_214),
        "{:?}",
        r.lease
    );
}

#[test]
fn fresh_try_once_runs_are_refused_within_the_period_and_let_in_right_after() {
    let mut s3 = clocked();
    run_for(&mut s3, hourly(), 1, Instant::ZERO, secs(1));
    // Runs from new processes, which have watched nothing, every 5 s.
    let mut first_in = None;
    for (i, t) in (5..=70).step_by(5).enumerate() {
        let at = Instant::ZERO + secs(t);
        let seed = u8::try_from(10 + i).expect("small");
        if try_once(&mut s3, hourly(), seed, at) {
            first_in = Some(t);
            break;
        }
    }
    // Not before 60 s; and at 65 s at the latest (the rest lease is 61.2 s less the second
    // held, plus a second for the headers' rounding).
    assert_eq!(first_in, Some(65));
}

#[test]
fn a_waiter_started_during_the_rest_gets_the_lock_when_it_ends() {
    let mut s3 = clocked();
    run_for(&mut s3, hourly(), 1, Instant::ZERO, secs(2));
    let mut w = process_at(hourly(), 2, Instant::ZERO + secs(30));
    w.lock
        .acquire(w.now, EPOCH_MS, Wait::Forever)
        .expect("idle");
    let until = Instant::ZERO + secs(120);
    // Step by step, to see when it got in.
    let mut got = None;
    for s in 31..=120 {
        let until = Instant::ZERO + secs(s);
        run_clocked(&mut w, &mut s3, until);
        if acquired(&w.events) {
            got = Some(s);
            break;
        }
    }
    let got = got.unwrap_or_else(|| panic!("never acquired by {until:?}: {:?}", w.events));
    assert!((61..=63).contains(&got), "acquired at {got} s");
}

#[test]
fn a_waiter_that_watched_the_whole_run_waits_out_the_rest_on_its_own_clock() {
    // No store clock at all: the waiter times the resting record's lease itself.
    let mut s3 = bucket();
    let mut a = Process::new(hourly(), 1);
    a.lock.acquire(a.now, 0, Wait::No).expect("idle");
    a.run(&mut s3, a.now);
    let mut w = Process::new(hourly(), 2);
    w.lock.acquire(w.now, 0, Wait::Forever).expect("idle");
    w.run(&mut s3, Instant::ZERO + secs(3));
    a.lock.release(Instant::ZERO + secs(3)).expect("held");
    a.now = Instant::ZERO + secs(3);
    a.run(&mut s3, a.now);
    assert!(a.events.contains(&Event::Released {
        outcome: ReleaseOutcome::Resting
    }));
    let mut got = None;
    for s in 4..=130 {
        w.run(&mut s3, Instant::ZERO + secs(s));
        if acquired(&w.events) {
            got = Some(s);
            break;
        }
    }
    // The rest lease (about 57.6 s) from when it first saw the resting record (3 s).
    let got = got.unwrap_or_else(|| panic!("never: {:?}", w.events));
    assert!((60..=62).contains(&got), "acquired at {got} s");
}

#[test]
fn a_run_longer_than_the_period_releases_as_usual() {
    let mut s3 = clocked();
    assert_eq!(
        run_for(&mut s3, hourly(), 1, Instant::ZERO, secs(70)),
        ReleaseOutcome::Deleted
    );
    assert!(s3.object(B, K).is_none());
    assert!(try_once(&mut s3, hourly(), 2, Instant::ZERO + secs(70)));
}

#[test]
fn fenced_rest_keeps_the_token_and_the_next_grant_gets_the_next() {
    let mut s3 = clocked();
    let fenced = Config {
        fenced: true,
        ..hourly()
    };
    run_for(&mut s3, fenced.clone(), 1, Instant::ZERO, secs(1));
    let Holder::Sets3lock(r) = Holder::decode(&s3.object(B, K).expect("kept").body) else {
        panic!("not a record")
    };
    assert!(r.cooldown);
    assert_eq!(r.fence.map(|f| f.token), Some(1));
    let mut p = process_at(fenced, 2, Instant::ZERO + secs(70));
    p.lock.acquire(p.now, EPOCH_MS, Wait::No).expect("idle");
    let until = p.now;
    run_clocked(&mut p, &mut s3, until);
    assert!(
        p.events
            .iter()
            .any(|e| matches!(e, Event::Acquired { token: Some(2), .. })),
        "{:?}",
        p.events
    );
}

#[test]
fn hold_at_least_needs_a_lease() {
    let c = Config {
        lease: Duration::ZERO,
        ..hourly()
    };
    assert!(c.validate().is_err());
}
