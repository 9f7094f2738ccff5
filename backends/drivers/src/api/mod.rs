//! What a user holds: lockers, handles, semaphores, elections, watchers and the operator's
//! one-shot client. Written once for every store and both modes.

pub(crate) mod client;
pub(crate) mod election;
pub(crate) mod held;
pub(crate) mod locker;
pub(crate) mod locks;
pub(crate) mod open;
pub(crate) mod semaphore;
pub(crate) mod unlock;
pub(crate) mod watcher;
