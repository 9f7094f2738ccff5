//! Store options from flags, the AWS, Azure and Google environments, and an AWS profile (read
//! by the library).

use crate::cli::StoreFlags;
use sets3lock::proto::Scheme;
use sets3lock::{Error, Options, S3Options, StoreCheck};

/// The options for a lock on `scheme`'s store: that store's environment only (a malformed
/// variable of another store breaks nothing), for S3 completed from an AWS profile (with the
/// `aws-config` feature: the whole AWS chain, refreshed); flags win over both.
pub(crate) fn store_options_for(flags: &StoreFlags, scheme: Scheme) -> Result<Options, Error> {
    let mut options = Options::from_env(scheme)?;
    if scheme == Scheme::S3 {
        options.s3 = s3_part(flags)?;
    }
    apply_flags(&mut options, flags, scheme);
    Ok(options)
}

/// The whole AWS chain (profiles with SSO or assume-role, web identity, ECS and EC2 roles).
#[cfg(feature = "aws-config")]
fn s3_part(flags: &StoreFlags) -> Result<S3Options, Error> {
    if let Some(profile) = &flags.profile {
        // Read by aws-config; set before any other thread exists.
        std::env::set_var("AWS_PROFILE", profile);
    }
    S3Options::from_aws_config()
}

/// The environment's keys win over a profile, unless a profile is named with `--profile`.
/// (Static keys only; build with the `aws-config` feature for the whole AWS chain.)
#[cfg(not(feature = "aws-config"))]
fn s3_part(flags: &StoreFlags) -> Result<S3Options, Error> {
    S3Options::from_env_and_profile(flags.profile.as_deref())
}

/// `--endpoint` is the endpoint of the store the URL names.
fn apply_flags(options: &mut Options, flags: &StoreFlags, scheme: Scheme) {
    if let Some(endpoint) = &flags.endpoint {
        match scheme {
            #[cfg(feature = "azure")]
            Scheme::Azure => options.azure.endpoint = Some(endpoint.clone()),
            #[cfg(feature = "gcs")]
            Scheme::Gcs => options.gcs.endpoint = Some(endpoint.clone()),
            _ => options.s3.endpoint = Some(endpoint.clone()),
        }
    }
    if let Some(r) = &flags.region {
        options.s3.region = r.clone();
    }
    if flags.path_style {
        options.s3.path_style = Some(true);
    }
}

/// Where the store check's verdicts are kept: `$XDG_CACHE_HOME/sets3lock`, or
/// `~/.cache/sets3lock`; without either, the check runs once per process.
pub(crate) fn store_check_cache() -> StoreCheck {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    let base = var("XDG_CACHE_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| var("HOME").map(|h| std::path::PathBuf::from(h).join(".cache")));
    match base {
        Some(dir) => StoreCheck::Cached(dir.join("sets3lock")),
        None => StoreCheck::Once,
    }
}
