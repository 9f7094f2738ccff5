//! A blocking program, measured: N uncontended acquire + release cycles through the blocking
//! face, and what the process looks like while it holds the lock. `scripts/bench-blocking.sh`
//! runs two builds of it side by side.
//!
//! ```text
//! cargo run --release -p sets3lock --example blocking_cycles -- s3://bucket/bench/key 200
//! ```
//!
//! Prints one line: `cycles N median_ms M p99_ms P threads_held T threads_after A`.

use sets3lock::{blocking::Locker, Wait};
use std::time::Instant;

/// The process's thread count, from `/proc/self/status` (0 where there is none).
fn threads() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .and_then(|n| n.trim().parse().ok())
        })
        .unwrap_or(0)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let url = args.next().ok_or("usage: blocking_cycles URL [CYCLES]")?;
    let cycles: usize = args.next().map_or(Ok(200), |n| n.parse())?;
    let locker = Locker::from_env(&url)?;
    // The first cycle opens the connection and runs the store check: not measured.
    locker.acquire(Wait::No)?.release()?;
    let mut times = Vec::with_capacity(cycles);
    let mut held_threads = 0;
    for _ in 0..cycles {
        let t = Instant::now();
        let held = locker.acquire(Wait::No)?;
        held_threads = held_threads.max(threads());
        held.release()?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    println!(
        "cycles {cycles} median_ms {:.3} p99_ms {:.3} threads_held {held_threads} threads_after {}",
        at(0.5),
        at(0.99),
        threads()
    );
    Ok(())
}
