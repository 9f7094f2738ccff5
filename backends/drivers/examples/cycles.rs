//! Times uncontended acquire + release cycles through the blocking driver (or the tokio one):
//! the baseline the Python package's benchmark (`scripts/bench-python.sh`) runs side by side
//! with its own. Prints one line: `cycles N mean_us M`.
//!
//! ```text
//! cargo run --release -p sets3lock --example cycles -- s3://my-bucket/bench/cycle 200 [tokio]
//! ```
//!
//! Built with the `metrics` feature it installs a recorder that keeps every series (a map
//! lookup and an atomic per instrument, as an exporter's would) and prints the number of
//! series at the end: `scripts/bench-metrics.sh` runs it beside the build without the feature.

use sets3lock::{blocking::Locker, Options, StoreCheck, Wait};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    #[cfg(feature = "metrics")]
    let kept = recorder::install();
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .ok_or("usage: cycles s3://bucket/key [cycles]")?;
    let cycles: u32 = args.next().map(|s| s.parse()).transpose()?.unwrap_or(200);
    let mut options = Options::from_env(sets3lock::LockUrl::parse(&url)?.scheme())?;
    options.store_check = StoreCheck::Once;
    let mean = match args.next().as_deref() {
        Some("tokio") => asynchronous(&url, options, cycles)?,
        _ => blocking(&url, options, cycles)?,
    };
    println!("cycles {cycles} mean_us {mean:.1}");
    #[cfg(feature = "metrics")]
    println!("series {}", kept.series());
    Ok(())
}

/// A recorder as an exporter would be: each registration looks its series up in a map, each
/// update is an atomic.
#[cfg(feature = "metrics")]
mod recorder {
    use metrics::{
        Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit,
    };
    use std::collections::HashMap;
    use std::sync::atomic::AtomicU64;
    use std::sync::{Arc, Mutex};

    #[derive(Default)]
    pub(super) struct Kept(Mutex<HashMap<Key, Arc<AtomicU64>>>);

    impl Kept {
        pub(super) fn series(&self) -> usize {
            self.0.lock().map_or(0, |m| m.len())
        }
        fn cell(&self, key: &Key) -> Arc<AtomicU64> {
            let mut map = self
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            map.entry(key.clone()).or_default().clone()
        }
    }

    /// Counters and gauges keep a number; a histogram, the bits of its last sample.
    struct Last(Arc<AtomicU64>);
    impl metrics::HistogramFn for Last {
        fn record(&self, value: f64) {
            self.0
                .store(value.to_bits(), std::sync::atomic::Ordering::Relaxed);
        }
    }

    impl Recorder for Kept {
        fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
            Counter::from_arc(self.cell(key))
        }
        fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
            Gauge::from_arc(self.cell(key))
        }
        fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
            Histogram::from_arc(Arc::new(Last(self.cell(key))))
        }
    }

    pub(super) fn install() -> &'static Kept {
        let kept: &'static Kept = Box::leak(Box::default());
        // The only recorder of this process.
        let _ = metrics::set_global_recorder(kept);
        kept
    }
}

/// The mean cycle in microseconds, through the blocking driver (a thread per lock).
fn blocking(url: &str, options: Options, cycles: u32) -> Result<f64, sets3lock::Error> {
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
    options: Options,
    cycles: u32,
) -> Result<f64, Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let locker = sets3lock::Locker::new(url, options)?;
        locker.acquire(Wait::No).await?.release().await?;
        let start = Instant::now();
        for _ in 0..cycles {
            locker.acquire(Wait::No).await?.release().await?;
        }
        Ok(start.elapsed().as_secs_f64() * 1e6 / f64::from(cycles.max(1)))
    })
}
