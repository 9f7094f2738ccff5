//! Google Cloud Storage (`gs://bucket/key`, feature `gcs`): the JSON API with generation
//! preconditions (`ifGenerationMatch`, `ifGenerationNotMatch`); the generation plays the part
//! S3's ETag plays. Bearer tokens from Application Default Credentials (a credentials file
//! of any of its three types, gcloud's file, the metadata server), a token given, or your own
//! `CredentialSource`; none for an emulator. Replies are read by the core's GCS reply table
//! ([`sets3lock_proto::reply::gcs::classify`]).

pub(crate) mod settings;
pub(crate) mod store;
pub(crate) mod token;
