//! Keeping cores running: the loop that sends what a core asks and feeds back the replies,
//! the state a driver shares with its handle, how each mode waits, the store seam, and the
//! store check. Nothing in here knows a store's wire format.

pub(crate) mod certificate;
pub(crate) mod clock;
pub(crate) mod engine;
pub(crate) mod http;
pub(crate) mod hub;
pub(crate) mod lookup;
pub(crate) mod meter;
pub(crate) mod mode;
pub(crate) mod observe;
#[cfg(feature = "tokio")]
pub(crate) mod reqwest_http;
pub(crate) mod server_time;
pub(crate) mod signal;
pub(crate) mod state;
pub(crate) mod store;
pub(crate) mod store_check;
pub(crate) mod threads;
pub(crate) mod ureq_http;
pub(crate) mod ureq_resolve;
