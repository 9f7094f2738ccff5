//! When a hold's requests go out and how long their answers are waited for: a renewal's
//! retries reach the moment the lock's user stops relying on the hold
//! ([`Config::stop_before`]), and no request of a hold waits longer than a renewal interval
//! or past its validity ([`Lock::request_limit`]).

use core::time::Duration;
use sets3lock_proto::{Ambiguity, Config, Event, Instant, Response, MIN_HOLD_REQUEST_WAIT};

use crate::scenario::*;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A 6 s lease whose user stops relying on it 1.5 s before validity ends (`--kill-after`).
fn stopping(stop_before: Duration) -> Config {
    Config {
        lease: secs(6),
        stop_before,
        ..config()
    }
}

/// Holds with `cfg` from time zero, and answers each request of the hold with what `fault`
/// makes of it (`None`: the bucket answers); returns when the hold was renewed, or `None` if
/// it expired.
fn renewed_despite(
    cfg: Config,
    seed: u8,
    mut fault: impl FnMut(&mut Process) -> Option<Response>,
) -> Option<Instant> {
    let mut s3 = bucket();
    let mut c = holding_with(cfg, &mut s3, seed);
    for _ in 0..200 {
        if let Some(req) = c.request() {
            match fault(&mut c) {
                Some(response) => c.answer(&req, response),
                None => c.serve(&mut s3, &req),
            }
            if c.events.iter().any(|e| matches!(e, Event::Renewed { .. })) {
                return Some(c.now);
            }
        } else if c.events.contains(&Event::Expired) {
            return None;
        } else {
            c.tick();
        }
    }
    panic!(
        "neither renewed nor expired after 200 steps: {:?}",
        c.timeline()
    );
}

/// Every request sent before `burst_ends` gets a 503.
fn renewed_after_a_burst(cfg: Config, seed: u8, burst_ends: Instant) -> Option<Instant> {
    renewed_despite(cfg, seed, |c| (c.now < burst_ends).then(slow_down))
}

#[test]
fn a_renewal_retried_through_a_burst_of_errors_goes_out_before_the_user_stops() {
    let cfg = stopping(ms(1500));
    let valid_until = Instant::ZERO + cfg.validity();
    let stop = Instant::ZERO + (cfg.validity() - cfg.stop_before);
    // 503s from the first renewal (at 2 s) until 0.3 s before the stop point: the pauses
    // have grown towards the 2 s cap by then, and uncapped, the next try would often go out
    // after the stop point. Capped, one goes out a tenth of a renewal interval (200 ms)
    // before it, and lands.
    let burst_ends = Instant::ZERO + (cfg.validity() - cfg.stop_before - ms(300));
    for seed in 1..=40 {
        let at = renewed_after_a_burst(cfg.clone(), seed, burst_ends);
        let at = at.unwrap_or_else(|| panic!("seed {seed}: the hold expired"));
        assert!(
            at >= burst_ends,
            "seed {seed}: renewed during the burst at {at:?}"
        );
        assert!(
            at < stop,
            "seed {seed}: renewed at {at:?}, after the stop point {stop:?} (validity {valid_until:?})"
        );
    }
}

#[test]
fn past_the_stop_point_retries_go_on_until_validity_ends() {
    // The burst ends after the stop point: the hold is still renewed before validity ends
    // (the user may have stopped, but a landed renewal still counts and is reported).
    let cfg = stopping(ms(1500));
    let stop = Instant::ZERO + (cfg.validity() - cfg.stop_before);
    let valid_until = Instant::ZERO + cfg.validity();
    let burst_ends = stop + ms(500);
    let mut renewed = 0;
    for seed in 1..=40 {
        if let Some(at) = renewed_after_a_burst(cfg.clone(), seed, burst_ends) {
            assert!(at >= burst_ends && at < valid_until, "seed {seed}: {at:?}");
            renewed += 1;
        }
    }
    // Pauses past the stop point are capped at validity only: most seeds still get a try
    // in the second between the burst's end and validity's end.
    assert!(
        renewed >= 20,
        "only {renewed} of 40 holds renewed after the stop point"
    );
}

#[test]
fn a_hold_s_request_waits_half_the_time_to_the_stop_point_and_never_past_validity() {
    let mut s3 = bucket();
    let cfg = stopping(ms(1500));
    let mut c = holding_with(cfg.clone(), &mut s3, 1);
    let limit = secs(20);
    let valid_until = Instant::ZERO + cfg.validity();
    let stop = Instant::ZERO + (cfg.validity() - cfg.stop_before);
    // At the first renewal (2 s): half of the time left to the stop point, not 20 s.
    let renewal = Instant::ZERO + cfg.renew_interval();
    let half = stop.saturating_duration_since(renewal) / 2;
    assert_eq!(c.lock.request_limit(limit, renewal), half);
    // Given up then, its retry has the other half: the limit halves again.
    let retry = renewal + half;
    assert_eq!(c.lock.request_limit(limit, retry), half / 2);
    // A driver's own shorter limit wins.
    assert_eq!(c.lock.request_limit(ms(300), renewal), ms(300));
    // Past the stop point, what is left of validity; at its end, the floor.
    let late = stop + ms(500);
    assert_eq!(
        c.lock.request_limit(limit, late),
        valid_until.saturating_duration_since(late)
    );
    assert_eq!(
        c.lock.request_limit(limit, valid_until),
        MIN_HOLD_REQUEST_WAIT
    );
    // Released: no hold, the driver's limit again.
    c.lock.release(c.now).expect("held");
    c.run(&mut s3, c.now);
    assert_eq!(c.lock.request_limit(limit, c.now), limit);
}

/// The first `lost` requests of the hold go unanswered until the driver gives up (after the
/// core's limit on a 20 s request timeout); the rest are answered at once.
fn renewed_after_losses(cfg: Config, seed: u8, lost: usize) -> Option<Instant> {
    let mut lost_so_far = 0;
    renewed_despite(cfg, seed, |c| {
        (lost_so_far < lost).then(|| {
            lost_so_far += 1;
            c.now = c.now + c.lock.request_limit(secs(20), c.now);
            Response::Ambiguous(Ambiguity::Timeout)
        })
    })
}

#[test]
fn lost_requests_in_a_row_are_ridden_out_while_the_halves_last() {
    // The numbers docs/PROTOCOL.md gives: (lease, stop_before, how many lost in a row are
    // ridden out, for every seed; one more is not, for some).
    let cases = [
        // The library: no stop point.
        (ms(600), Duration::ZERO, 1),
        // The command's default --kill-after (half of validity less a renewal interval).
        (secs(1), ms(323), 1),
        (secs(6), ms(1940), 3),
        (secs(60), secs(10), 6),
    ];
    for (lease, stop_before, rides) in cases {
        let cfg = Config {
            lease,
            stop_before,
            ..config()
        };
        let stop = Instant::ZERO + (cfg.validity() - stop_before);
        for seed in 1..=20 {
            for lost in 1..=rides {
                let at = renewed_after_losses(cfg.clone(), seed, lost);
                assert!(
                    at.is_some_and(|at| at < stop),
                    "lease {lease:?}, stop {stop_before:?}, seed {seed}: {lost} lost in a row \
                     renewed at {at:?}, stop point {stop:?}"
                );
            }
        }
        let beyond = (1..=20)
            .filter(|&seed| {
                renewed_after_losses(cfg.clone(), seed, rides + 1).is_none_or(|at| at >= stop)
            })
            .count();
        assert!(
            beyond > 0,
            "lease {lease:?}: {} lost in a row were ridden out for every seed",
            rides + 1
        );
    }
}

#[test]
fn a_store_that_keeps_refusing_our_renewal_while_showing_our_write_is_not_hammered() {
    // Something in front of the store answers every renewal 412 while reads still show our
    // write (a stale cache, ETags made weak on the way): each 412 is read back at once, and
    // the renewal after that read waits a retry pause. Not a loop at one instant.
    let cfg = stopping(ms(1500));
    let mut s3 = bucket();
    let mut c = holding_with(cfg, &mut s3, 1);
    let before = c.sent.len();
    for _ in 0..500 {
        if let Some(req) = c.request() {
            if matches!(req.intent.kind(), sets3lock_proto::IntentKind::PutIfMatch) {
                c.answer(&req, Response::Mismatch);
            } else {
                c.serve(&mut s3, &req);
            }
        } else if c.events.contains(&Event::Expired) {
            break;
        } else {
            c.tick();
        }
    }
    assert!(c.events.contains(&Event::Expired), "{:?}", c.timeline());
    let sent = c.sent.len() - before;
    // About 4 s between the first renewal and validity's end, paced from 50 ms to 2 s, with
    // halving pauses near the stop point: a few dozen requests at most.
    assert!(
        sent <= 60,
        "{sent} requests in one hold: {:?}",
        c.purposes()
    );
}
