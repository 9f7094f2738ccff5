//! The part of a driver that does not wait: the core, the clock, the signing.

use crate::request::{presign, HttpRequest};
use crate::target::{hostname, Target};
use crate::{Error, S3Options};
use sets3lock::{Instant, Lock, Request};
use std::sync::Arc;

pub(crate) struct Engine {
    pub(crate) lock: Lock,
    target: Arc<Target>,
    origin: std::time::Instant,
}

impl Engine {
    pub(crate) fn new(target: Arc<Target>, options: &S3Options) -> Result<Engine, Error> {
        let mut config = options.lock.clone();
        if config.host.is_empty() {
            config.host = hostname();
        }
        if config.pid == 0 {
            config.pid = std::process::id();
        }
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed)
            .map_err(|e| Error::Http(format!("no random source for owner ids: {e}")))?;
        Ok(Engine {
            lock: Lock::new(config, seed)?,
            target,
            origin: std::time::Instant::now(),
        })
    }

    /// The core's clock: monotonic, from this driver's start.
    pub(crate) fn now(&self) -> Instant {
        Instant::from_duration(self.origin.elapsed())
    }

    /// Wall-clock milliseconds, for the record only.
    pub(crate) fn unix_ms() -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0)
    }

    /// A core instant on the process's monotonic clock.
    pub(crate) fn to_std(&self, t: Instant) -> std::time::Instant {
        self.origin + t.since_origin()
    }

    /// The request, presigned now.
    pub(crate) fn prepare(&self, request: &Request) -> HttpRequest {
        presign(&self.target, &request.intent, &jiff::Timestamp::now())
    }
}
