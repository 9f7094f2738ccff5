//! Times uncontended acquire + release cycles through the blocking driver: the baseline the
//! Python package's benchmark (`scripts/bench-python.sh`) runs side by side with its own.
//! Prints one line: `cycles N mean_us M`.
//!
//! ```text
//! cargo run --release -p sets3lock-s3 --example cycles -- s3://my-bucket/bench/cycle 200
//! ```

use sets3lock_s3::{blocking::Locker, S3Options, StoreCheck, Wait};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .ok_or("usage: cycles s3://bucket/key [cycles]")?;
    let cycles: u32 = args.next().map(|s| s.parse()).transpose()?.unwrap_or(200);
    let mut options = S3Options::from_env()?;
    options.store_check = StoreCheck::Once;
    let locker = Locker::new(&url, options)?;
    // The store check and the connection, outside the timing.
    locker.acquire(Wait::No)?.release()?;
    let start = Instant::now();
    for _ in 0..cycles {
        locker.acquire(Wait::No)?.release()?;
    }
    let mean = start.elapsed().as_secs_f64() * 1e6 / f64::from(cycles.max(1));
    println!("cycles {cycles} mean_us {mean:.1}");
    Ok(())
}
