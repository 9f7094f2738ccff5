//! Times uncontended acquire + release cycles through the blocking driver (or the tokio one):
//! the baseline the Python package's benchmark (`scripts/bench-python.sh`) runs side by side
//! with its own. Prints one line: `cycles N mean_us M`.
//!
//! ```text
//! cargo run --release -p sets3lock-s3 --example cycles -- s3://my-bucket/bench/cycle 200 [tokio]
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
    let mean = match args.next().as_deref() {
        Some("tokio") => asynchronous(&url, options, cycles)?,
        _ => blocking(&url, options, cycles)?,
    };
    println!("cycles {cycles} mean_us {mean:.1}");
    Ok(())
}

/// The mean cycle in microseconds, through the blocking driver (a thread per lock).
fn blocking(url: &str, options: S3Options, cycles: u32) -> Result<f64, sets3lock_s3::Error> {
    let locker = Locker::new(url, options)?;
    // The store check and the connection, outside the timing.
    locker.acquire(Wait::No)?.release()?;
    let start = Instant::now();
    for _ in 0..cycles {
        locker.acquire(Wait::No)?.release()?;
    }
    Ok(start.elapsed().as_secs_f64() * 1e6 / f64::from(cycles.max(1)))
}

/// The mean cycle in microseconds, through the tokio driver (on a two-thread runtime, as the
/// Python package runs it).
fn asynchronous(
    url: &str,
    options: S3Options,
    cycles: u32,
) -> Result<f64, Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let locker = sets3lock_s3::tokio::Locker::new(url, options)?;
        locker.acquire(Wait::No).await?.release().await?;
        let start = Instant::now();
        for _ in 0..cycles {
            locker.acquire(Wait::No).await?.release().await?;
        }
        Ok(start.elapsed().as_secs_f64() * 1e6 / f64::from(cycles.max(1)))
    })
}
