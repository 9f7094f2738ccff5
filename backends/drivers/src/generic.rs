//! The machinery both faces share, generic over how it waits.
//!
//! [`Locker`](crate::Locker) at the crate's root is `generic::Locker<Tokio>`, and
//! [`blocking::Locker`](crate::blocking::Locker) is `generic::Locker<Blocking>`; the same for
//! every other handle type. The methods that wait (`acquire`, `with_lock`, `release`, ...) are
//! each face's own, so use the types at the root or in `blocking`. Name these only to write
//! code generic over both faces, as the crate's own tests do.

pub use crate::api::election::Election;
pub use crate::api::held::{Held, LossWatch};
pub use crate::api::locker::Locker;
pub use crate::api::locks::Locks;
pub use crate::api::semaphore::Semaphore;
pub use crate::api::watcher::Watcher;
pub use crate::blocking::Blocking;
pub use crate::driver::mode::Mode;
#[cfg(feature = "tokio")]
pub use crate::tokio::Tokio;
