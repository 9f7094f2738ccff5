//! The chain a profile starts, decided from the shared files alone, by the AWS SDKs' rules
//! (aws-config's `resolve_chain`): where its first credentials come from, and the roles
//! assumed with them. Pure: no request, no file read (`resolve.rs` makes the sources).
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

use super::{Profiles, Settings};
use crate::AwsCredentials;

/// Why a profile gives no source.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// It is not there, or says nothing about credentials: the chain goes on (unless the
    /// profile was named explicitly).
    NotThere(String),
    /// It is wrong: an error, whoever named it (never a fall through to another identity).
    Wrong(String),
}

/// A profile's chain: where its first credentials come from, and the roles assumed with them,
/// the first assumed first.
#[derive(Debug)]
pub(crate) struct Plan {
    pub(crate) base: Base,
    pub(crate) roles: Vec<Hop>,
}

/// One role a chain assumes: in profile `profile`.
#[derive(Debug)]
pub(crate) struct Hop {
    pub(crate) profile: String,
    pub(crate) role_arn: String,
    pub(crate) external_id: Option<String>,
    pub(crate) session_name: Option<String>,
}

/// Where a chain's first credentials come from, and the profile that says so.
#[derive(Debug)]
pub(crate) enum Base {
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
pub(crate) enum Named {
    Environment,
    Ec2InstanceMetadata,
    EcsContainer,
}

/// An SSO role: the account and role, the portal's region and start URL, and the session
/// (`sso_session`) whose cached login can be refreshed; a legacy profile has none.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct SsoSettings {
    pub(crate) account_id: String,
    pub(crate) role_name: String,
    pub(crate) region: String,
    pub(crate) start_url: String,
    pub(crate) session: Option<String>,
}

/// What comes after a profile with a role.
enum Next {
    /// Its own credentials (`source_profile` names itself).
    Itself,
    Profile(String),
    Named(Named),
}

/// The chain profile `selected` starts.
pub(crate) fn plan(profiles: &Profiles, selected: &str) -> Result<Plan, Refusal> {
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
        // As a source profile, half a pair is an error that names it.
        assert_eq!(
            wrong(chain(
                "[profile A]\nrole_arn = R\nsource_profile = B\n",
                "[B]\naws_access_key_id = HALF\n",
                "A"
            )),
            "its source profile B: it has an aws_access_key_id but no aws_secret_access_key"
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
}
