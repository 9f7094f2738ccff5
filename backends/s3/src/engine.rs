//! The part of a driver that does not wait: the core, the clock, the signing.

use crate::clock::Stamp;
use crate::request::{presign, HttpRequest};
use crate::target::{hostname, Target};
use crate::{Error, S3Options};
use sets3lock::{Instant, Lock, Request};
use std::sync::Arc;

pub(crate) struct Engine {
    pub(crate) lock: Lock,
    target: Arc<Target>,
    origin: Stamp,
    observer: Option<crate::Observer>,
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
            origin: Stamp::now(),
            observer: options.observer.clone(),
        })
    }

    /// The core's clock: the suspend-aware clock, from this driver's start.
    pub(crate) fn now(&self) -> Instant {
        Instant::from_duration(Stamp::now().since(self.origin))
    }

    /// Wall-clock milliseconds, for the record only.
    pub(crate) fn unix_ms() -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0)
    }

    /// A core instant on the drivers' clock.
    pub(crate) fn to_stamp(&self, t: Instant) -> Stamp {
        self.origin.plus(t.since_origin())
    }

    pub(crate) fn observe(&self, o: crate::Observation<'_>) {
        if let Some(observer) = &self.observer {
            observer.see(o);
        }
    }

    /// Feeds a reply to the core (and to the observer).
    pub(crate) fn answer(
        &mut self,
        request: &Request,
        response: sets3lock::Response,
        took: std::time::Duration,
    ) {
        self.observe(crate::Observation::Received(request, &response, took));
        let now = self.now();
        self.lock.handle_response(request.id, response, now);
    }

    /// Hands the core's events to `apply` (and to the observer).
    pub(crate) fn publish(&mut self, shared: &crate::state::Shared) {
        while let Some(event) = self.lock.poll_event() {
            self.observe(crate::Observation::Event(&event));
            shared.apply(&event, |t| self.to_stamp(t));
        }
    }

    /// The request, presigned now, or (when the credential source has nothing to give) the
    /// reply to feed back instead: a setback the core retries, since nothing was sent.
    pub(crate) fn prepare(&self, request: &Request) -> Result<HttpRequest, sets3lock::Response> {
        let credentials = self.target.credentials.current().map_err(|why| {
            sets3lock::Response::Ambiguous(sets3lock::Ambiguity::Connection {
                detail: format!("no credentials to sign with: {why}"),
            })
        })?;
        Ok(presign(
            &self.target,
            &credentials,
            &request.intent,
            &jiff::Timestamp::now(),
        ))
    }
}
