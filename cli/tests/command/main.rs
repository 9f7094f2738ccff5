//! The command's integration tests, one binary (linked once): the real `sets3lock` binary run
//! against the project's servers (SeaweedFS, MiniStack, moto, s3rver, Azurite, fake-gcs-server),
//! some under libfaketime; `scripts/test.sh` starts the servers.

mod support;

mod cli;
mod docs;
mod election;
mod faults;
mod handles;
mod metrics;
mod signin;
mod stores;
mod time;
