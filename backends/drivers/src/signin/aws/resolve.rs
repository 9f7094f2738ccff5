//! Which source of the chain applies, decided from the variables and the shared files alone.

use super::chain::{Chained, Nothing, Source};
use super::metadata::Container;
use super::sso::{cache_name, Sso};
use super::sts::{Role, Sts, WebIdentity};
use crate::s3::profile::{static_keys, SharedFiles};
use crate::{AwsCredentialSource, AwsCredentials, Error};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use url::Url;

/// What the chain found.
pub(crate) enum Resolved {
    /// Keys to use as they are.
    Keys(AwsCredentials),
    /// A source that fetches them (or one that says there are none).
    Source(Arc<dyn AwsCredentialSource>),
}

/// The chain after the environment's keys (which the caller has looked for): profile
/// `explicit` (named by the user, so it must give credentials) or `AWS_PROFILE` or `default`,
/// then web identity, the container endpoint and instance metadata.
pub(crate) fn resolve(
    explicit: Option<&str>,
    var: &dyn Fn(&str) -> Option<String>,
    files: &SharedFiles,
    region: &str,
) -> Result<Resolved, Error> {
    let ca_bundle = var("SETS3LOCK_CA_BUNDLE")
        .or_else(|| var("AWS_CA_BUNDLE"))
        .map(PathBuf::from);
    let chained = |source: Source, tried: Vec<String>| {
        Ok(Resolved::Source(Arc::new(Chained::new(
            source,
            tried,
            ca_bundle.clone(),
        ))))
    };
    let mut tried = Vec::new();
    if explicit.is_none() {
        tried.push("the environment (no AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)".to_owned());
    }
    let name = explicit
        .map(str::to_owned)
        .or_else(|| var("AWS_PROFILE"))
        .unwrap_or_else(|| "default".to_owned());
    match profile_source(&name, var, files, region, 0) {
        Ok(Found::Source(Source::Static(keys))) => return Ok(Resolved::Keys(keys)),
        Ok(Found::Source(source)) => return chained(source, tried),
        Ok(Found::Nothing(why)) if explicit.is_some() => {
            return Err(Error::Profile {
                profile: name,
                reason: why,
            })
        }
        Ok(Found::Nothing(why)) => tried.push(format!("profile {name} ({why})")),
        Err(reason) => {
            return Err(Error::Profile {
                profile: name,
                reason,
            })
        }
    }
    match (var("AWS_WEB_IDENTITY_TOKEN_FILE"), var("AWS_ROLE_ARN")) {
        (Some(file), Some(role_arn)) => {
            let sts = Sts::from_vars(var, region).map_err(no_credentials)?;
            let who = WebIdentity {
                role_arn,
                token_file: PathBuf::from(file),
                session_name: session_name(var, None),
            };
            return chained(Source::WebIdentity { who, sts }, tried);
        }
        (Some(_), None) => tried.push("web identity (AWS_ROLE_ARN is not set)".into()),
        (None, Some(_)) => {
            tried.push("web identity (AWS_WEB_IDENTITY_TOKEN_FILE is not set)".into())
        }
        (None, None) => tried.push("web identity (not configured)".into()),
    }
    match Container::from_vars(var) {
        Some(Ok(c)) => return chained(Source::Container(c), tried),
        Some(Err(e)) => return Err(no_credentials(e)),
        None => tried.push("container (not configured)".into()),
    }
    if metadata_disabled(var) {
        tried.push("instance metadata (turned off by AWS_EC2_METADATA_DISABLED)".into());
        return Ok(Resolved::Source(Arc::new(Nothing { tried })));
    }
    chained(
        Source::Instance {
            endpoint: instance_endpoint(var).map_err(no_credentials)?,
        },
        tried,
    )
}

fn no_credentials(reason: String) -> Error {
    Error::NoCredentials {
        store: "AWS",
        reason,
    }
}

/// `AWS_EC2_METADATA_DISABLED=true`.
fn metadata_disabled(var: &dyn Fn(&str) -> Option<String>) -> bool {
    var("AWS_EC2_METADATA_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

/// Instance metadata's address: `AWS_EC2_METADATA_SERVICE_ENDPOINT`, or by
/// `AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE` (`IPv4`, the default, or `IPv6`).
pub(crate) fn instance_endpoint(var: &dyn Fn(&str) -> Option<String>) -> Result<Url, String> {
    let text = match var("AWS_EC2_METADATA_SERVICE_ENDPOINT") {
        Some(e) => e,
        None => match var("AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE") {
            Some(m) if m.eq_ignore_ascii_case("ipv6") => "http://[fd00:ec2::254]".into(),
            _ => "http://169.254.169.254".into(),
        },
    };
    Url::parse(&text).map_err(|e| format!("AWS_EC2_METADATA_SERVICE_ENDPOINT {text:?}: {e}"))
}

/// A role session's name: `AWS_ROLE_SESSION_NAME` for the environment's web identity, the
/// profile's `role_session_name` for a profile's role (as the SDKs do), or one made from the
/// time.
fn session_name(
    var: &dyn Fn(&str) -> Option<String>,
    profile: Option<&HashMap<String, String>>,
) -> String {
    match profile {
        Some(p) => p.get("role_session_name").cloned(),
        None => var("AWS_ROLE_SESSION_NAME"),
    }
    .unwrap_or_else(|| format!("sets3lock-{}", jiff::Timestamp::now().as_second()))
}

enum Found {
    Source(Source),
    /// The profile gives nothing (why, for the list of what was tried).
    Nothing(String),
}

/// Chains of `source_profile` longer than this are refused (a loop, most likely).
const MOST_HOPS: usize = 5;

/// What profile `name` says to sign with; `Err` for a profile that is wrong.
fn profile_source(
    name: &str,
    var: &dyn Fn(&str) -> Option<String>,
    files: &SharedFiles,
    region: &str,
    hops: usize,
) -> Result<Found, String> {
    let Some(p) = files.profile(name) else {
        return Ok(Found::Nothing(format!("not in {}", files.shown())));
    };
    // STS is asked in the region the settings name (the environment's, else the profile's), as
    // the SDKs do.
    if let Some(role_arn) = p.get("role_arn") {
        let role = Role {
            role_arn: role_arn.clone(),
            session_name: session_name(var, Some(&p)),
            external_id: p.get("external_id").cloned(),
        };
        let base = if let Some(source) = p.get("source_profile") {
            if hops >= MOST_HOPS {
                return Err(format!(
                    "its source_profile chain is longer than {MOST_HOPS} (a loop?)"
                ));
            }
            if source == name {
                Source::Static(
                    static_keys(&p).ok_or("it is its own source_profile but has no keys")?,
                )
            } else {
                match profile_source(source, var, files, region, hops + 1)
                    .map_err(|e| format!("its source_profile {source}: {e}"))?
                {
                    Found::Source(s) => s,
                    Found::Nothing(why) => {
                        return Err(format!("its source_profile {source}: {why}"))
                    }
                }
            }
        } else if let Some(source) = p.get("credential_source") {
            match source.as_str() {
                "Environment" => match (var("AWS_ACCESS_KEY_ID"), var("AWS_SECRET_ACCESS_KEY")) {
                    (Some(k), Some(s)) => Source::Static(match var("AWS_SESSION_TOKEN") {
                        Some(t) => AwsCredentials::new_with_token(k, s, t),
                        None => AwsCredentials::new(k, s),
                    }),
                    _ => return Err("credential_source = Environment, and AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set".into()),
                },
                "Ec2InstanceMetadata" if metadata_disabled(var) => {
                    return Err("credential_source = Ec2InstanceMetadata, and AWS_EC2_METADATA_DISABLED is true".into())
                }
                "Ec2InstanceMetadata" => Source::Instance {
                    endpoint: instance_endpoint(var)?,
                },
                "EcsContainer" => match Container::from_vars(var) {
                    Some(c) => Source::Container(c?),
                    None => return Err("credential_source = EcsContainer, and AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or _FULL_URI is not set".into()),
                },
                other => return Err(format!("credential_source {other:?} is not Environment, Ec2InstanceMetadata or EcsContainer")),
            }
        } else if let Some(file) = p.get("web_identity_token_file") {
            return Ok(Found::Source(Source::WebIdentity {
                who: WebIdentity {
                    role_arn: role_arn.clone(),
                    token_file: PathBuf::from(file),
                    session_name: role.session_name,
                },
                sts: Sts::from_vars(var, region)?,
            }));
        } else {
            return Err("it has a role_arn but no source_profile, credential_source or web_identity_token_file".into());
        };
        return Ok(Found::Source(Source::AssumeRole {
            role,
            sts: Sts::from_vars(var, region)?,
            base: Box::new(base),
            profile: name.to_owned(),
        }));
    }
    if let (Some(account_id), Some(role_name)) = (p.get("sso_account_id"), p.get("sso_role_name")) {
        return sso_source(name, &p, account_id, role_name, var, files).map(Found::Source);
    }
    if let Some(keys) = static_keys(&p) {
        return Ok(Found::Source(Source::Static(keys)));
    }
    if let Some(command) = p.get("credential_process") {
        return Ok(Found::Source(Source::Process {
            command: command.clone(),
            profile: name.to_owned(),
        }));
    }
    Ok(Found::Nothing(
        "it has no keys, role_arn, SSO role or credential_process".into(),
    ))
}

fn sso_source(
    name: &str,
    p: &HashMap<String, String>,
    account_id: &str,
    role_name: &str,
    var: &dyn Fn(&str) -> Option<String>,
    files: &SharedFiles,
) -> Result<Source, String> {
    // `sso_session` names a `[sso-session NAME]` section (the cache file is named after the
    // session); a legacy profile has the start URL and region itself (named after the URL).
    let (cache_key, sso_region) = match p.get("sso_session") {
        Some(session) => {
            let s = files.sso_session(session).ok_or_else(|| {
                format!("its sso_session {session} has no [sso-session {session}] section")
            })?;
            let region = s
                .get("sso_region")
                .cloned()
                .ok_or_else(|| format!("[sso-session {session}] has no sso_region"))?;
            (session.clone(), region)
        }
        None => {
            let url = p
                .get("sso_start_url")
                .ok_or("it has an SSO role but no sso_session or sso_start_url")?;
            let region = p
                .get("sso_region")
                .ok_or("it has an SSO role but no sso_region")?;
            (url.clone(), region.clone())
        }
    };
    let home = crate::signin::fetch::home(var).ok_or("no HOME to find the SSO cache in")?;
    let portal = var("AWS_ENDPOINT_URL_SSO")
        .unwrap_or_else(|| format!("https://portal.sso.{sso_region}.amazonaws.com"));
    let portal = Url::parse(&portal).map_err(|e| format!("the SSO portal {portal:?}: {e}"))?;
    if !crate::signin::fetch::safe_for_secrets(&portal) {
        return Err(format!(
            "the SSO portal {portal} is plain http off this machine: the login's token would go in clear; use https"
        ));
    }
    Ok(Source::Sso(Sso {
        cache_file: home.join(".aws/sso/cache").join(cache_name(&cache_key)),
        portal,
        account_id: account_id.to_owned(),
        role_name: role_name.to_owned(),
        profile: name.to_owned(),
    }))
}
