//! AWS profiles from the shared files (`~/.aws/credentials` and `~/.aws/config`), found the way
//! the AWS CLI finds them: region and endpoint here; where the credentials come from is the
//! chain's business (`signin/aws/`).

use crate::signin::aws::resolve::{resolve, Resolved};
use crate::{AwsCredentials, Error, S3Settings};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

impl S3Settings {
    /// The environment ([`S3Settings::from_env`]), completed the way the AWS SDKs complete
    /// it: from an AWS profile (`profile` if given, like the AWS CLI's `--profile`, else
    /// `AWS_PROFILE`, else `default`) and the rest of the AWS credential chain.
    ///
    /// - **Credentials**, the first of:
    ///   1. the environment's keys (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
    ///      `AWS_SESSION_TOKEN`), unless `profile` names a profile explicitly; then nothing
    ///      else is read or started;
    ///   2. the profile, from the credentials file (`AWS_SHARED_CREDENTIALS_FILE`, or
    ///      `~/.aws/credentials`) and the config file (`AWS_CONFIG_FILE`, or `~/.aws/config`):
    ///      `role_arn` with `source_profile`, `credential_source` or `web_identity_token_file`
    ///      (STS `AssumeRole`); an SSO role (`sso_session` or `sso_start_url`, with the token
    ///      `aws sso login` cached); static keys; `credential_process`;
    ///   3. web identity: `AWS_WEB_IDENTITY_TOKEN_FILE` with `AWS_ROLE_ARN` (EKS IRSA), at STS
    ///      (`AWS_ENDPOINT_URL_STS`, else `AWS_ENDPOINT_URL`, else the region's);
    ///   4. the container endpoint: `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI` (ECS, Fargate) or
    ///      `AWS_CONTAINER_CREDENTIALS_FULL_URI` with `AWS_CONTAINER_AUTHORIZATION_TOKEN` or
    ///      `..._TOKEN_FILE` (EKS Pod Identity);
    ///   5. EC2 instance metadata, IMDSv2 (`AWS_EC2_METADATA_SERVICE_ENDPOINT`; off with
    ///      `AWS_EC2_METADATA_DISABLED=true`), one request of 1 s at most when not on EC2.
    ///
    ///   Static keys are used as they are. Any other source is asked from a thread of its own,
    ///   first when a lock is opened, then ahead of each expiry; a failed refresh keeps the
    ///   credentials in use until they expire. Which source applies is decided here, without
    ///   a request; opening a lock waits for its first credentials, and fails with
    ///   [`Error::NoCredentials`], which names every source tried, if there are none.
    /// - **Region**: `region` from the profile's section of the config file, unless
    ///   `AWS_REGION` or `AWS_DEFAULT_REGION` is set.
    /// - **Endpoint**: `endpoint_url` from the same section, unless `AWS_ENDPOINT_URL_S3` or
    ///   `AWS_ENDPOINT_URL` is set.
    ///
    /// A profile named explicitly must exist and give credentials ([`Error::Profile`]
    /// otherwise); a profile that is wrong (a `role_arn` without a source, say) is an
    /// [`Error::Profile`] too.
    pub fn from_env_and_profile(profile: Option<&str>) -> Result<S3Settings, Error> {
        S3Settings::from_vars_and_profile(profile, crate::options::env_var)
    }

    /// Like [`from_env_and_profile`](S3Settings::from_env_and_profile), with variables from
    /// `var` (including `HOME`, `AWS_SHARED_CREDENTIALS_FILE` and `AWS_CONFIG_FILE`, which say
    /// where the files are).
    ///
    /// ```
    /// use sets3lock::S3Settings;
    /// let dir = std::env::temp_dir().join(format!("sets3lock-doc-profile-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let (credentials, config) = (dir.join("credentials"), dir.join("config"));
    /// std::fs::write(&credentials, "[ci]\naws_access_key_id = AKIDCI\naws_secret_access_key = s3cret\n")?;
    /// std::fs::write(&config, "[profile ci]\nregion = eu-west-1\n")?;
    /// let vars = |name: &str| match name {
    ///     "AWS_SHARED_CREDENTIALS_FILE" => credentials.to_str().map(str::to_owned),
    ///     "AWS_CONFIG_FILE" => config.to_str().map(str::to_owned),
    ///     _ => None,
    /// };
    ///
    /// let options = S3Settings::from_vars_and_profile(Some("ci"), vars)?;
    /// assert_eq!(options.credentials.map(|c| c.key().to_owned()).as_deref(), Some("AKIDCI"));
    /// assert_eq!(options.region, "eu-west-1");
    /// // A profile named explicitly must exist.
    /// assert!(S3Settings::from_vars_and_profile(Some("prod"), vars).is_err());
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_vars_and_profile(
        profile: Option<&str>,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<S3Settings, Error> {
        let mut options = S3Settings::from_vars(&var)?;
        let name = profile
            .map(str::to_owned)
            .or_else(|| var("AWS_PROFILE"))
            .unwrap_or_else(|| "default".to_owned());
        let files = SharedFiles::from_vars(&var);
        let config = section(files.config.as_deref(), &name, Shared::Config);
        if var("AWS_REGION").is_none() && var("AWS_DEFAULT_REGION").is_none() {
            if let Some(region) = config.get("region") {
                options.region = region.clone();
            }
        }
        if options.endpoint.is_none() {
            if let Some(endpoint) = config.get("endpoint_url") {
                options.endpoint = Some(crate::parse_endpoint(endpoint)?);
            }
        }
        // The environment's keys win (and nothing else is read or started), unless a profile
        // is named explicitly.
        if profile.is_none() && options.credentials.is_some() {
            return Ok(options);
        }
        options.credentials = None;
        match resolve(profile, &var, &files, &options.region)? {
            Resolved::Keys(keys) => options.credentials = Some(keys),
            Resolved::Source(source) => options.chain = Some(source),
        }
        Ok(options)
    }
}

/// Where the shared files are: `AWS_SHARED_CREDENTIALS_FILE` (or `~/.aws/credentials`) and
/// `AWS_CONFIG_FILE` (or `~/.aws/config`). Without HOME (and no file named) there are none:
/// never a path relative to wherever the process runs.
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

    /// Profile `name`'s settings: its config section, overridden by its credentials section;
    /// `None` if neither file has it.
    pub(crate) fn profile(&self, name: &str) -> Option<HashMap<String, String>> {
        let mut found = section(self.config.as_deref(), name, Shared::Config);
        found.extend(section(
            self.credentials.as_deref(),
            name,
            Shared::Credentials,
        ));
        (!found.is_empty()).then_some(found)
    }

    /// The `[sso-session name]` section of the config file.
    pub(crate) fn sso_session(&self, name: &str) -> Option<HashMap<String, String>> {
        let found = section(self.config.as_deref(), name, Shared::SsoSession);
        (!found.is_empty()).then_some(found)
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
}

/// The two shared files name a profile's section differently.
#[derive(Clone, Copy)]
enum Shared {
    /// `[name]`.
    Credentials,
    /// `[profile name]`, and `[default]` (or `[profile default]`) for the default.
    Config,
    /// `[sso-session name]`, in the config file.
    SsoSession,
}

/// Whether a section header (between the brackets) is profile `name`'s in that file.
fn is_section_of(header: &str, name: &str, file: Shared) -> bool {
    let header = header.trim();
    match file {
        Shared::Credentials => header == name,
        Shared::Config => {
            let profile = header
                .strip_prefix("profile")
                .filter(|rest| rest.starts_with(char::is_whitespace))
                .map(str::trim);
            profile == Some(name) || (name == "default" && header == "default")
        }
        Shared::SsoSession => {
            header
                .strip_prefix("sso-session")
                .filter(|rest| rest.starts_with(char::is_whitespace))
                .map(str::trim)
                == Some(name)
        }
    }
}

/// The `key = value` settings of profile `name`'s section of a shared file (keys lowercased);
/// empty if the file or the section is missing.
fn section(path: Option<&Path>, name: &str, file: Shared) -> HashMap<String, String> {
    let mut found = HashMap::new();
    let Some(Ok(text)) = path.map(std::fs::read_to_string) else {
        return found;
    };
    let mut inside = false;
    for raw in text.lines() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            inside = is_section_of(header, name, file);
        } else if inside && !raw.starts_with(char::is_whitespace) {
            // (Indented lines are a nested block, such as `s3 =` settings, whose
            // `endpoint_url` is not the profile's.)
            if let Some((key, value)) = line.split_once('=') {
                found.insert(key.trim().to_lowercase(), value.trim().to_owned());
            }
        }
    }
    found
}

/// The static keys of a credentials section, if it has both halves.
pub(crate) fn static_keys(section: &HashMap<String, String>) -> Option<AwsCredentials> {
    let key = section.get("aws_access_key_id")?;
    let secret = section.get("aws_secret_access_key")?;
    Some(match section.get("aws_session_token") {
        Some(token) => AwsCredentials::new_with_token(key.clone(), secret.clone(), token.clone()),
        None => AwsCredentials::new(key.clone(), secret.clone()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory with the two shared files, and the variables that point at them.
    struct Files {
        dir: PathBuf,
        vars: Vec<(String, String)>,
    }

    impl Files {
        fn new(credentials: &str, config: &str) -> Files {
            let mut seed = [0u8; 8];
            getrandom::fill(&mut seed).expect("random");
            let dir = std::env::temp_dir().join(format!(
                "sets3lock-profile-{:016x}",
                u64::from_le_bytes(seed)
            ));
            std::fs::create_dir_all(&dir).expect("dir");
            std::fs::write(dir.join("credentials"), credentials).expect("write");
            std::fs::write(dir.join("config"), config).expect("write");
            let path = |f: &str| dir.join(f).to_str().expect("utf-8").to_owned();
            let vars = vec![
                ("AWS_SHARED_CREDENTIALS_FILE".into(), path("credentials")),
                ("AWS_CONFIG_FILE".into(), path("config")),
            ];
            Files { dir, vars }
        }

        fn with(mut self, name: &str, value: &str) -> Files {
            self.vars.push((name.into(), value.into()));
            self
        }

        fn options(&self, profile: Option<&str>) -> Result<S3Settings, Error> {
            S3Settings::from_vars_and_profile(profile, |name| {
                self.vars
                    .iter()
                    .rev()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.clone())
            })
        }
    }

    impl Drop for Files {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    fn key(options: &S3Settings) -> Option<String> {
        options.credentials.as_ref().map(|c| c.key().to_owned())
    }

    const CREDENTIALS: &str = "\
# the shared credentials file
[default]
aws_access_key_id = DEFAULTKEY
aws_secret_access_key = default-secret

[ci]
aws_access_key_id=CIKEY
aws_secret_access_key=ci-secret
aws_session_token = ci-token
";

    const CONFIG: &str = "\
[default]
region = eu-central-1

[profile ci]
region = eu-west-1
endpoint_url = http://127.0.0.1:8333
s3 =
  endpoint_url = http://nested.invalid
";

    #[test]
    fn a_named_profile_gives_keys_token_region_and_endpoint() {
        let files = Files::new(CREDENTIALS, CONFIG);
        let options = files.options(Some("ci")).expect("options");
        let credentials = options.credentials.as_ref().expect("credentials");
        assert_eq!(credentials.key(), "CIKEY");
        assert_eq!(credentials.secret(), "ci-secret");
        assert_eq!(credentials.token(), Some("ci-token"));
        assert_eq!(options.region, "eu-west-1");
        assert_eq!(
            options.endpoint.map(|e| e.to_string()).as_deref(),
            Some("http://127.0.0.1:8333/")
        );
    }

    #[test]
    fn a_profile_named_explicitly_beats_the_environments_keys_and_must_exist() {
        let files = Files::new(CREDENTIALS, CONFIG)
            .with("AWS_ACCESS_KEY_ID", "ENVKEY")
            .with("AWS_SECRET_ACCESS_KEY", "env-secret");
        assert_eq!(
            key(&files.options(Some("ci")).expect("ci")).as_deref(),
            Some("CIKEY")
        );
        let missing = files.options(Some("missing")).expect_err("no such profile");
        assert!(
            matches!(&missing, Error::Profile { profile, .. } if profile == "missing"),
            "{missing:?}"
        );
        assert!(
            missing.to_string().contains("profile \"missing\""),
            "{missing}"
        );
    }

    #[test]
    fn the_environments_keys_beat_aws_profile_and_the_default_profile() {
        let files = Files::new(CREDENTIALS, CONFIG)
            .with("AWS_ACCESS_KEY_ID", "ENVKEY")
            .with("AWS_SECRET_ACCESS_KEY", "env-secret");
        assert_eq!(
            key(&files.options(None).expect("default")).as_deref(),
            Some("ENVKEY")
        );
        let files = files.with("AWS_PROFILE", "ci");
        let options = files.options(None).expect("AWS_PROFILE");
        assert_eq!(key(&options).as_deref(), Some("ENVKEY"));
        assert_eq!(
            options.region, "eu-west-1",
            "the profile still gives the region"
        );
    }

    #[test]
    fn without_keys_in_the_environment_aws_profile_or_default_gives_them() {
        let files = Files::new(CREDENTIALS, CONFIG);
        let options = files.options(None).expect("default");
        assert_eq!(key(&options).as_deref(), Some("DEFAULTKEY"));
        assert_eq!(options.region, "eu-central-1");
        assert!(options.endpoint.is_none());
        let files = files.with("AWS_PROFILE", "ci");
        assert_eq!(
            key(&files.options(None).expect("ci")).as_deref(),
            Some("CIKEY")
        );
        // AWS_PROFILE naming a missing profile is not an error: there are just no keys.
        let files = files.with("AWS_PROFILE", "missing");
        assert!(files.options(None).expect("missing").credentials.is_none());
    }

    #[test]
    fn the_environment_beats_the_profile_for_region_and_endpoint() {
        let files = Files::new(CREDENTIALS, CONFIG)
            .with("AWS_DEFAULT_REGION", "ap-south-1")
            .with("AWS_ENDPOINT_URL", "http://127.0.0.1:9000");
        let options = files.options(Some("ci")).expect("ci");
        assert_eq!(options.region, "ap-south-1");
        assert_eq!(
            options.endpoint.map(|e| e.to_string()).as_deref(),
            Some("http://127.0.0.1:9000/")
        );
    }

    #[test]
    fn the_config_file_accepts_profile_default_and_reports_a_bad_endpoint() {
        let files = Files::new("", "[profile default]\nregion = us-west-2\n");
        assert_eq!(files.options(None).expect("default").region, "us-west-2");
        let files = Files::new("", "[default]\nendpoint_url = localhost:9000\n");
        assert!(matches!(
            files.options(None),
            Err(Error::InvalidEndpoint { .. })
        ));
    }

    #[test]
    fn missing_files_give_the_environment_alone() {
        let options = S3Settings::from_vars_and_profile(None, |name| match name {
            "HOME" => Some("/nonexistent/sets3lock-home".into()),
            "AWS_REGION" => Some("sa-east-1".into()),
            _ => None,
        })
        .expect("options");
        assert!(options.credentials.is_none());
        assert_eq!(options.region, "sa-east-1");
    }
}
