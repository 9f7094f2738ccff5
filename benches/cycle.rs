//! Core micro-benchmarks, each beside its baseline in the same run:
//! - an uncontended acquire + release cycle through the core and the mock S3, against the
//!   mock alone doing the same two requests (so the ratio is the core's overhead);
//! - one step of the state machine: a renewal round trip, and a timer tick with nothing due.
//!
//! `cargo bench --bench cycle`; allocations per cycle: `cargo bench --bench allocs`.

use criterion::{criterion_group, criterion_main, Criterion};
use sets3lock_mock::MockS3;
use sets3lock_proto::{Config, Instant, Lock, Response, Wait};
use std::hint::black_box;
use std::time::Duration;

#[path = "common/mod.rs"]
mod common;
use common::{core_cycle, mock_cycle, roundtrip, B};

fn bench(c: &mut Criterion) {
    let mut s3 = MockS3::new();
    s3.create_bucket(B);
    let mut lock = Lock::new(Config::default(), [1; 32]).expect("valid config");
    let now = Instant::ZERO;

    let mut group = c.benchmark_group("uncontended_cycle");
    group.bench_function("core + mock", |b| {
        b.iter(|| black_box(core_cycle(&mut lock, &mut s3, now)))
    });
    let mut seq = 0;
    group.bench_function("mock alone (baseline)", |b| {
        b.iter(|| {
            seq += 1;
            black_box(mock_cycle(&mut s3, seq))
        })
    });
    group.finish();

    let mut group = c.benchmark_group("state_machine_step");
    let mut held = Lock::new(Config::default(), [2; 32]).expect("valid config");
    let mut t = Instant::ZERO;
    let _ = held.acquire(t, 0, Wait::No);
    roundtrip(&mut held, &mut s3, t);
    let etag = sets3lock_proto::ETag::parse("0123456789abcdef0123456789abcdef").expect("valid");
    group.bench_function("renewal: timer, request, reply", |b| {
        b.iter(|| {
            t = held.poll_timeout().unwrap_or(t);
            held.handle_timeout(t);
            if let Some(req) = held.poll_request() {
                held.handle_response(req.id, Response::Written { etag: etag.clone() }, t);
            }
            while let Some(e) = held.poll_event() {
                black_box(e);
            }
        })
    });
    group.bench_function("timer tick, nothing due (baseline)", |b| {
        b.iter(|| {
            held.handle_timeout(black_box(t));
            black_box(held.poll_timeout())
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = bench
}
criterion_main!(benches);
