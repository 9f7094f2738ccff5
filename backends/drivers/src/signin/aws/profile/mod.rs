//! AWS profiles: the two shared files (`~/.aws/config` and `~/.aws/credentials`) read and
//! merged as the AWS SDKs merge them (`parse.rs` reads one file's text), and the chain a profile
//! starts (`chain.rs`).
//!
//! - In the config file a profile is `[profile name]`, and the default also `[default]` (a
//!   `[profile default]` in the same file wins over every `[default]`); other names without
//!   the `profile` prefix are ignored. `[sso-session name]` and `[services name]` are
//!   sections of their own.
//! - In the credentials file a profile is `[name]`; a prefixed section is ignored.
//! - Names and keys must be made of `A-Z a-z 0-9 _ - / . % @ : +` (others are ignored), and
//!   a header's words may be separated by any spaces and tabs (`[ profile  ci ]`).
//! - The same profile in both files: the credentials file's value of a key wins.

pub(crate) mod chain;
mod parse;

use parse::{parse, Parsed};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// One profile's (or section's) settings, by lowercased key.
pub(crate) type Settings = HashMap<String, String>;

/// Where the shared files are: `AWS_SHARED_CREDENTIALS_FILE` (or `~/.aws/credentials`) and
/// `AWS_CONFIG_FILE` (or `~/.aws/config`). Without HOME (and no file named) there are none:
/// never a path relative to wherever the process runs.
#[derive(Clone, Debug)]
pub(crate) struct SharedFiles {
    pub(crate) credentials: Option<PathBuf>,
    pub(crate) config: Option<PathBuf>,
}

impl SharedFiles {
    pub(crate) fn from_vars(var: &dyn Fn(&str) -> Option<String>) -> SharedFiles {
        let home = |name: &str| crate::signin::fetch::home(var).map(|h| h.join(name));
        SharedFiles {
            credentials: var("AWS_SHARED_CREDENTIALS_FILE")
                .map(PathBuf::from)
                .or_else(|| home(".aws/credentials")),
            config: var("AWS_CONFIG_FILE")
                .map(PathBuf::from)
                .or_else(|| home(".aws/config")),
        }
    }

    /// The files, as a user reads them.
    pub(crate) fn shown(&self) -> String {
        let files: Vec<String> = [&self.credentials, &self.config]
            .into_iter()
            .flatten()
            .map(|p| p.display().to_string())
            .collect();
        match files.is_empty() {
            true => "any file (no HOME)".into(),
            false => files.join(" or "),
        }
    }

    /// Both files, read and merged. A file that does not exist has no profiles; one that
    /// cannot be read, or does not parse, is an error that names it (and the line).
    pub(crate) fn read(&self) -> Result<Profiles, String> {
        let mut profiles = Profiles {
            shown: self.shown(),
            ..Profiles::default()
        };
        // The config file first: the credentials file's values win.
        for (path, kind) in [
            (&self.config, Kind::Config),
            (&self.credentials, Kind::Credentials),
        ] {
            let Some(path) = path else { continue };
            let Some(text) = read_text(path)? else {
                continue;
            };
            let parsed = parse(&text).map_err(|e| format!("{} {e}", path.display()))?;
            profiles.merge(parsed, kind);
        }
        Ok(profiles)
    }
}

/// A file's text; `None` if it does not exist.
fn read_text(path: &Path) -> Result<Option<String>, String> {
    match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes).map(Some).map_err(|_| {
            format!(
                "{} is not UTF-8 text: save it as UTF-8 (the AWS CLI reads it so)",
                path.display()
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{} cannot be read: {e}", path.display())),
    }
}

/// Which of the two files a section comes from: they name profiles differently.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Config,
    Credentials,
}

/// The profiles, SSO sessions and services sections of both files.
#[derive(Debug, Default)]
pub(crate) struct Profiles {
    profiles: HashMap<String, Settings>,
    sso_sessions: HashMap<String, Settings>,
    services: HashMap<String, Settings>,
    /// The files, for messages.
    shown: String,
}

/// What a section's header makes it.
enum Role {
    Profile(String),
    /// `[default]` in the config file: ignored where the file has `[profile default]`.
    BareDefault,
    SsoSession(String),
    Services(String),
    Ignored,
}

impl Profiles {
    /// The profiles of these texts (tests).
    #[cfg(test)]
    pub(crate) fn from_texts(
        config: &str,
        credentials: &str,
    ) -> Result<Profiles, parse::ParseError> {
        let mut profiles = Profiles::default();
        profiles.merge(parse(config)?, Kind::Config);
        profiles.merge(parse(credentials)?, Kind::Credentials);
        Ok(profiles)
    }

    /// Profile `name`, if either file has it.
    pub(crate) fn profile(&self, name: &str) -> Option<&Settings> {
        self.profiles.get(name)
    }

    /// Whether neither file has any profile.
    pub(crate) fn is_empty(&self) -> bool {
        self.profiles.is_empty()
    }

    /// The `[sso-session name]` section of the config file.
    pub(crate) fn sso_session(&self, name: &str) -> Option<&Settings> {
        self.sso_sessions.get(name)
    }

    /// The endpoint a `[services name]` section gives service `service` (`s3`, `sts`): its
    /// nested `endpoint_url`.
    pub(crate) fn service_endpoint(&self, services: &str, service: &str) -> Option<String> {
        let block = self.services.get(services)?.get(service)?;
        nested(block)
            .into_iter()
            .find(|(k, _)| k == "endpoint_url")
            .map(|(_, v)| v)
    }

    /// The files, as a user reads them.
    pub(crate) fn shown(&self) -> &str {
        &self.shown
    }

    fn merge(&mut self, parsed: Parsed, kind: Kind) {
        let roles: Vec<Role> = parsed
            .sections
            .iter()
            .map(|s| role(&s.header, kind))
            .collect();
        let prefixed_default = roles
            .iter()
            .any(|r| matches!(r, Role::Profile(n) if n == "default"))
            && kind == Kind::Config;
        for (section, role) in parsed.sections.into_iter().zip(roles) {
            let into = match role {
                Role::Profile(name) => self.profiles.entry(name),
                Role::BareDefault if !prefixed_default => self.profiles.entry("default".into()),
                Role::SsoSession(name) => self.sso_sessions.entry(name),
                Role::Services(name) => self.services.entry(name),
                Role::BareDefault | Role::Ignored => continue,
            };
            let settings = into.or_default();
            for (key, value) in section.properties {
                if is_identifier(&key) {
                    settings.insert(key, value);
                }
            }
        }
    }
}

/// What a section header (between the brackets) names in a file of `kind`.
fn role(header: &str, kind: Kind) -> Role {
    let header = header.trim_matches([' ', '\t']);
    let (prefix, name) = match header.split_once([' ', '\t']) {
        Some((prefix, name)) => (Some(prefix.trim()), name.trim()),
        None => (None, header),
    };
    if !is_identifier(name) {
        return Role::Ignored;
    }
    let name = name.to_owned();
    match (kind, prefix) {
        (Kind::Credentials, None) => Role::Profile(name),
        (Kind::Credentials, Some(_)) => Role::Ignored,
        (Kind::Config, Some("profile")) => Role::Profile(name),
        (Kind::Config, Some("sso-session")) => Role::SsoSession(name),
        (Kind::Config, Some("services")) => Role::Services(name),
        (Kind::Config, None) if name == "default" => Role::BareDefault,
        (Kind::Config, _) => Role::Ignored,
    }
}

/// Whether a profile name or key is one the SDKs accept.
fn is_identifier(text: &str) -> bool {
    text.chars()
        .all(|c| c.is_ascii_alphanumeric() || "_-/.%@:+".contains(c))
}

/// The `key = value` lines of a nested block (`s3 =` followed by indented settings).
pub(crate) fn nested(block: &str) -> Vec<(String, String)> {
    block
        .lines()
        .filter_map(|line| line.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(config: &str, credentials: &str) -> Profiles {
        Profiles::from_texts(config, credentials).expect("parses")
    }

    fn get<'a>(p: &'a Profiles, profile: &str, key: &str) -> Option<&'a str> {
        p.profile(profile)?.get(key).map(String::as_str)
    }

    #[test]
    fn the_config_file_names_profiles_with_the_prefix_and_the_credentials_file_without() {
        let p = read(
            "[profile ci]\nregion = a\n[default]\nregion = c\n[ci2]\nregion = b\nonly_ci2 = x\n",
            "[ci3]\nk = d\n[profile ci4]\nk = e\n",
        );
        assert_eq!(get(&p, "ci", "region"), Some("a"));
        assert!(p.profile("ci2").is_none(), "an unprefixed config section");
        assert_eq!(get(&p, "default", "region"), Some("c"));
        assert_eq!(
            get(&p, "default", "only_ci2"),
            None,
            "merged into the default"
        );
        assert_eq!(get(&p, "ci3", "k"), Some("d"));
        assert!(p.profile("ci4").is_none() && p.profile("profile ci4").is_none());
        assert!(p.profile("ci4").is_none());
    }

    #[test]
    fn profile_default_wins_over_every_bare_default_in_its_file_wherever_it_stands() {
        for config in [
            "[default]\nregion = bare\n[profile default]\nregion = prefixed\n",
            "[profile default]\nregion = prefixed\n[default]\nregion = bare\nonly_bare = x\n",
        ] {
            let p = read(config, "");
            assert_eq!(get(&p, "default", "region"), Some("prefixed"), "{config}");
            assert_eq!(get(&p, "default", "only_bare"), None, "{config}");
        }
        // The credentials file's [default] still merges in.
        let p = read("[profile default]\nregion = r\n", "[default]\nk = v\n");
        assert_eq!(
            (get(&p, "default", "region"), get(&p, "default", "k")),
            (Some("r"), Some("v"))
        );
    }

    #[test]
    fn headers_are_trimmed_and_their_words_split_on_spaces_and_tabs() {
        let p = read(
            "[   profile  spaced   ]\na = 1\n[profile\ttabbed]\nb = 2\n[profilefoo]\nc = 3\n[ default ]\nd = 4\n",
            "[   creds  ]\ne = 5\n",
        );
        assert_eq!(get(&p, "spaced", "a"), Some("1"));
        assert_eq!(get(&p, "tabbed", "b"), Some("2"));
        assert!(p.profile("profilefoo").is_none());
        assert_eq!(get(&p, "default", "d"), Some("4"));
        assert_eq!(get(&p, "creds", "e"), Some("5"));
    }

    #[test]
    fn names_and_keys_outside_the_sdks_characters_are_ignored() {
        let p = read(
            "[profile a_b-c/d.e%f@g:h+i]\nk = 1\n[profile bad!name]\nk = 2\n[profile two words]\nk = 3\n",
            "[ok]\ngood_key = 1\nbad!key = 2\n",
        );
        assert_eq!(get(&p, "a_b-c/d.e%f@g:h+i", "k"), Some("1"));
        assert!(p.profile("bad!name").is_none());
        assert!(p.profile("two words").is_none());
        assert_eq!(get(&p, "ok", "good_key"), Some("1"));
        assert_eq!(get(&p, "ok", "bad!key"), None);
        assert!(!p.is_empty());
        assert!(read("", "").is_empty());
    }

    #[test]
    fn the_credentials_file_wins_for_a_key_both_files_set_and_the_rest_is_merged() {
        let p = read(
            "[profile x]\nregion = from-config\naws_access_key_id = CONFIG\n",
            "[x]\naws_access_key_id = CREDS\n",
        );
        assert_eq!(get(&p, "x", "aws_access_key_id"), Some("CREDS"));
        assert_eq!(get(&p, "x", "region"), Some("from-config"));
    }

    #[test]
    fn sections_of_one_name_merge_in_file_order() {
        let p = read("[profile x]\na = 1\nb = 1\n[profile  x]\nb = 2\n", "");
        assert_eq!(
            (get(&p, "x", "a"), get(&p, "x", "b")),
            (Some("1"), Some("2"))
        );
    }

    #[test]
    fn sso_sessions_and_services_are_sections_of_their_own() {
        let p = read(
            "[profile x]\nservices = local\n[sso-session corp]\nsso_region = eu-west-1\n[services local]\ns3 =\n  endpoint_url = http://127.0.0.1:1\nsts =\n  endpoint_url = http://127.0.0.1:2\n[sso-sesion typo]\nsso_region = x\n",
            "[sso-session corp]\nk = v\n",
        );
        assert_eq!(
            p.sso_session("corp")
                .and_then(|s| s.get("sso_region"))
                .map(String::as_str),
            Some("eu-west-1")
        );
        assert!(p.sso_session("typo").is_none());
        // In the credentials file a prefixed section is nothing.
        assert!(p.sso_session("corp").is_some_and(|s| !s.contains_key("k")));
        assert_eq!(
            p.service_endpoint("local", "s3").as_deref(),
            Some("http://127.0.0.1:1")
        );
        assert_eq!(
            p.service_endpoint("local", "sts").as_deref(),
            Some("http://127.0.0.1:2")
        );
        assert_eq!(p.service_endpoint("local", "sso"), None);
        assert_eq!(p.service_endpoint("other", "s3"), None);
        assert!(p.profile("sso-session corp").is_none());
    }

    #[test]
    fn files_that_are_missing_are_empty_and_files_that_are_broken_are_named() {
        let dir = std::env::temp_dir().join(format!(
            "sets3lock-profiles-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&dir).expect("dir");
        let files = SharedFiles {
            credentials: Some(dir.join("missing")),
            config: Some(dir.join("config")),
        };
        std::fs::write(dir.join("config"), "[profile a]\nk = v\n[broken\n").expect("write");
        let e = files.read().expect_err("broken");
        assert_eq!(
            e,
            format!(
                "{} line 3: a profile's header must end with ']'",
                dir.join("config").display()
            )
        );
        std::fs::write(dir.join("config"), b"[profile a]\nk = \xff\n").expect("write");
        assert!(files.read().expect_err("latin-1").contains("not UTF-8"));
        std::fs::write(dir.join("config"), "[profile a]\nk = v\n").expect("write");
        let p = files.read().expect("reads");
        assert_eq!(get(&p, "a", "k"), Some("v"));
        // Messages name both files.
        assert_eq!(p.shown(), files.shown());
        assert!(p.shown().contains("missing") && p.shown().contains("config"));
        // A file that is there but cannot be read is an error, never a file with no profiles.
        let unreadable = SharedFiles {
            credentials: Some(dir.clone()),
            config: None,
        };
        let e = unreadable.read().expect_err("a directory");
        assert!(e.contains("cannot be read"), "{e}");
        let none = SharedFiles {
            credentials: None,
            config: None,
        };
        assert!(none.read().expect("nothing").is_empty());
        assert_eq!(none.shown(), "any file (no HOME)");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
