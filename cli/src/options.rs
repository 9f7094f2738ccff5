//! S3 options from flags, the AWS environment, and shared config files (~/.aws).

use crate::cli::S3Flags;
#[cfg(not(feature = "aws-config"))]
use sets3lock_s3::Credentials;
use sets3lock_s3::{Error, S3Options};
#[cfg(not(feature = "aws-config"))]
use std::path::PathBuf;

/// With the `aws-config` feature: the whole AWS chain (profiles with SSO or assume-role,
/// web identity, ECS and EC2 roles), refreshed; flags win over it.
#[cfg(feature = "aws-config")]
pub(crate) fn s3_options(flags: &S3Flags) -> Result<S3Options, Error> {
    if let Some(profile) = &flags.profile {
        // Read by aws-config; set before any other thread exists.
        std::env::set_var("AWS_PROFILE", profile);
    }
    let mut options = S3Options::from_aws_config()?;
    apply_flags(&mut options, flags)?;
    Ok(options)
}

/// Flags win over the environment; the environment's keys win over a profile, unless a
/// profile is named with `--profile`. (Static keys only; build with the `aws-config` feature
/// for the whole AWS chain.)
#[cfg(not(feature = "aws-config"))]
pub(crate) fn s3_options(flags: &S3Flags) -> Result<S3Options, Error> {
    let mut options = S3Options::from_env()?;
    let profile = flags.profile.clone().or_else(|| env("AWS_PROFILE"));
    if let Some(name) = &profile {
        let creds = read_profile(&credentials_file(), name, "");
        let config = read_profile(&config_file(), name, "profile ");
        if flags.profile.is_some() || options.credentials.is_none() {
            if let (Some(key), Some(secret)) = (
                creds.get("aws_access_key_id"),
                creds.get("aws_secret_access_key"),
            ) {
                options.credentials = Some(match creds.get("aws_session_token") {
                    Some(token) => {
                        Credentials::new_with_token(key.clone(), secret.clone(), token.clone())
                    }
                    None => Credentials::new(key.clone(), secret.clone()),
                });
            } else if flags.profile.is_some() {
                return Err(Error::Profile {
                    profile: name.clone(),
                    reason: "no aws_access_key_id and aws_secret_access_key for it in the credentials file (SSO, assume-role and process profiles are not supported yet)".into(),
                });
            }
        }
        if env("AWS_REGION").is_none() && env("AWS_DEFAULT_REGION").is_none() {
            if let Some(region) = config.get("region") {
                options.region = region.clone();
            }
        }
        if options.endpoint.is_none() {
            if let Some(e) = config.get("endpoint_url") {
                options.endpoint = Some(sets3lock_s3::parse_endpoint(e)?);
            }
        }
    } else if options.credentials.is_none() {
        let creds = read_profile(&credentials_file(), "default", "");
        if let (Some(key), Some(secret)) = (
            creds.get("aws_access_key_id"),
            creds.get("aws_secret_access_key"),
        ) {
            options.credentials = Some(Credentials::new(key.clone(), secret.clone()));
        }
    }
    apply_flags(&mut options, flags)?;
    Ok(options)
}

fn apply_flags(options: &mut S3Options, flags: &S3Flags) -> Result<(), Error> {
    if let Some(e) = &flags.endpoint {
        options.endpoint = Some(sets3lock_s3::parse_endpoint(e)?);
    }
    if let Some(r) = &flags.region {
        options.region = r.clone();
    }
    if flags.path_style {
        options.path_style = Some(true);
    }
    Ok(())
}

#[cfg(not(feature = "aws-config"))]
fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

#[cfg(not(feature = "aws-config"))]
fn home() -> PathBuf {
    env("HOME").map(PathBuf::from).unwrap_or_default()
}

#[cfg(not(feature = "aws-config"))]
fn credentials_file() -> PathBuf {
    env("AWS_SHARED_CREDENTIALS_FILE")
        .map(PathBuf::from)
        .unwrap_or_else(|| home().join(".aws/credentials"))
}

#[cfg(not(feature = "aws-config"))]
fn config_file() -> PathBuf {
    env("AWS_CONFIG_FILE")
        .map(PathBuf::from)
        .unwrap_or_else(|| home().join(".aws/config"))
}

#[cfg(not(feature = "aws-config"))]
/// The `key = value` pairs of section `[prefix+name]` (or `[default]`) of an INI file.
fn read_profile(
    path: &PathBuf,
    name: &str,
    prefix: &str,
) -> std::collections::HashMap<String, String> {
    let mut found = std::collections::HashMap::new();
    let Ok(text) = std::fs::read_to_string(path) else {
        return found;
    };
    let wanted = if name == "default" {
        "default".to_string()
    } else {
        format!("{prefix}{name}")
    };
    let mut inside = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') && line.ends_with(']') {
            inside = line[1..line.len() - 1].trim() == wanted;
        } else if inside {
            if let Some((k, v)) = line.split_once('=') {
                found.insert(k.trim().to_lowercase(), v.trim().to_owned());
            }
        }
    }
    found
}
