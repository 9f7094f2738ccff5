//! Holds a lock for a few seconds from blocking code.
//!
//! ```text
//! export AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... AWS_REGION=eu-west-1
//! cargo run -p sets3lock --example blocking -- s3://my-bucket/locks/demo 5
//! ```

use sets3lock::{blocking::Locker, Wait};
use std::time::Duration;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .ok_or("usage: blocking s3://bucket/key [seconds]")?;
    let seconds: u64 = args.next().map(|s| s.parse()).transpose()?.unwrap_or(5);

    let locker = Locker::from_env(&url)?;
    eprintln!("acquiring {url} ...");
    // Acquires, works, releases, and returns once nothing of ours is left in flight. A loss
    // while working makes the release an error.
    let (loss, outcome) = locker.with_lock(Wait::Forever, |held| {
        eprintln!("held by owner {} (ETag {})", held.owner(), held.etag());
        // Work, but stop at once if the lock is lost: None when the time is up.
        held.wait_lost(Some(Duration::from_secs(seconds)))
    })?;
    if let Some(loss) = loss {
        eprintln!("lock lost while working: {loss:?}");
    }
    eprintln!("released: {outcome:?}");
    Ok(())
}
