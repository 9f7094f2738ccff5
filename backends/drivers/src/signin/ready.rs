//! A store's first credentials, without blocking async code.
//!
//! A credential source that fetches (a role, a token service, a metadata endpoint, a command)
//! takes its time over its first value: up to a few seconds, a minute for a command. The
//! blocking mode waits for it when the store opens, as it always did, so a source that cannot
//! work fails the opening in one line. An async mode must never block its runtime: the first
//! fetch is waited for on a thread of its own, and the store's first request (and the
//! acquisition's start, which turns a failure into the same one-line error) awaits it.

use crate::driver::clock::Stamp;
use crate::driver::http::{Io, Transport};
use crate::driver::signal::Signal;
use crate::Error;
use core::time::Duration;
use futures_util::future::Either;
use std::sync::{Arc, Mutex, MutexGuard};

/// Whether a store's credentials are at hand: waited for, or awaited.
#[derive(Debug, Default)]
pub(crate) struct Readiness {
    /// `None` while the first fetch is under way; then its outcome (why not, one line).
    outcome: Mutex<Option<Result<(), String>>>,
    /// Wakes the tasks awaiting the outcome.
    settled: Signal,
}

impl Readiness {
    fn outcome(&self) -> MutexGuard<'_, Option<Result<(), String>>> {
        // Poisoned only by a panic while storing an outcome: it is still whole.
        self.outcome.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Credentials at hand from the start (keys given, a fixed token).
    pub(crate) fn at_once() -> Arc<Readiness> {
        Arc::new(Readiness {
            outcome: Mutex::new(Some(Ok(()))),
            settled: Signal::default(),
        })
    }

    /// The first credentials of a source whose blocking `ready` is `wait`, for a store of
    /// `cloud` opened in `io`'s mode: in the blocking mode waited for here (its failure is the
    /// opening's error); in an async mode waited for on a thread of its own, and awaited
    /// through [`wait`](Readiness::wait).
    pub(crate) fn of(
        wait: impl FnOnce() -> Result<(), String> + Send + 'static,
        io: Io,
        cloud: &'static str,
    ) -> Result<Arc<Readiness>, Error> {
        if io.blocks {
            return match wait() {
                Ok(()) => Ok(Readiness::at_once()),
                Err(reason) => Err(no_credentials(cloud, reason)),
            };
        }
        let readiness = Arc::new(Readiness::default());
        let settle = readiness.clone();
        let spawned = std::thread::Builder::new()
            .name("sets3lock-sign-in".into())
            .spawn(move || {
                // A source that panics (a bug) is a source with no credentials.
                let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(wait))
                    .unwrap_or_else(|_| Err("the credential source panicked (a bug)".into()));
                settle.settle(outcome);
            });
        if let Err(e) = spawned {
            readiness.settle(Err(format!(
                "could not start a thread to fetch the first credentials: {e}"
            )));
        }
        Ok(readiness)
    }

    fn settle(&self, outcome: Result<(), String>) {
        *self.outcome() = Some(outcome);
        self.settled.notify_all();
    }

    /// For a request with `limit` to end in: waits (the way `transport` pauses) until the
    /// first credentials are at hand, for `limit` at most; the time left of `limit`, or why
    /// the request cannot be signed (it is then not sent, a setback the core retries).
    pub(crate) async fn within(
        &self,
        limit: Duration,
        transport: &Transport,
    ) -> Result<Duration, String> {
        if let Some(outcome) = self.outcome().clone() {
            return outcome.map(|()| limit);
        }
        let started = Stamp::now();
        let settled = core::pin::pin!(self.wait());
        let out_of_time = core::pin::pin!(transport.pause(limit));
        match futures_util::future::select(settled, out_of_time).await {
            Either::Left((outcome, _)) => {
                outcome.map(|()| limit.saturating_sub(Stamp::now().since(started)))
            }
            Either::Right(((), _)) => Err(format!(
                "the first credentials were still being fetched after {} s",
                crate::signin::fetch::secs(limit)
            )),
        }
    }

    /// Resolves once the first credentials are at hand (at once if they already are), or with
    /// why there are none.
    pub(crate) async fn wait(&self) -> Result<(), String> {
        loop {
            // Listening before looking, so that an outcome stored in between still wakes us.
            let settled = self.settled.listen();
            if let Some(outcome) = self.outcome().clone() {
                return outcome;
            }
            settled.await;
        }
    }
}

/// The opening's error when a store of `cloud` has no credentials.
pub(crate) fn no_credentials(cloud: &'static str, reason: String) -> Error {
    Error::NoCredentials {
        store: cloud,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::threads::block_on;
    use core::future::Future;
    use core::task::{Context, Poll, Waker};
    use std::time::{Duration, Instant};

    fn async_io() -> Io {
        Io {
            blocks: false,
            ..crate::blocking::io()
        }
    }

    #[test]
    fn the_blocking_mode_waits_for_the_first_credentials_and_fails_with_their_error() {
        let ready = Readiness::of(|| Ok(()), crate::blocking::io(), "AWS").expect("ready");
        assert_eq!(block_on(ready.wait()), Ok(()));
        let e = Readiness::of(|| Err("tried this".into()), crate::blocking::io(), "AWS")
            .expect_err("no credentials");
        assert_eq!(e.to_string(), "no AWS credentials: tried this");
    }

    #[test]
    fn an_async_mode_returns_at_once_and_the_first_request_awaits_the_outcome() {
        let started = Instant::now();
        let ready = Readiness::of(
            || {
                std::thread::sleep(Duration::from_millis(300));
                Err("the endpoint said 403".into())
            },
            async_io(),
            "Azure",
        )
        .expect("opened");
        assert!(
            started.elapsed() < Duration::from_millis(100),
            "the opening waited {:?}",
            started.elapsed()
        );
        // Pending while the fetch runs: polled, it does not block.
        let mut waiting = core::pin::pin!(ready.wait());
        let mut cx = Context::from_waker(Waker::noop());
        assert!(matches!(waiting.as_mut().poll(&mut cx), Poll::Pending));
        assert!(started.elapsed() < Duration::from_millis(100));
        // Woken when it ends, with its reason; later waits get it at once.
        assert_eq!(
            block_on(waiting),
            Err("the endpoint said 403".to_owned()),
            "after {:?}",
            started.elapsed()
        );
        assert_eq!(block_on(ready.wait()), Err("the endpoint said 403".into()));
    }

    #[test]
    fn a_source_that_panics_has_no_credentials() {
        let ready = Readiness::of(|| panic!("a bug"), async_io(), "Google").expect("opened");
        let e = block_on(ready.wait()).expect_err("no credentials");
        assert!(e.contains("panicked"), "{e}");
    }
}
