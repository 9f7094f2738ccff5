//! Heap allocations per uncontended acquire + release cycle, core + mock against the mock
//! alone, counted with dhat (a separate binary, so its allocator does not skew `cycle`).

#[path = "common/mod.rs"]
mod common;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

fn main() {
    use sets3lock_mock::MockS3;
    use sets3lock_proto::{Config, Instant, Lock};
    let _profiler = dhat::Profiler::builder().testing().build();
    let mut s3 = MockS3::new();
    s3.create_bucket("bench");
    let mut lock = Lock::new(Config::default(), [1; 32]).expect("valid config");
    const N: u64 = 10_000;
    // Warm up: the first cycle fills queues and maps that are then reused.
    common::core_cycle(&mut lock, &mut s3, Instant::ZERO);
    common::mock_cycle(&mut s3, 0);

    let before = dhat::HeapStats::get();
    for _ in 0..N {
        assert!(common::core_cycle(&mut lock, &mut s3, Instant::ZERO));
    }
    let mid = dhat::HeapStats::get();
    for i in 0..N {
        assert!(common::mock_cycle(&mut s3, i + 1));
    }
    let after = dhat::HeapStats::get();
    let core = (mid.total_blocks - before.total_blocks) as f64 / N as f64;
    let base = (after.total_blocks - mid.total_blocks) as f64 / N as f64;
    let core_bytes = (mid.total_bytes - before.total_bytes) as f64 / N as f64;
    let base_bytes = (after.total_bytes - mid.total_bytes) as f64 / N as f64;
    println!("allocations per uncontended acquire+release cycle ({N} cycles)");
    println!("  core + mock            {core:>6.1} allocations {core_bytes:>8.0} bytes");
    println!("  mock alone (baseline)  {base:>6.1} allocations {base_bytes:>8.0} bytes");
    println!(
        "  core's share           {:>6.1} allocations ({:.2}x the baseline)",
        core - base,
        core / base
    );
}
