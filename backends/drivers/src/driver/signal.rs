//! A change signal for tasks on any runtime: [`Signal::listen`] gives a future that completes
//! at the next [`Signal::notify_all`] after it was made. (Threads wait on the shared state's
//! condition variable instead.)

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll, Waker};
use std::sync::{Mutex, MutexGuard};

/// Wakes every listener at once; a listener made before a notification never misses it.
#[derive(Debug, Default)]
pub(crate) struct Signal {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// How many notifications so far.
    generation: u64,
    /// Who to wake at the next one.
    wakers: Vec<Waker>,
}

impl Signal {
    fn state(&self) -> MutexGuard<'_, State> {
        // Poisoned only by a panic while pushing a waker: the state is still whole.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A future that completes at the first notification after this call.
    pub(crate) fn listen(&self) -> Listen<'_> {
        Listen {
            signal: self,
            generation: self.state().generation,
        }
    }

    /// Wakes every listener.
    pub(crate) fn notify_all(&self) {
        let wakers = {
            let mut state = self.state();
            state.generation = state.generation.wrapping_add(1);
            core::mem::take(&mut state.wakers)
        };
        for waker in wakers {
            waker.wake();
        }
    }
}

/// See [`Signal::listen`].
#[derive(Debug)]
pub(crate) struct Listen<'a> {
    signal: &'a Signal,
    generation: u64,
}

impl Future for Listen<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = self.signal.state();
        if state.generation != self.generation {
            return Poll::Ready(());
        }
        if !state.wakers.iter().any(|w| w.will_wake(cx.waker())) {
            state.wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_listener_made_before_a_notification_completes_and_one_made_after_waits() {
        let signal = Arc::new(Signal::default());
        let before = signal.listen();
        signal.notify_all();
        crate::driver::threads::block_on(before);
        let after = signal.listen();
        let mut cx = Context::from_waker(Waker::noop());
        let mut after = core::pin::pin!(after);
        assert!(after.as_mut().poll(&mut cx).is_pending());
        let notifier = signal.clone();
        let thread = std::thread::spawn(move || {
            std::thread::sleep(core::time::Duration::from_millis(20));
            notifier.notify_all();
        });
        crate::driver::threads::block_on(after);
        thread.join().expect("the notifier ends");
    }
}
