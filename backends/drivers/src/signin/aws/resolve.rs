//! Which source of the AWS chain applies, decided from the variables and the shared files
//! alone, in the SDKs' order: the profile (its chain is `profile/chain.rs`'s), web identity, the
//! container endpoint, instance metadata; and the sources that fetch what it says.

use super::chain::{chained, nothing, Source};
use super::metadata::Container;
use super::profile::chain::{plan, Base, Named, Plan, Refusal, SsoSettings};
use super::profile::Profiles;
use super::sso::{cache_name, Session, Sso};
use super::sts::{Role, Sts, WebIdentity};
use crate::signin::fetch::CaBundle;
use crate::signin::source::CredentialSource;
use crate::{AwsCredentials, Error};
use std::path::PathBuf;
use std::sync::Arc;
use url::Url;

/// What the chain found.
pub(crate) enum Resolved {
    /// Keys to use as they are.
    Keys(AwsCredentials),
    /// A source that fetches them (or one that says there are none).
    Source(Arc<dyn CredentialSource<AwsCredentials>>),
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
        Ok(Resolved::Source(Arc::new(chained(
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
            return Err(Error::Settings(crate::SettingsError::Profile {
                profile: name,
                reason: why,
            }))
        }
        Err(Refusal::NotThere(why)) => tried.push(format!("profile {name} ({why})")),
        Err(Refusal::Wrong(reason)) => {
            return Err(Error::Settings(crate::SettingsError::Profile {
                profile: name,
                reason,
            }))
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
        return Ok(Resolved::Source(Arc::new(nothing(tried))));
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

#[cfg(test)]
mod tests {
    use super::*;

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

    /// What `resolve` gives for these files and variables, as a line.
    fn resolved(explicit: Option<&str>, config: &str, vars: &[(&str, &str)]) -> String {
        let profiles = Profiles::from_texts(config, "").expect("parses");
        let var = |n: &str| {
            vars.iter()
                .find(|(k, _)| *k == n)
                .map(|(_, v)| v.to_string())
        };
        let services = Services {
            region: "eu-west-1",
            sts: Some("http://127.0.0.1:9/".into()),
        };
        match resolve(explicit, &var, &profiles, &services, &CaBundle::default()) {
            Ok(Resolved::Keys(k)) => format!("keys {}", k.key()),
            Ok(Resolved::Source(source)) => match source.ready() {
                Err(e) if source.sign_in().source == "none" => format!("nothing: {e}"),
                _ => format!("source {}", source.sign_in().source),
            },
            Err(e) => format!("error {e}"),
        }
    }

    #[test]
    fn instance_metadata_is_the_last_resort_unless_turned_off() {
        let off = resolved(None, "", &[("AWS_EC2_METADATA_DISABLED", "TRUE")]);
        assert!(
            off.starts_with("nothing:")
                && off.contains("instance metadata (turned off by AWS_EC2_METADATA_DISABLED)"),
            "{off}"
        );
        let on = resolved(
            None,
            "",
            &[("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:9")],
        );
        assert_eq!(on, "source instance metadata");
        let not_true = resolved(
            None,
            "",
            &[
                ("AWS_EC2_METADATA_DISABLED", "false"),
                ("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:9"),
            ],
        );
        assert_eq!(not_true, "source instance metadata");
    }

    #[test]
    fn credential_source_environment_assumes_the_role_with_the_environment_s_keys() {
        let config =
            "[profile A]\nrole_arn = arn:aws:iam::1:role/a\ncredential_source = Environment\n";
        let with_keys = resolved(
            Some("A"),
            config,
            &[
                ("AWS_ACCESS_KEY_ID", "AKIAENV"),
                ("AWS_SECRET_ACCESS_KEY", "s"),
            ],
        );
        assert_eq!(
            with_keys,
            "source profile A (assumes role arn:aws:iam::1:role/a)"
        );
        let without = resolved(Some("A"), config, &[]);
        assert!(
            without.contains("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set"),
            "{without}"
        );
    }

    #[test]
    fn an_sso_portal_in_clear_must_stay_on_this_machine() {
        let config = "[profile dev]\nsso_start_url = https://x/start\nsso_region = eu-west-1\nsso_account_id = 1\nsso_role_name = R\n";
        let home = [("HOME", "/nonexistent/sets3lock-home")];
        let local = resolved(
            Some("dev"),
            config,
            &[home[0], ("AWS_ENDPOINT_URL_SSO", "http://127.0.0.1:9")],
        );
        assert!(local.starts_with("source profile dev (SSO"), "{local}");
        let clear = resolved(
            Some("dev"),
            config,
            &[
                home[0],
                ("AWS_ENDPOINT_URL_SSO", "http://portal.example.com"),
            ],
        );
        assert!(clear.contains("in clear; use https"), "{clear}");
        let partition = resolved(
            Some("dev"),
            &config.replace("eu-west-1", "cn-north-1"),
            &home,
        );
        assert!(
            partition.starts_with("source profile dev (SSO"),
            "{partition}"
        );
    }

    #[test]
    fn a_role_session_is_named_as_given_or_after_the_time() {
        assert_eq!(session_name(Some("ci-run-7".into())), "ci-run-7");
        let made = session_name(None);
        let secs: i64 = made
            .strip_prefix("sets3lock-")
            .and_then(|s| s.parse().ok())
            .expect("sets3lock-<seconds>");
        assert!(
            (secs - jiff::Timestamp::now().as_second()).abs() < 60,
            "{made}"
        );
    }

    #[test]
    fn instance_metadata_s_address_follows_the_endpoint_mode() {
        let mode = |m: &'static str| {
            move |n: &str| (n == "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE").then(|| m.to_owned())
        };
        assert_eq!(
            instance_endpoint(&mode("IPv4")).expect("v4").as_str(),
            "http://169.254.169.254/"
        );
        assert_eq!(
            instance_endpoint(&mode("ipv6")).expect("v6").as_str(),
            "http://[fd00:ec2::254]/"
        );
    }
}
