//! # sets3lock-mock: an in-memory S3 and a simulator for the sets3lock core
//!
//! - [`MockS3`]: buckets of objects with S3's exact conditional semantics (ETag = MD5 of the
//!   body; 412, 404, 409 as S3 gives them), switchable to the variants real servers show
//!   ([`Semantics`]): 412 instead of 404 for `If-Match` on a missing key (SeaweedFS), or
//!   condition headers ignored altogether (Garage, s3rver), or a `DELETE If-Match` that
//!   ignores its condition (MinIO CE) or is refused with 501 (LocalStack). [`MockS3::respond`] applies a
//!   request and classifies the reply as every driver does.
//! - [`DriftClock`]: per-process clocks whose rates drift from real time.
//! - [`Fault`]: lost requests, lost replies, late application, 409s, 5xx.
//! - [`Sim`]: runs several processes, each driving a core, against one mock bucket on a
//!   virtual timeline, in the spirit of quinn-proto's `Pair`, and checks the properties of
//!   docs/PROTOCOL.md ("Properties") at every step.
//! - [`check`]: those properties as pure functions, for any harness that drives cores against
//!   a [`MockS3`] (the repository's exhaustive exploration uses them too). Times named `at`
//!   are real time; [`sets3lock_proto::Instant`]s are a process's own clock.

#![forbid(unsafe_code)]

mod bucket;
mod clock;
mod fault;
mod sim;

pub use bucket::{etag_of, Dialect, MissingKeyIfMatch, MockS3, Object, Reply, Semantics};
pub use clock::DriftClock;
pub use fault::Fault;
pub use sim::check;
pub use sim::{
    Exit, Input, ProcessPlan, Report, Round, Sim, SimConfig, Start, Step, Tamper, Tape, Violation,
};
