//! Observing a lock on any store: the core's [`Watch`] driven over HTTP, by whoever asks for the next
//! change (no background task or thread: the caller's `next` does the polling).

use crate::api::open::open_store;
use crate::driver::clock::Stamp;
use crate::driver::mode::Mode;
use crate::driver::store::{Sender, Store};
use crate::{Error, Observation, Options};
use core::marker::PhantomData;
use sets3lock_proto::{Instant, LockUrl, Sighting, Watch, WatchConfig, WatchEvent};
use std::sync::Arc;

/// Watches one lock: who holds it now, and every change after, for anyone (a holder, a
/// waiter, a dashboard). It only reads (conditional `GET`s, see [`sets3lock_proto::Watch`] for the
/// cadence and the cost), so it needs only `s3:GetObject` (and `s3:ListBucket` for a free
/// key to read as free rather than as access denied).
///
/// Generic over how it waits: [`tokio::Watcher`](crate::Watcher) (async `next`) and
/// [`blocking::Watcher`](crate::blocking::Watcher) (an iterator).
#[derive(Debug)]
pub struct Watcher<M: Mode> {
    store: Arc<dyn Store>,
    url: LockUrl,
    options: Options,
    watch: Watch,
    origin: Stamp,
    requests: u64,
    /// The poll handed out and not yet answered: sent again if a `next` was dropped while it
    /// was on its way (the core answers each request once).
    unanswered: Option<sets3lock_proto::Request>,
    /// The `lock` label of the instruments (feature `metrics`).
    name: String,
    /// A first sighting was reported: each one after is a change of hands.
    sighted: bool,
    mode: PhantomData<M>,
}

impl<M: Mode> Watcher<M> {
    /// A watcher of `url` (`s3://bucket/key`, or another store's URL), with these options
    /// and this cadence.
    pub fn new(url: &str, options: Options, cfg: WatchConfig) -> Result<Self, Error> {
        let url = LockUrl::parse(url)?;
        let store = open_store(url.scheme(), url.bucket(), &options, M::io())?;
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(Error::no_randomness)?;
        let watch = Watch::new(cfg, seed)?;
        let name = options
            .metrics_name
            .clone()
            .unwrap_or_else(|| url.to_string());
        Ok(Watcher {
            store,
            url,
            options,
            watch,
            origin: Stamp::now(),
            requests: 0,
            unanswered: None,
            name,
            sighted: false,
            mode: PhantomData,
        })
    }

    /// The lock's address.
    pub fn url(&self) -> &LockUrl {
        &self.url
    }

    /// The latest sighting (`None` before the first answered poll).
    pub fn current(&self) -> Option<&Sighting> {
        self.watch.current()
    }

    /// Now, on the clock of the sightings' `since` and `stale_at` (which counts through system
    /// suspend): `watcher.now().saturating_duration_since(since)` is how long a holder has
    /// been seen.
    pub fn now(&self) -> Instant {
        Instant::from_duration(Stamp::now().since(self.origin))
    }

    /// How many requests this watcher has sent.
    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// Polls until the core has something to say; `None` once the watch has stopped (after
    /// [`WatchEvent::Failed`]).
    pub(crate) async fn next_event(&mut self) -> Option<WatchEvent> {
        loop {
            if let Some(event) = self.watch.poll_event() {
                if let WatchEvent::Changed(s) = &event {
                    if std::mem::replace(&mut self.sighted, true) {
                        crate::driver::meter::changed_hands(&self.name);
                    }
                    if let Some(o) = &self.options.observer {
                        o.see(Observation::Sighting(s));
                    }
                }
                return Some(event);
            }
            if self.unanswered.is_none() {
                self.unanswered = self.watch.poll_request();
            }
            if let Some(request) = self.unanswered.clone() {
                self.requests += 1;
                let observer = self.options.observer.as_ref();
                if let Some(o) = observer {
                    o.see(Observation::Sending(&request));
                }
                let started = std::time::Instant::now();
                let sender =
                    Sender::new(self.store.as_ref(), self.options.request_timeout, observer);
                let response = sender.send(self.url.key(), &request.intent).await;
                let took = started.elapsed();
                crate::driver::meter::request(&self.name, &request, &response, took);
                if let Some(o) = observer {
                    o.see(Observation::Received(&request, &response, took));
                }
                let now = self.now();
                self.unanswered = None;
                self.watch.handle_response(request.id, response, now);
                continue;
            }
            let until = self.watch.poll_timeout()?;
            M::sleep_until(self.origin.plus(until.since_origin())).await;
            let now = self.now();
            self.watch.handle_timeout(now);
        }
    }
}
