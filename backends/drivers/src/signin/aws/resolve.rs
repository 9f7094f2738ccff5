//! Which source of the chain applies, decided from the variables and the shared files alone,
//! by the AWS SDKs' rules (aws-config's `resolve_chain`):
//!
//! - A profile with `role_arn` (and no `web_identity_token_file`) assumes that role with the
//!   credentials of its `source_profile` (itself, if it names itself) or its
//!   `credential_source` (`Environment`, `Ec2InstanceMetadata`, `EcsContainer`, in any case);
//!   never both.
//! - Past the first profile of a chain, static keys win over a `role_arn`: a source profile
//!   with keys of its own signs the next hop with them.
//! - Otherwise a profile's own credentials, the first of: `credential_source`, a web identity
//!   (`web_identity_token_file` with `role_arn`), an SSO role, `credential_process`, static
//!   keys (both halves, or an error).
//! - A chain that comes back to a profile it passed is a loop: an error, at any length.

use super::chain::{Chained, Nothing, Source};
use super::metadata::Container;
use super::profile::{Profiles, Settings};
use super::sso::{cache_name, Session, Sso};
use super::sts::{Role, Sts, WebIdentity};
use crate::signin::fetch::CaBundle;
use crate::{AwsCredentialSource, AwsCredentials, Error};
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

/// Where the token services are, as the settings found them: the region (the environment's,
/// else the profile's) and the STS endpoint the environment or the profile names.
pub(crate) struct Services<'a> {
    pub(crate) region: &'a str,
    /// `AWS_ENDPOINT_URL_STS`, `AWS_ENDPOINT_URL`, the profile's `[services]` `sts`
    /// `endpoint_url`, or its `endpoint_url`; `None`: the region's.
    pub(crate) sts: Option<String>,
}

/// The chain after the environment's keys (which the caller has looked for): profile
/// `explicit` (named by the user, so it must give credentials) or `AWS_PROFILE` or `default`,
/// then web identity, the container endpoint and instance metadata.
pub(crate) fn resolve(
    explicit: Option<&str>,
    var: &dyn Fn(&str) -> Option<String>,
    profiles: &Profiles,
    services: &Services<'_>,
    ca_bundle: &CaBundle,
) -> Result<Resolved, Error> {
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
    let env = Env { var, services };
    match plan(profiles, &name).and_then(|plan| env.source(plan)) {
        Ok(Source::Static(keys)) => return Ok(Resolved::Keys(keys)),
        Ok(source) => return chained(source, tried),
        Err(Refusal::NotThere(why)) if explicit.is_some() => {
            return Err(Error::Profile {
                profile: name,
                reason: why,
            })
        }
        Err(Refusal::NotThere(why)) => tried.push(format!("profile {name} ({why})")),
        Err(Refusal::Wrong(reason)) => {
            return Err(Error::Profile {
                profile: name,
                reason,
            })
        }
    }
    match (var("AWS_WEB_IDENTITY_TOKEN_FILE"), var("AWS_ROLE_ARN")) {
        (Some(file), Some(role_arn)) => {
            let sts = env.sts().map_err(no_credentials)?;
            let who = WebIdentity {
                role_arn,
                token_file: PathBuf::from(file),
                session_name: session_name(var("AWS_ROLE_SESSION_NAME")),
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
/// `AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE` (`IPv4`, the default, or `IPv6`). Credentials come
/// back from it in clear, so an address in a variable must be `https`, or on this machine or
/// its link.
pub(crate) fn instance_endpoint(var: &dyn Fn(&str) -> Option<String>) -> Result<Url, String> {
    let text = match var("AWS_EC2_METADATA_SERVICE_ENDPOINT") {
        Some(e) => e,
        None => match var("AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE") {
            Some(m) if m.eq_ignore_ascii_case("ipv6") => "http://[fd00:ec2::254]".into(),
            _ => "http://169.254.169.254".into(),
        },
    };
    let url = Url::parse(&text)
        .map_err(|e| format!("AWS_EC2_METADATA_SERVICE_ENDPOINT {text:?}: {e}"))?;
    if !crate::signin::fetch::safe_for_secrets(&url) {
        return Err(format!(
            "AWS_EC2_METADATA_SERVICE_ENDPOINT {text:?} is plain http off this machine and its link: credentials would come back in clear; use https"
        ));
    }
    Ok(url)
}

/// A role session's name: the one given (`AWS_ROLE_SESSION_NAME`, or the profile's
/// `role_session_name`), or one made from the time.
fn session_name(given: Option<String>) -> String {
    given.unwrap_or_else(|| format!("sets3lock-{}", jiff::Timestamp::now().as_second()))
}

/// Why a profile gives no source.
#[derive(Debug, PartialEq, Eq)]
enum Refusal {
    /// It is not there, or says nothing about credentials: the chain goes on (unless the
    /// profile was named explicitly).
    NotThere(String),
    /// It is wrong: an error, whoever named it (never a fall through to another identity).
    Wrong(String),
}

/// A profile's chain: where its first credentials come from, and the roles assumed with them,
/// the first assumed first.
#[derive(Debug)]
struct Plan {
    base: Base,
    roles: Vec<Hop>,
}

/// One role a chain assumes: in profile `profile`.
#[derive(Debug)]
struct Hop {
    profile: String,
    role_arn: String,
    external_id: Option<String>,
    session_name: Option<String>,
}

/// Where a chain's first credentials come from, and the profile that says so.
#[derive(Debug)]
enum Base {
    Keys(AwsCredentials),
    /// A `credential_source`.
    Named(Named),
    WebIdentity {
        role_arn: String,
        token_file: String,
        session_name: Option<String>,
    },
    Sso {
        profile: String,
        sso: SsoSettings,
    },
    Process {
        profile: String,
        command: String,
    },
}

/// The three `credential_source`s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Named {
    Environment,
    Ec2InstanceMetadata,
    EcsContainer,
}

/// An SSO role: the account and role, the portal's region and start URL, and the session
/// (`sso_session`) whose cached login can be refreshed; a legacy profile has none.
#[derive(Debug, PartialEq, Eq)]
struct SsoSettings {
    account_id: String,
    role_name: String,
    region: String,
    start_url: String,
    session: Option<String>,
}

/// What comes after a profile with a role.
enum Next {
    /// Its own credentials (`source_profile` names itself).
    Itself,
    Profile(String),
    Named(Named),
}

/// The chain profile `selected` starts.
fn plan(profiles: &Profiles, selected: &str) -> Result<Plan, Refusal> {
    if profiles.is_empty() {
        return Err(Refusal::NotThere(format!(
            "no profiles in {}",
            profiles.shown()
        )));
    }
    let mut name = selected.to_owned();
    let mut visited: Vec<String> = Vec::new();
    // The selected profile's role first.
    let mut roles = Vec::new();
    let base = loop {
        let Some(p) = profiles.profile(&name) else {
            return Err(match visited.last() {
                None => Refusal::NotThere(format!("not in {}", profiles.shown())),
                Some(from) => Refusal::Wrong(format!(
                    "profile {from} names source_profile {name}, which is not in {}",
                    profiles.shown()
                )),
            });
        };
        if visited.contains(&name) {
            return Err(Refusal::Wrong(format!(
                "its source_profile chain loops ({} then {name} again)",
                visited.join(", ")
            )));
        }
        visited.push(name.clone());
        let first = visited.len() == 1;
        // Past the first hop, a profile's own keys win over its role.
        if !first {
            if let Some(keys) = both_keys(p) {
                break Base::Keys(keys);
            }
        }
        let role_arn = p
            .get("role_arn")
            .filter(|_| !p.contains_key("web_identity_token_file"));
        let Some(role_arn) = role_arn else {
            break own_credentials(profiles, &name, p).map_err(|r| inside(r, &name, first))?;
        };
        let next = next(&name, p)?;
        roles.push(Hop {
            profile: name.clone(),
            role_arn: role_arn.clone(),
            external_id: p.get("external_id").cloned(),
            session_name: p.get("role_session_name").cloned(),
        });
        match next {
            Next::Itself => {
                break own_credentials(profiles, &name, p).map_err(|r| inside(r, &name, false))?
            }
            Next::Named(named) => break Base::Named(named),
            Next::Profile(source) => name = source,
        }
    };
    roles.reverse();
    Ok(Plan { base, roles })
}

/// A refusal about profile `name`'s own credentials: past the first profile (or under a
/// role) an error, whatever it was.
fn inside(refusal: Refusal, name: &str, first: bool) -> Refusal {
    match refusal {
        Refusal::NotThere(why) if !first => {
            Refusal::Wrong(format!("its source profile {name}: {why}"))
        }
        Refusal::Wrong(why) if !first => {
            Refusal::Wrong(format!("its source profile {name}: {why}"))
        }
        other => other,
    }
}

/// What a profile with a role takes its credentials from.
fn next(name: &str, p: &Settings) -> Result<Next, Refusal> {
    match (p.get("source_profile"), p.get("credential_source")) {
        (Some(_), Some(_)) => Err(Refusal::Wrong(
            "it has both source_profile and credential_source: keep one".into(),
        )),
        (None, None) => Err(Refusal::Wrong(
            "it has a role_arn but no source_profile, credential_source or web_identity_token_file"
                .into(),
        )),
        (Some(source), None) if source == name => Ok(Next::Itself),
        (Some(source), None) => Ok(Next::Profile(source.clone())),
        (None, Some(named)) => named_source(named).map(Next::Named),
    }
}

/// A `credential_source` (the SDKs take it in any case).
fn named_source(text: &str) -> Result<Named, Refusal> {
    [
        ("environment", Named::Environment),
        ("ec2instancemetadata", Named::Ec2InstanceMetadata),
        ("ecscontainer", Named::EcsContainer),
    ]
    .into_iter()
    .find(|(n, _)| text.eq_ignore_ascii_case(n))
    .map(|(_, named)| named)
    .ok_or_else(|| {
        Refusal::Wrong(format!(
            "credential_source {text:?} is not Environment, Ec2InstanceMetadata or EcsContainer"
        ))
    })
}

/// Both halves of a profile's static keys (and its session token), if it has both.
fn both_keys(p: &Settings) -> Option<AwsCredentials> {
    let key = p.get("aws_access_key_id")?;
    let secret = p.get("aws_secret_access_key")?;
    Some(match p.get("aws_session_token") {
        Some(token) => AwsCredentials::new_with_token(key.clone(), secret.clone(), token.clone()),
        None => AwsCredentials::new(key.clone(), secret.clone()),
    })
}

/// A profile's own credentials, in the SDKs' order.
fn own_credentials(profiles: &Profiles, name: &str, p: &Settings) -> Result<Base, Refusal> {
    if let Some(named) = p.get("credential_source") {
        return named_source(named).map(Base::Named);
    }
    if let Some(file) = p.get("web_identity_token_file") {
        let role_arn = p.get("role_arn").ok_or_else(|| {
            Refusal::Wrong("it has a web_identity_token_file but no role_arn".into())
        })?;
        return Ok(Base::WebIdentity {
            role_arn: role_arn.clone(),
            token_file: file.clone(),
            session_name: p.get("role_session_name").cloned(),
        });
    }
    const SSO: [&str; 5] = [
        "sso_account_id",
        "sso_region",
        "sso_role_name",
        "sso_start_url",
        "sso_session",
    ];
    if SSO.iter().any(|k| p.contains_key(*k)) {
        return Ok(Base::Sso {
            profile: name.to_owned(),
            sso: sso_settings(profiles, name, p)?,
        });
    }
    if p.contains_key("login_session") {
        return Err(Refusal::Wrong(
            "it signs in with login_session (`aws login`), which this build does not support: use `aws configure sso`, keys, or a role".into(),
        ));
    }
    if let Some(command) = p.get("credential_process") {
        return Ok(Base::Process {
            profile: name.to_owned(),
            command: command.clone(),
        });
    }
    match (
        p.get("aws_access_key_id"),
        p.get("aws_secret_access_key"),
        p.get("aws_session_token"),
    ) {
        (None, None, None) => Err(Refusal::NotThere(
            "it has no keys, role_arn, SSO role or credential_process".into(),
        )),
        (None, _, _) => Err(Refusal::Wrong(
            "it has no aws_access_key_id to go with its other keys".into(),
        )),
        (Some(_), None, _) => Err(Refusal::Wrong(
            "it has an aws_access_key_id but no aws_secret_access_key".into(),
        )),
        (Some(_), Some(_), _) => both_keys(p)
            .map(Base::Keys)
            .ok_or_else(|| Refusal::Wrong("its keys cannot be read".into())),
    }
}

/// An SSO profile's settings, checked as the SDKs check them.
fn sso_settings(profiles: &Profiles, name: &str, p: &Settings) -> Result<SsoSettings, Refusal> {
    let wrong = |why: String| Refusal::Wrong(why);
    let (region, start_url, session) = match p.get("sso_session") {
        Some(session) => {
            for key in ["sso_start_url", "sso_region"] {
                if p.contains_key(key) {
                    return Err(wrong(format!(
                        "it has sso_session, so its {key} belongs in [sso-session {session}] only"
                    )));
                }
            }
            let s = profiles.sso_session(session).ok_or_else(|| {
                wrong(format!(
                    "its sso_session {session} has no [sso-session {session}] section"
                ))
            })?;
            (
                s.get("sso_region").cloned(),
                s.get("sso_start_url").cloned(),
                Some(session.clone()),
            )
        }
        None => (
            p.get("sso_region").cloned(),
            p.get("sso_start_url").cloned(),
            None,
        ),
    };
    let (account_id, role_name) = match (p.get("sso_account_id"), p.get("sso_role_name")) {
        (Some(a), Some(r)) => (a.clone(), r.clone()),
        (Some(_), None) => {
            return Err(wrong(
                "it has an sso_account_id but no sso_role_name".into(),
            ))
        }
        (None, Some(_)) => {
            return Err(wrong(
                "it has an sso_role_name but no sso_account_id".into(),
            ))
        }
        (None, None) => {
            return Err(Refusal::NotThere(format!(
            "profile {name} gives an SSO login but no role (no sso_account_id and sso_role_name)"
        )))
        }
    };
    let region = region.ok_or_else(|| wrong("its SSO login has no sso_region".into()))?;
    let start_url = start_url.ok_or_else(|| wrong("its SSO login has no sso_start_url".into()))?;
    Ok(SsoSettings {
        account_id,
        role_name,
        region,
        start_url,
        session,
    })
}

/// The environment a plan's sources are made in.
struct Env<'a> {
    var: &'a dyn Fn(&str) -> Option<String>,
    services: &'a Services<'a>,
}

impl Env<'_> {
    /// STS, where the settings say (STS is asked in the settings' region, as the SDKs do).
    fn sts(&self) -> Result<Sts, String> {
        Sts::new(self.services.sts.as_deref(), self.services.region)
    }

    /// The source that fetches what `plan` says.
    fn source(&self, plan: Plan) -> Result<Source, Refusal> {
        let wrong = Refusal::Wrong;
        let var = self.var;
        let mut source = match plan.base {
            Base::Keys(keys) => Source::Static(keys),
            Base::Named(Named::Environment) => {
                match (var("AWS_ACCESS_KEY_ID"), var("AWS_SECRET_ACCESS_KEY")) {
                    (Some(k), Some(s)) => Source::Static(match var("AWS_SESSION_TOKEN") {
                        Some(t) => AwsCredentials::new_with_token(k, s, t),
                        None => AwsCredentials::new(k, s),
                    }),
                    _ => return Err(wrong("credential_source = Environment, and AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set".into())),
                }
            }
            Base::Named(Named::Ec2InstanceMetadata) => {
                if metadata_disabled(var) {
                    return Err(wrong("credential_source = Ec2InstanceMetadata, and AWS_EC2_METADATA_DISABLED is true".into()));
                }
                Source::Instance {
                    endpoint: instance_endpoint(var).map_err(wrong)?,
                }
            }
            Base::Named(Named::EcsContainer) => match Container::from_vars(var) {
                Some(c) => Source::Container(c.map_err(wrong)?),
                None => return Err(wrong("credential_source = EcsContainer, and AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or _FULL_URI is not set".into())),
            },
            Base::WebIdentity {
                role_arn,
                token_file,
                session_name: given,
                ..
            } => Source::WebIdentity {
                who: WebIdentity {
                    role_arn,
                    token_file: PathBuf::from(token_file),
                    session_name: session_name(given),
                },
                sts: self.sts().map_err(wrong)?,
            },
            Base::Sso { profile, sso } => Source::Sso(self.sso(&profile, sso).map_err(wrong)?),
            Base::Process { profile, command } => Source::Process { command, profile },
        };
        for hop in plan.roles {
            source = Source::AssumeRole {
                role: Role {
                    role_arn: hop.role_arn,
                    session_name: session_name(hop.session_name),
                    external_id: hop.external_id,
                },
                sts: self.sts().map_err(wrong)?,
                base: Box::new(source),
                profile: hop.profile,
            };
        }
        Ok(source)
    }

    fn sso(&self, profile: &str, s: SsoSettings) -> Result<Sso, String> {
        let var = self.var;
        // A session's cache file is named after the session, a legacy profile's after its
        // start URL (as `aws sso login` names them).
        let cache_key = s.session.as_deref().unwrap_or(&s.start_url);
        let home = crate::signin::fetch::home(var).ok_or("no HOME to find the SSO cache in")?;
        let endpoint = |variable: &str, service: &str| -> Result<Url, String> {
            let text = match var(variable) {
                Some(e) => e,
                None => super::partition::endpoint(service, &s.region)?,
            };
            let url = Url::parse(&text).map_err(|e| format!("the SSO endpoint {text:?}: {e}"))?;
            if !crate::signin::fetch::safe_for_secrets(&url) {
                return Err(format!(
                    "the SSO endpoint {url} is plain http off this machine: the login's token would go in clear; use https"
                ));
            }
            Ok(url)
        };
        let session = match &s.session {
            Some(_) => Some(Session {
                oidc: endpoint("AWS_ENDPOINT_URL_SSO_OIDC", "oidc")?,
            }),
            None => None,
        };
        Ok(Sso {
            cache_file: home.join(".aws/sso/cache").join(cache_name(cache_key)),
            portal: endpoint("AWS_ENDPOINT_URL_SSO", "portal.sso")?,
            account_id: s.account_id,
            role_name: s.role_name,
            profile: profile.to_owned(),
            session,
        })
    }
}

/// The region a profile gives: its own `region`, else that of its `source_profile`, and so on
/// (as the SDKs look for it).
pub(crate) fn profile_region(profiles: &Profiles, selected: &str) -> Option<String> {
    let mut name = selected;
    let mut visited = Vec::new();
    loop {
        let p = profiles.profile(name)?;
        if let Some(region) = p.get("region") {
            return Some(region.clone());
        }
        visited.push(name);
        match p.get("source_profile") {
            Some(next) if !visited.contains(&next.as_str()) => name = next,
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profiles(config: &str, credentials: &str) -> Profiles {
        Profiles::from_texts(config, credentials).expect("parses")
    }

    /// The plan as a line: each role (innermost first) then the base.
    fn chain(config: &str, credentials: &str, selected: &str) -> Result<String, Refusal> {
        let plan = plan(&profiles(config, credentials), selected)?;
        let base = match &plan.base {
            Base::Keys(k) => format!("keys {}", k.key()),
            Base::Named(n) => format!("{n:?}"),
            Base::WebIdentity { role_arn, .. } => format!("web identity {role_arn}"),
            Base::Sso { profile, sso } => format!(
                "sso {}/{} at {} ({profile}, session {:?})",
                sso.account_id, sso.role_name, sso.start_url, sso.session
            ),
            Base::Process { profile, command } => format!("process {command:?} ({profile})"),
        };
        let roles: Vec<String> = plan
            .roles
            .iter()
            .map(|h| format!("{} ({})", h.role_arn, h.profile))
            .collect();
        Ok(std::iter::once(base)
            .chain(roles)
            .collect::<Vec<_>>()
            .join(" -> "))
    }

    fn wrong(result: Result<String, Refusal>) -> String {
        match result {
            Err(Refusal::Wrong(why)) => why,
            other => panic!("not an error: {other:?}"),
        }
    }

    fn not_there(result: Result<String, Refusal>) -> String {
        match result {
            Err(Refusal::NotThere(why)) => why,
            other => panic!("not 'nothing here': {other:?}"),
        }
    }

    const KEYS: &str = "aws_access_key_id = AK\naws_secret_access_key = S\n";

    #[test]
    fn a_role_is_assumed_with_its_source_profile_s_keys() {
        assert_eq!(
            chain(
                "[profile A]\nrole_arn = R1\nsource_profile = B\n",
                &format!("[B]\n{KEYS}"),
                "A"
            ),
            Ok("keys AK -> R1 (A)".into())
        );
    }

    #[test]
    fn the_selected_profile_s_role_wins_over_its_own_keys() {
        assert_eq!(
            chain(
                "[profile A]\nrole_arn = R1\nsource_profile = B\n",
                &format!("[A]\naws_access_key_id = MINE\naws_secret_access_key = x\n[B]\n{KEYS}"),
                "A"
            ),
            Ok("keys AK -> R1 (A)".into())
        );
    }

    #[test]
    fn past_the_first_hop_a_source_profile_s_keys_win_over_its_own_role() {
        // Defect 2: B has keys and a role of its own; the SDKs sign A's role with B's keys.
        let config = "[profile A]\nrole_arn = R1\nsource_profile = B\n[profile B]\nrole_arn = R2\nsource_profile = C\n";
        assert_eq!(
            chain(
                config,
                &format!("[B]\n{KEYS}[C]\naws_access_key_id = C\naws_secret_access_key = c\n"),
                "A"
            ),
            Ok("keys AK -> R1 (A)".into())
        );
        // Without keys, B's role is a hop of its own.
        assert_eq!(
            chain(
                config,
                "[C]\naws_access_key_id = CK\naws_secret_access_key = c\n",
                "A"
            ),
            Ok("keys CK -> R2 (B) -> R1 (A)".into())
        );
        // Half of B's keys are no keys: its role still counts.
        assert_eq!(
            chain(config, "[B]\naws_access_key_id = HALF\n[C]\naws_access_key_id = CK\naws_secret_access_key = c\n", "A"),
            Ok("keys CK -> R2 (B) -> R1 (A)".into())
        );
    }

    #[test]
    fn chains_of_any_length_are_followed_and_session_names_and_external_ids_kept() {
        let mut config = String::new();
        for i in 0..8 {
            config.push_str(&format!(
                "[profile p{i}]\nrole_arn = R{i}\nsource_profile = p{}\nexternal_id = E{i}\nrole_session_name = S{i}\n",
                i + 1
            ));
        }
        let p = profiles(&config, &format!("[p8]\n{KEYS}"));
        let plan = plan(&p, "p0").expect("a chain of 8 roles");
        assert_eq!(plan.roles.len(), 8);
        assert_eq!(plan.roles[0].role_arn, "R7");
        assert_eq!(plan.roles[7].profile, "p0");
        assert_eq!(plan.roles[7].external_id.as_deref(), Some("E0"));
        assert_eq!(plan.roles[7].session_name.as_deref(), Some("S0"));
    }

    #[test]
    fn a_loop_is_an_error_at_any_length_even_through_keys() {
        let e = wrong(chain(
            "[profile A]\nrole_arn = R1\nsource_profile = B\n[profile B]\nrole_arn = R2\nsource_profile = A\n",
            "",
            "A",
        ));
        assert_eq!(e, "its source_profile chain loops (A, B then A again)");
        // The loop is seen before B's keys would end the chain at A... and A's own keys (past
        // the first hop) do not hide it either.
        let e = wrong(chain(
            "[profile A]\nrole_arn = R1\nsource_profile = B\n[profile B]\nrole_arn = R2\nsource_profile = A\n",
            &format!("[A]\n{KEYS}"),
            "A",
        ));
        assert!(e.contains("loops"), "{e}");
    }

    #[test]
    fn a_profile_that_is_its_own_source_assumes_its_role_with_its_own_credentials() {
        assert_eq!(
            chain(
                "[profile A]\nrole_arn = R1\nsource_profile = A\n",
                &format!("[A]\n{KEYS}"),
                "A"
            ),
            Ok("keys AK -> R1 (A)".into())
        );
        assert_eq!(
            chain(
                "[profile A]\nrole_arn = R1\nsource_profile = A\ncredential_process = get-keys\n",
                "",
                "A"
            ),
            Ok("process \"get-keys\" (A) -> R1 (A)".into())
        );
        let e = wrong(chain(
            "[profile A]\nrole_arn = R1\nsource_profile = A\n",
            "",
            "A",
        ));
        assert!(e.contains("no keys"), "{e}");
    }

    #[test]
    fn credential_source_is_named_in_any_case_and_never_beside_source_profile() {
        assert_eq!(
            chain(
                "[profile A]\nrole_arn = R1\ncredential_source = ec2instancemetadata\n",
                "",
                "A"
            ),
            Ok("Ec2InstanceMetadata -> R1 (A)".into())
        );
        assert_eq!(
            chain(
                "[profile A]\nrole_arn = R1\ncredential_source = ENVIRONMENT\n",
                "",
                "A"
            ),
            Ok("Environment -> R1 (A)".into())
        );
        assert_eq!(
            chain(
                "[profile A]\nrole_arn = R1\ncredential_source = EcsContainer\n",
                "",
                "A"
            ),
            Ok("EcsContainer -> R1 (A)".into())
        );
        assert_eq!(
            wrong(chain(
                "[profile A]\nrole_arn = R1\nsource_profile = B\ncredential_source = Environment\n",
                &format!("[B]\n{KEYS}"),
                "A"
            )),
            "it has both source_profile and credential_source: keep one"
        );
        assert!(wrong(chain(
            "[profile A]\nrole_arn = R1\ncredential_source = Vault\n",
            "",
            "A"
        ))
        .contains("\"Vault\" is not Environment"));
        // Without a role, a credential_source is the profile's own credentials.
        assert_eq!(
            chain("[profile A]\ncredential_source = Environment\n", "", "A"),
            Ok("Environment".into())
        );
    }

    #[test]
    fn a_role_needs_a_source() {
        assert_eq!(
            wrong(chain("[profile A]\nrole_arn = R1\n", "", "A")),
            "it has a role_arn but no source_profile, credential_source or web_identity_token_file"
        );
    }

    #[test]
    fn a_web_identity_profile_needs_its_role_and_ignores_source_profile() {
        assert_eq!(
            chain(
                "[profile A]\nrole_arn = R1\nweb_identity_token_file = /t\nsource_profile = B\n",
                "",
                "A"
            ),
            Ok("web identity R1".into())
        );
        assert_eq!(
            wrong(chain(
                "[profile A]\nweb_identity_token_file = /t\n",
                "",
                "A"
            )),
            "it has a web_identity_token_file but no role_arn"
        );
        // As a source profile.
        assert_eq!(
            chain(
                "[profile A]\nrole_arn = R1\nsource_profile = B\n[profile B]\nrole_arn = R2\nweb_identity_token_file = /t\n",
                "",
                "A"
            ),
            Ok("web identity R2 -> R1 (A)".into())
        );
    }

    #[test]
    fn a_profile_s_own_credentials_come_in_the_sdks_order() {
        // credential_source, then web identity, then SSO, then the process, then keys.
        let all = "[profile A]\ncredential_source = Environment\nrole_arn = R\nweb_identity_token_file = /t\n";
        assert_eq!(chain(all, "", "A"), Ok("Environment".into()));
        let sso = "sso_account_id = 111\nsso_role_name = Dev\nsso_region = eu-west-1\nsso_start_url = https://x/start\n";
        assert_eq!(
            chain(
                &format!("[profile A]\n{sso}credential_process = p\n"),
                &format!("[A]\n{KEYS}"),
                "A"
            ),
            Ok("sso 111/Dev at https://x/start (A, session None)".into())
        );
        assert_eq!(
            chain(
                "[profile A]\ncredential_process = p\n",
                &format!("[A]\n{KEYS}"),
                "A"
            ),
            Ok("process \"p\" (A)".into())
        );
        assert_eq!(
            chain("", &format!("[A]\n{KEYS}"), "A"),
            Ok("keys AK".into())
        );
        assert!(
            wrong(chain("[profile A]\nlogin_session = arn:x\n", "", "A")).contains("login_session")
        );
    }

    #[test]
    fn half_a_pair_of_keys_is_an_error_and_none_is_nothing() {
        assert_eq!(
            wrong(chain("", "[A]\naws_access_key_id = AK\n", "A")),
            "it has an aws_access_key_id but no aws_secret_access_key"
        );
        assert_eq!(
            wrong(chain("", "[A]\naws_secret_access_key = S\n", "A")),
            "it has no aws_access_key_id to go with its other keys"
        );
        assert_eq!(
            wrong(chain("", "[A]\naws_session_token = T\n", "A")),
            "it has no aws_access_key_id to go with its other keys"
        );
        assert_eq!(
            not_there(chain("[profile A]\nregion = x\n", "", "A")),
            "it has no keys, role_arn, SSO role or credential_process"
        );
        // As a source profile, nothing is an error.
        assert_eq!(
            wrong(chain(
                "[profile A]\nrole_arn = R\nsource_profile = B\n[profile B]\nregion = x\n",
                "",
                "A"
            )),
            "its source profile B: it has no keys, role_arn, SSO role or credential_process"
        );
    }

    #[test]
    fn a_missing_profile_is_nothing_but_a_missing_source_profile_is_an_error() {
        assert!(not_there(chain("", "", "A")).starts_with("no profiles in"));
        assert!(not_there(chain("[profile other]\nregion = x\n", "", "A")).starts_with("not in"));
        assert!(wrong(chain(
            "[profile A]\nrole_arn = R\nsource_profile = B\n",
            "",
            "A"
        ))
        .starts_with("profile A names source_profile B, which is not in"));
    }

    #[test]
    fn sso_profiles_are_checked_as_the_sdks_check_them() {
        let session =
            "[sso-session corp]\nsso_region = eu-west-1\nsso_start_url = https://corp/start\n";
        assert_eq!(
            chain(
                &format!("[profile A]\nsso_session = corp\nsso_account_id = 1\nsso_role_name = R\n{session}"),
                "",
                "A"
            ),
            Ok("sso 1/R at https://corp/start (A, session Some(\"corp\"))".into())
        );
        assert!(wrong(chain(
            &format!("[profile A]\nsso_session = corp\nsso_start_url = https://corp/start\nsso_account_id = 1\nsso_role_name = R\n{session}"),
            "",
            "A"
        ))
        .contains("sso_start_url belongs in [sso-session corp] only"));
        assert!(wrong(chain(
            &format!("[profile A]\nsso_session = corp\nsso_region = eu-west-1\nsso_account_id = 1\nsso_role_name = R\n{session}"),
            "",
            "A"
        ))
        .contains("sso_region belongs"));
        assert!(wrong(chain(
            "[profile A]\nsso_session = oops\nsso_account_id = 1\nsso_role_name = R\n",
            "",
            "A"
        ))
        .contains("no [sso-session oops] section"));
        assert!(wrong(chain(
            &format!("[profile A]\nsso_session = corp\nsso_account_id = 1\n{session}"),
            "",
            "A"
        ))
        .contains("no sso_role_name"));
        assert!(wrong(chain(
            &format!("[profile A]\nsso_session = corp\nsso_role_name = R\n{session}"),
            "",
            "A"
        ))
        .contains("no sso_account_id"));
        assert!(not_there(chain(
            &format!("[profile A]\nsso_session = corp\n{session}"),
            "",
            "A"
        ))
        .contains("no role"));
        assert!(wrong(chain(
            "[profile A]\nsso_account_id = 1\nsso_role_name = R\nsso_start_url = https://x\n",
            "",
            "A"
        ))
        .contains("no sso_region"));
        assert!(wrong(chain(
            "[profile A]\nsso_account_id = 1\nsso_role_name = R\nsso_region = r\n",
            "",
            "A"
        ))
        .contains("no sso_start_url"));
    }

    #[test]
    fn the_region_is_the_profile_s_or_its_source_profile_s() {
        let p = profiles(
            "[profile A]\nsource_profile = B\nrole_arn = R\n[profile B]\nsource_profile = C\n[profile C]\nregion = eu-north-1\n[profile L]\nsource_profile = M\n[profile M]\nsource_profile = L\n[profile own]\nregion = own-1\nsource_profile = C\n",
            "",
        );
        assert_eq!(profile_region(&p, "A").as_deref(), Some("eu-north-1"));
        assert_eq!(profile_region(&p, "own").as_deref(), Some("own-1"));
        assert_eq!(profile_region(&p, "L"), None, "a loop ends the search");
        assert_eq!(profile_region(&p, "missing"), None);
    }

    #[test]
    fn an_instance_metadata_address_in_clear_must_stay_on_this_machine_or_its_link() {
        let at = |e: &'static str| {
            move |n: &str| (n == "AWS_EC2_METADATA_SERVICE_ENDPOINT").then(|| e.to_owned())
        };
        assert!(instance_endpoint(&at("http://127.0.0.1:9")).is_ok());
        assert!(instance_endpoint(&at("http://169.254.169.254")).is_ok());
        assert!(instance_endpoint(&at("https://imds.example.com")).is_ok());
        let e = instance_endpoint(&at("http://imds.example.com")).expect_err("in clear");
        assert!(e.contains("use https"), "{e}");
        let none = |_: &str| None;
        assert_eq!(
            instance_endpoint(&none).expect("default").as_str(),
            "http://169.254.169.254/"
        );
        let v6 =
            |n: &str| (n == "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE").then(|| "IPv6".to_owned());
        assert_eq!(
            instance_endpoint(&v6).expect("v6").as_str(),
            "http://[fd00:ec2::254]/"
        );
    }
}
