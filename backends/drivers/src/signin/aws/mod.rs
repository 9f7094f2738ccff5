//! The AWS credential chain, written for this crate: each source is one or two small
//! requests (or a file, or a command), fetched on a thread of its own and refreshed before
//! expiry (see `signin/refresh.rs`).

mod chain;
mod metadata;
pub(crate) mod partition;
mod process;
pub(crate) mod profile;
pub(crate) mod resolve;
mod settings;
mod sigv4;
mod sso;
mod sts;
