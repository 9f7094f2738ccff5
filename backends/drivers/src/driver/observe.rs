//! Watching a driver work: every request, reply and event, for logs (`sets3lock -v`).

use sets3lock_proto::{Event, Request, Response};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// One thing a driver did or learned.
#[derive(Debug)]
#[non_exhaustive]
pub enum Observation<'a> {
    /// A request is about to be sent.
    Sending(&'a Request),
    /// Its reply, classified, and how long it took.
    Received(&'a Request, &'a Response, Duration),
    /// An event from the core.
    Event(&'a Event),
    /// A [`Watcher`](crate::Watcher) saw the lock change hands (or go free, or go stale).
    Sighting(&'a sets3lock_proto::Sighting),
    /// The store check probed the store (it is not reported when a remembered verdict was
    /// used): what `DELETE If-Match` does there, or `None` if the check was inconclusive.
    StoreChecked(Option<sets3lock_proto::ConditionalDelete>),
    /// The server's clock differs from this machine's: requests are signed at the server's
    /// time from now on (`offset_ms` after this machine's; negative: the server is behind).
    /// Learned from the `Date` header of a reply.
    ServerClock {
        /// Milliseconds to add to this machine's wall clock to get the server's.
        offset_ms: i64,
        /// The server refused a request for its time: it is signed again and sent once more.
        resending: bool,
    },
    /// The store check's probe object could not be removed (the store kept failing): it is
    /// left beside the lock's key, a few bytes that hold no lock, for someone to delete.
    ProbeLeftBehind {
        /// Its key, in the lock's bucket or container.
        key: &'a str,
    },
}

/// A callback that sees every [`Observation`]. Called on the driver's task or thread: keep it
/// quick.
///
/// ```
/// use sets3lock::{Observation, Observer, Options};
/// let mut options = Options::default();
/// options.observer = Some(Observer::new(|o| if let Observation::Event(e) = o { eprintln!("{e:?}") }));
/// assert!(options.observer.is_some());
/// ```
#[derive(Clone)]
pub struct Observer(Arc<dyn Fn(Observation<'_>) + Send + Sync>);

impl Observer {
    /// Wraps a callback.
    pub fn new(f: impl Fn(Observation<'_>) + Send + Sync + 'static) -> Observer {
        Observer(Arc::new(f))
    }

    /// Calls the callback; a panic in it is contained (the lock must go on being driven).
    pub(crate) fn see(&self, o: Observation<'_>) {
        let f = &self.0;
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(o)));
    }
}

impl fmt::Debug for Observer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Observer")
    }
}

#[cfg(feature = "tracing")]
impl Observer {
    /// An observer that turns every observation into a [`tracing`] event with target
    /// `sets3lock`: requests and replies at `DEBUG`; the lock's events, store checks, clock
    /// corrections and a watcher's sightings at `INFO`; a loss, an expiry, a failure and a
    /// renewal that did not get through (the leader's health going bad) at `WARN`. With the
    /// `tracing` feature each lock's driver also runs in a span `sets3lock` whose field `lock`
    /// is the lock's URL.
    ///
    /// ```
    /// use sets3lock::{Observer, Options};
    /// let mut options = Options::default();
    /// options.observer = Some(Observer::tracing());
    /// # assert!(options.observer.is_some());
    /// ```
    pub fn tracing() -> Observer {
        Observer::new(trace)
    }
}

#[cfg(feature = "tracing")]
fn trace(o: Observation<'_>) {
    use tracing::{debug, info, warn};
    match o {
        Observation::Sending(r) => debug!(
            target: "sets3lock",
            id = r.id.as_u64(),
            purpose = %r.purpose,
            request = %r.intent.kind(),
            "sending"
        ),
        Observation::Received(r, response, took) => debug!(
            target: "sets3lock",
            id = r.id.as_u64(),
            reply = response.name(),
            ms = took.as_secs_f64() * 1e3,
            "received"
        ),
        Observation::Event(
            e @ (Event::Lost { .. }
            | Event::Expired
            | Event::Failed { .. }
            | Event::RenewalDelayed { .. }),
        ) => warn!(target: "sets3lock", event = ?e, "lock event"),
        Observation::Event(e) => info!(target: "sets3lock", event = ?e, "lock event"),
        Observation::StoreChecked(found) => {
            info!(target: "sets3lock", found = ?found, "store checked")
        }
        Observation::ServerClock {
            offset_ms,
            resending,
        } => info!(target: "sets3lock", offset_ms, resending, "server clock"),
        Observation::Sighting(s) => info!(target: "sets3lock", sighting = ?s, "lock changed"),
        Observation::ProbeLeftBehind { key } => {
            warn!(target: "sets3lock", key, "store-check probe left behind")
        }
    }
}
