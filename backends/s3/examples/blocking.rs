//! Holds a lock for a few seconds from blocking code.
//!
//! ```text
//! export AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... AWS_REGION=eu-west-1
//! cargo run -p sets3lock-s3 --example blocking -- s3://my-bucket/locks/demo 5
//! ```

use sets3lock_s3::{blocking::Locker, WaitFor};
use std::time::Duration;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .ok_or("usage: blocking s3://bucket/key [seconds]")?;
    let seconds: u64 = args.next().map(|s| s.parse()).transpose()?.unwrap_or(5);

    let locker = Locker::from_env(&url)?;
    eprintln!("acquiring {url} ...");
    let held = locker.acquire(WaitFor::Forever)?;
    eprintln!("held by owner {} (ETag {:?})", held.owner(), held.etag());

    // Work, but stop at once if the lock is lost: wait_lost returns None when the time is up.
    if let Some(loss) = held.wait_lost(Some(Duration::from_secs(seconds))) {
        eprintln!("lock lost while working: {loss:?}");
        return Err("lock lost".into());
    }
    eprintln!("released: {:?}", held.release()?);
    Ok(())
}
