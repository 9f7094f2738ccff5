//! The AWS credential chain, in the order the AWS SDKs use: the environment's keys; the
//! profile (static keys, `role_arn` with `source_profile` or `credential_source`,
//! `web_identity_token_file`, SSO, `credential_process`); web identity
//! (`AWS_WEB_IDENTITY_TOKEN_FILE` + `AWS_ROLE_ARN`); the container endpoint; EC2 instance
//! metadata (IMDSv2).
//!
//! Which source applies is decided from variables and files alone, without a request; only
//! instance metadata, the last resort, is found out by asking it. Static keys are used as they
//! are (no thread, no request); every other source is a [`Refreshing`] cache.

use super::metadata::{self, Container};
use super::process;
use super::sso::{self, Sso};
use super::sts::{self, Role, Sts, WebIdentity};
use crate::signin::chained::{Chained, Name, Nothing};
use crate::signin::fetch::{CaBundle, Clients};
use crate::signin::refresh::{Fetch, Fetched};
use crate::AwsCredentials;
use std::time::{Duration, SystemTime};
use url::Url;

/// How long instance metadata may take to answer one request (off EC2 it never does: this is
/// what trying it costs).
pub(crate) const METADATA_LIMIT: Duration = Duration::from_secs(1);
/// How long any other token service may take for one request.
const SERVICE_LIMIT: Duration = Duration::from_secs(10);

/// One place credentials come from. Its `Debug` is its name: a command line or a container's
/// token is never shown.
#[derive(Clone)]
pub(crate) enum Source {
    /// Keys as they are (the base of an assumed role).
    Static(AwsCredentials),
    /// A profile's `credential_process`.
    Process { command: String, profile: String },
    /// A profile's SSO role.
    Sso(Sso),
    /// A web identity token exchanged at STS.
    WebIdentity { who: WebIdentity, sts: Sts },
    /// The container endpoint.
    Container(Container),
    /// EC2 instance metadata.
    Instance { endpoint: Url },
    /// A role assumed with the credentials of another source.
    AssumeRole {
        role: Role,
        sts: Sts,
        base: Box<Source>,
        profile: String,
    },
}

impl core::fmt::Debug for Source {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.name())
    }
}

impl Source {
    /// What a user calls it.
    pub(crate) fn name(&self) -> String {
        match self {
            Source::Static(_) => "static keys".into(),
            Source::Process { profile, .. } => format!("profile {profile} (credential_process)"),
            Source::Sso(s) => format!(
                "profile {} (SSO, role {} in {})",
                s.profile, s.role_name, s.account_id
            ),
            Source::WebIdentity { who, .. } => format!("web identity (role {})", who.role_arn),
            Source::Container(c) => format!(
                "the container endpoint ({})",
                c.url.origin().ascii_serialization()
            ),
            Source::Instance { .. } => "instance metadata".into(),
            Source::AssumeRole { role, profile, .. } => {
                format!("profile {profile} (assumes role {})", role.role_arn)
            }
        }
    }

    fn fetch(
        &self,
        clients: &mut Clients,
        kept: &mut Option<AwsCredentials>,
    ) -> Result<Fetched<AwsCredentials>, String> {
        match self {
            Source::Static(c) => Ok(Fetched {
                value: c.clone(),
                expires: None,
                note: None,
            }),
            Source::Process { command, .. } => process::credentials(command),
            Source::Sso(s) => sso::credentials(clients, s),
            Source::WebIdentity { who, sts } => sts::assume_role_with_web_identity(
                clients.for_url(&sts.url, SERVICE_LIMIT)?,
                sts,
                who,
            ),
            Source::Container(c) => metadata::container(clients.for_url(&c.url, SERVICE_LIMIT)?, c),
            Source::Instance { endpoint } => {
                let fetched = clients
                    .for_url(endpoint, METADATA_LIMIT)
                    .and_then(|http| metadata::instance(http, endpoint));
                steady(fetched, kept, SystemTime::now())
            }
            Source::AssumeRole {
                role, sts, base, ..
            } => {
                let base = base
                    .fetch(clients, kept)
                    .map_err(|e| format!("its source credentials ({}): {e}", base.name()))?;
                sts::assume_role(
                    clients.for_url(&sts.url, SERVICE_LIMIT)?,
                    sts,
                    role,
                    &base.value,
                )
            }
        }
    }
}

/// Instance metadata's answer, made steady as the AWS SDKs make it ("static stability"): EC2's
/// credentials outlive the expiry it states, so credentials handed out already expired, or
/// kept from the last good answer when it fails, are used for 10 to 15 more minutes, with a
/// note saying so, rather than none at all. `kept` is the last good answer's.
fn steady(
    fetched: Result<Fetched<AwsCredentials>, String>,
    kept: &mut Option<AwsCredentials>,
    now: SystemTime,
) -> Result<Fetched<AwsCredentials>, String> {
    let extended = |value: AwsCredentials, why: String| {
        let mut jitter = [0u8; 2];
        let jitter = match getrandom::fill(&mut jitter) {
            Ok(()) => u64::from(u16::from_le_bytes(jitter)) % 301,
            Err(_) => 0,
        };
        let expires = now + STEADY_FOR + Duration::from_secs(jitter);
        Fetched {
            value,
            expires: Some(expires),
            note: Some(format!(
                "{why}: the last credentials it gave are used until {} (as the AWS SDKs do), and it is asked again before then",
                crate::signin::refresh::shown(expires)
            )),
        }
    };
    match fetched {
        Ok(f) => {
            *kept = Some(f.value.clone());
            match f.expires {
                Some(at) if !crate::signin::refresh::usable(Some(at), now) => Ok(extended(
                    f.value,
                    format!(
                        "instance metadata handed out credentials that expired at {}",
                        crate::signin::refresh::shown(at)
                    ),
                )),
                _ => Ok(f),
            }
        }
        Err(e) => match kept {
            Some(value) => Ok(extended(
                value.clone(),
                format!("instance metadata failed ({e})"),
            )),
            None => Err(e),
        },
    }
}

/// How long instance metadata's last credentials are used past a failure (plus up to 5
/// minutes of jitter, so that a fleet does not come back at once).
const STEADY_FOR: Duration = Duration::from_secs(600);

pub(crate) struct Fetcher {
    source: Source,
    clients: Clients,
    /// Instance metadata's last good credentials (see `steady`).
    kept: Option<AwsCredentials>,
}

impl Fetch for Fetcher {
    type Value = AwsCredentials;
    fn fetch(&mut self) -> Result<Fetched<AwsCredentials>, String> {
        self.source.fetch(&mut self.clients, &mut self.kept)
    }
}

/// The source the chain settled on, `tried` passed over to reach it, with its cache (whose
/// thread's client trusts `ca_bundle`).
pub(crate) fn chained(source: Source, tried: Vec<String>, ca_bundle: CaBundle) -> Chained<Fetcher> {
    let fix = match &source {
        Source::Instance { .. } => FIX,
        Source::Sso(_) => "log in again with `aws sso login`",
        Source::WebIdentity { .. } => "check that the role trusts the token's issuer and audience (sts:AssumeRoleWithWebIdentity)",
        Source::AssumeRole { .. } => "check that the source credentials may call sts:AssumeRole on the role, and the role's trust policy",
        _ => "check the source named",
    };
    let name = Name::new(source.name());
    Chained::new(
        move || Fetcher {
            source: source.clone(),
            clients: Clients::new(ca_bundle.clone()),
            kept: None,
        },
        name,
        tried,
        fix,
        "aws-credentials",
    )
}

/// No source at all: what was tried, for the error when a lock is opened.
pub(crate) fn nothing(tried: Vec<String>) -> Nothing {
    Nothing {
        tried,
        fix: FIX.into(),
    }
}

/// The advice when nothing gave credentials.
const FIX: &str = "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE to a profile of ~/.aws/config (`aws configure`, or `aws configure sso` then `aws sso login`)";

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(name: &str) -> AwsCredentials {
        AwsCredentials::new_with_token(name, "secret", "token")
    }

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000 + secs)
    }

    #[test]
    fn good_instance_credentials_are_kept_as_they_are_and_remembered() {
        let mut kept = None;
        let fetched = Fetched {
            value: keys("A"),
            expires: Some(at(3600)),
            note: None,
        };
        let f = steady(Ok(fetched), &mut kept, at(0)).expect("good");
        assert_eq!(
            (f.value.key(), f.expires, f.note),
            ("A", Some(at(3600)), None)
        );
        assert_eq!(kept.map(|k| k.key().to_owned()).as_deref(), Some("A"));
    }

    #[test]
    fn a_failure_after_a_good_answer_serves_the_last_credentials_for_10_to_15_minutes_and_says_so()
    {
        let mut kept = Some(keys("LAST"));
        let f = steady(Err("IMDS answered 500".into()), &mut kept, at(0)).expect("kept");
        assert_eq!(f.value.key(), "LAST");
        let expires = f.expires.expect("expires");
        assert!(expires >= at(600) && expires <= at(900), "{expires:?}");
        let note = f.note.expect("a note");
        assert!(
            note.contains("instance metadata failed (IMDS answered 500)")
                && note.contains("the last credentials it gave are used until"),
            "{note}"
        );
        // Without a good answer before, a failure is a failure.
        let mut none = None;
        assert_eq!(
            steady(Err("down".into()), &mut none, at(0))
                .err()
                .as_deref(),
            Some("down")
        );
    }

    #[test]
    fn credentials_handed_out_already_expired_are_extended_with_a_note() {
        let mut kept = None;
        for expires in [at(0), at(3)] {
            let fetched = Fetched {
                value: keys("STALE"),
                expires: Some(expires),
                note: None,
            };
            let f = steady(Ok(fetched), &mut kept, at(1)).expect("extended");
            let until = f.expires.expect("expires");
            assert!(until >= at(601) && until <= at(901), "{until:?}");
            assert!(
                f.note
                    .expect("note")
                    .contains("handed out credentials that expired"),
                "extended"
            );
        }
        assert!(kept.is_some());
    }
}
