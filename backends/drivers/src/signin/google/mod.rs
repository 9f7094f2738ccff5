//! Google's Application Default Credentials, in the order of Google's own libraries:
//! `GOOGLE_APPLICATION_CREDENTIALS`, gcloud's `application_default_credentials.json`, then
//! the metadata server. A credentials file is a service account's key (tokens it signs
//! itself), a user's refresh token (`gcloud auth application-default login`), or workload
//! identity federation (`external_account`). Tokens are fetched on a thread of their own
//! ahead of expiry (see `signin/refresh.rs`).

mod chain;
mod external;
mod files;
mod jwt;
mod metadata;

pub(crate) use chain::{resolve, resolve_named, Named};

/// The scope every token is asked for (GCS takes it; it names no narrower one that
/// sets3lock could ask for across all three kinds of source).
const SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";
