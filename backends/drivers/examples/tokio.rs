//! Holds a lock for a few seconds from async code.
//!
//! ```text
//! export AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... AWS_REGION=eu-west-1
//! cargo run -p sets3lock --example tokio -- s3://my-bucket/locks/demo 5
//! ```
//! With an S3-compatible store, also set AWS_ENDPOINT_URL (path-style addressing follows).

use sets3lock::{Locker, Wait};
use std::time::Duration;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .ok_or("usage: tokio s3://bucket/key [seconds]")?;
    let seconds: u64 = args.next().map(|s| s.parse()).transpose()?.unwrap_or(5);

    let locker = Locker::from_env(&url)?;
    eprintln!("acquiring {url} ...");
    // Acquires, works, releases, and returns once nothing of ours is left in flight: the
    // runtime may end right after. A loss while working makes the release an error.
    let ((), outcome) = locker
        .with_lock(Wait::Timeout(Duration::from_secs(120)), async |held| {
            eprintln!("held by owner {} (ETag {})", held.owner(), held.etag());
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(seconds)) => eprintln!("work done"),
                loss = held.lost() => eprintln!("lock lost while working: {loss:?}"),
            }
        })
        .await?;
    eprintln!("released: {outcome:?}");
    Ok(())
}
