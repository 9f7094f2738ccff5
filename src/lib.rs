//! # sets3lock-proto: the sans-IO core of a lock whose only server is an object-storage bucket
//!
//! Holding the lock means the lock object exists. It is created only if absent (S3's
//! `PUT If-None-Match: *`), renewed only if it still matches (`PUT If-Match: <etag>`), and
//! released only if it still matches (`DELETE If-Match: <etag>`), so the store's conditional
//! writes decide every race: on S3, Azure Blob Storage and Google Cloud Storage alike.
//!
//! **To take a lock, use the `sets3lock` crate**, which runs this core on every store, async
//! or blocking, and re-exports it as `sets3lock::proto`. This crate is the protocol core, and
//! only that: a sans-IO state machine ([`Lock`]) that emits [`Request`]s and consumes
//! [`Response`]s and time. It performs no I/O, reads no clock, needs no async runtime and
//! holds no global state. Drivers carry its requests to a store (the `sets3lock` crate), or to
//! the in-memory mock used by the simulation (`sets3lock-mock`), or to whatever your runtime
//! is: the [`Lock`] docs show a complete driver loop.
//!
//! What the core decides:
//! - acquisition, try-once or waiting until a deadline, with exponential backoff and full
//!   jitter while polling the holder;
//! - a lease, renewed every third of it; validity measured from when the confirmed write was
//!   *sent*, less a margin for clock-rate drift;
//! - takeover of a stale lock without trusting anyone's clock: only after seeing the same ETag
//!   for a full lease (the holder's, from its record) on our own monotonic clock, and then only
//!   with a conditional write on that ETag;
//! - recovery after a lost reply by reading the object back and looking for our owner id and
//!   sequence number, never by guessing;
//! - release that tells "deleted", "taken over" and "already gone" apart.
//!
//! Beside it, a [`Watch`] observes a lock without taking part: the holder now and every
//! change, by polling with conditional GETs; and a [`SlotChoice`] makes a counting semaphore
//! of N ordinary locks (which slot to try, wait on, keep and give back).
//!
//! Replies are classified by one pure function per store, shared by every driver of that
//! store, all in [`reply`]: [`reply::s3::classify`] for S3, [`reply::azure::classify`] for
//! Azure Blob Storage and [`reply::gcs::classify`] for Google Cloud Storage. Each maps the
//! store's native replies onto the same [`Response`]s, so the state machine is the same on
//! every store.
//!
//! The protocol itself (the record format, the reply tables, every path and why it is safe,
//! the properties) is written down in `docs/PROTOCOL.md` in the repository; the rules a
//! driver must follow in `docs/LIBRARY.md`; which test checks each property in
//! `docs/VERIFICATION.md`.

#![forbid(unsafe_code)]

mod backoff;
mod config;
mod error;
mod etag;
mod event;
mod handle;
mod httpdate;
mod intent;
mod machine;
mod record;
pub mod reply;
mod rng;
mod slots;
mod store;
mod terraform;
mod time;
mod url;
mod wait;
mod watch;

pub use backoff::Backoff;
pub use config::{Config, ConfigError};
pub use error::Error;
pub use etag::{ETag, InvalidETag};
pub use event::{Event, HoldEnded, LostReason, NotAcquired, ReleaseOutcome, Setback};
pub use handle::{Handle, HandleError};
pub use intent::{Intent, IntentKind, Purpose, Request, RequestId, CONTENT_TYPE};
pub use machine::{CommandError, Lock, Resume, MIN_HOLD_REQUEST_WAIT};
pub use record::{
    Fence, Holder, InvalidOwnerId, LockState, OwnerId, Record, FENCED_FORMAT_VERSION,
    FORMAT_VERSION, MAX_TOKEN, MAX_VALUE,
};
pub use reply::{store_age, Ambiguity, Response};
pub use slots::{SlotChoice, SlotOutcome, SlotStep};
pub use store::ConditionalDelete;
pub use terraform::{terraform_id, TerraformFormat, TerraformInfo, TERRAFORM_KEYS};
pub use time::Instant;
pub use url::{LockUrl, Scheme, UrlError};
pub use wait::Wait;
pub use watch::{Sighting, Watch, WatchConfig, WatchEvent};
