//! Store options from the flags, on top of what the library reads from the environment.

use crate::cli::StoreFlags;
use sets3lock::proto::Scheme;
use sets3lock::{Error, Options};

/// The options for a lock on `scheme`'s store: that store's environment only (a malformed
/// variable of another store breaks nothing), for S3 with the AWS profile (`--profile`, or
/// the one the environment names, and the rest of the AWS chain); flags win over both.
pub(crate) fn store_options_for(flags: &StoreFlags, scheme: Scheme) -> Result<Options, Error> {
    let mut options = environment(flags, scheme)?;
    if let Some(endpoint) = &flags.endpoint {
        options.set_endpoint(scheme, endpoint.clone());
    }
    if let Some(r) = &flags.region {
        options.s3.region = r.clone();
    }
    if flags.path_style {
        options.s3.path_style = Some(true);
    }
    Ok(options)
}

/// The environment's keys win over a profile, unless a profile is named with `--profile`; then
/// the rest of the AWS chain (profiles with roles, SSO or processes, web identity, the
/// container endpoint, instance metadata).
fn environment(flags: &StoreFlags, scheme: Scheme) -> Result<Options, Error> {
    match &flags.profile {
        Some(profile) => Options::from_env_with_profile(scheme, profile),
        None => Options::from_env(scheme),
    }
}
