//! The cycles both benchmark binaries measure.
#![allow(dead_code)] // each bench binary uses part of it

use sets3lock_mock::MockS3;
use sets3lock_proto::{Event, Instant, Intent, Lock, OwnerId, Record, Response, Wait};
use std::time::Duration;

pub(crate) const B: &str = "bench";
pub(crate) const K: &str = "lock";

pub(crate) fn roundtrip(lock: &mut Lock, s3: &mut MockS3, now: Instant) {
    while let Some(req) = lock.poll_request() {
        let response = s3.respond(B, K, &req.intent);
        lock.handle_response(req.id, response, now);
    }
}

/// One uncontended acquire + release through the core. Returns whether it acquired.
pub(crate) fn core_cycle(lock: &mut Lock, s3: &mut MockS3, now: Instant) -> bool {
    let _ = lock.acquire(now, 0, Wait::No);
    roundtrip(lock, s3, now);
    let acquired = matches!(lock.poll_event(), Some(Event::Acquired { .. }));
    let _ = lock.release(now);
    roundtrip(lock, s3, now);
    let _ = lock.poll_event();
    acquired
}

/// The same two requests without the core: a record body, a conditional PUT, a conditional
/// DELETE, both replies classified.
pub(crate) fn mock_cycle(s3: &mut MockS3, seq: u64) -> bool {
    let body = Record {
        owner: OwnerId::from_u128(u128::from(seq)),
        seq: 1,
        lease: Duration::from_secs(60),
        host: String::new(),
        pid: 0,
        acquired_unix_ms: 0,
        written_unix_ms: 0,
        fence: None,
        value: None,
        writer: None,
        cooldown: false,
        parked: false,
        terraform: None,
    }
    .encode();
    let put = Intent::PutIfNoneMatch { body };
    let Response::Written { etag } = s3.respond(B, K, &put) else {
        return false;
    };
    let del = Intent::DeleteIfMatch { etag };
    s3.respond(B, K, &del) == Response::Deleted
}
