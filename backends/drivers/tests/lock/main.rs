//! The lock's integration tests, one binary (linked once): the conformance suite through both
//! drivers on the mock and every server, signing, AWS profiles, GCS's tokens. The tests that
//! count or change what belongs to the whole process (its threads and running drivers, its
//! environment, a global recorder or subscriber) or run it again as workers are binaries of
//! their own: `beyond`, `own_store`, `contention`, `metrics`, `tracing`; and `blocking_only`,
//! built without tokio.

#[path = "../support/mod.rs"]
mod support;

mod conformance;
mod gcs_auth;
mod profile;
mod signin_aws;
#[cfg(all(feature = "azure", feature = "gcs"))]
mod signin_clouds;
mod signing;
mod smol;
mod terraform;
