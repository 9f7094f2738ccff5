//! S3's settings completed from an AWS profile, as the AWS tools complete theirs: region,
//! endpoint and credentials (the files are read by `profile/`, the source is chosen by
//! `resolve.rs`).

use crate::signin::aws::profile::chain::profile_region;
use crate::signin::aws::profile::SharedFiles;
use crate::signin::aws::resolve::{resolve, Resolved, Services};
use crate::signin::credentials::Credentials;
use crate::signin::fetch::CaBundle;
use crate::{Error, S3Settings};

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
    /// - **Region**: `AWS_REGION` or `AWS_DEFAULT_REGION`, else the profile's `region` (or
    ///   that of its `source_profile`, and so on).
    /// - **Endpoint**: `AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL`, else the `s3`
    ///   `endpoint_url` of the `[services]` section the profile names, else the profile's
    ///   `endpoint_url`. STS is found the same way (`AWS_ENDPOINT_URL_STS`, `sts`), else it
    ///   is the region's, in its partition (`sts.cn-north-1.amazonaws.com.cn`).
    ///
    /// The files are read as the AWS SDKs read them (comments, `[profile name]` and `[name]`,
    /// nested settings, the credentials file's values winning); one that cannot be parsed is
    /// an [`SettingsError::Profile`](crate::SettingsError::Profile) naming its line, never a line skipped. They are not read at all
    /// when the environment gives the keys, the region and the endpoint. A profile named
    /// explicitly must exist and give credentials ([`SettingsError::Profile`](crate::SettingsError::Profile) otherwise); a profile
    /// that is wrong (a `role_arn` without a source, half a pair of keys, a loop of
    /// `source_profile`s) is an [`SettingsError::Profile`](crate::SettingsError::Profile) too, whoever named it: never a fall through
    /// to another identity.
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
    /// assert_eq!(options.signer().unwrap().current()?.key(), "AKIDCI");
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
        let mut options = S3Settings::from_variables_only(&var)?;
        options.profile = profile.map(str::to_owned);
        let env_region = var("AWS_REGION").or_else(|| var("AWS_DEFAULT_REGION"));
        let env_endpoint = var("AWS_ENDPOINT_URL_S3").or_else(|| var("AWS_ENDPOINT_URL"));
        // The environment's keys win (and nothing else is read or started), unless a profile
        // is named explicitly.
        let keys_from_env =
            profile.is_none() && matches!(options.credentials, Credentials::Fixed(_));
        if keys_from_env && env_region.is_some() && env_endpoint.is_some() {
            return Ok(options);
        }
        let name = profile
            .map(str::to_owned)
            .or_else(|| var("AWS_PROFILE"))
            .unwrap_or_else(|| "default".to_owned());
        let files = SharedFiles::from_vars(&var);
        let profiles = files.read().map_err(|reason| {
            Error::Settings(crate::SettingsError::Profile {
                profile: name.clone(),
                reason,
            })
        })?;
        let selected = profiles.profile(&name);
        let setting = |key: &str| selected.and_then(|p| p.get(key)).cloned();
        let service_endpoint = |service: &str| {
            setting("services")
                .and_then(|services| profiles.service_endpoint(&services, service))
                .or_else(|| setting("endpoint_url"))
        };
        if env_region.is_none() {
            if let Some(region) = profile_region(&profiles, &name) {
                options.region = region;
            }
        }
        if env_endpoint.is_none() {
            if let Some(endpoint) = service_endpoint("s3") {
                options.endpoint = Some(crate::parse_endpoint(&endpoint)?);
            }
        }
        if keys_from_env {
            return Ok(options);
        }
        options.credentials = Credentials::Chain;
        let services = Services {
            region: &options.region,
            sts: var("AWS_ENDPOINT_URL_STS")
                .or_else(|| var("AWS_ENDPOINT_URL"))
                .or_else(|| service_endpoint("sts")),
        };
        let ca_bundle = CaBundle::new(
            var("SETS3LOCK_CA_BUNDLE")
                .or_else(|| var("AWS_CA_BUNDLE"))
                .map(std::path::PathBuf::from),
        );
        options.chain_ca = ca_bundle.clone();
        match resolve(profile, &var, &profiles, &services, &ca_bundle)? {
            Resolved::Keys(keys) => options.credentials = Credentials::Fixed(keys),
            Resolved::Source(source) => options.credentials = Credentials::Source(source),
        }
        Ok(options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

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

    /// The keys the settings hold as they are (not a source the chain found).
    fn fixed(options: &S3Settings) -> Option<&crate::AwsCredentials> {
        match &options.credentials {
            Credentials::Fixed(keys) => Some(keys),
            _ => None,
        }
    }

    fn key(options: &S3Settings) -> Option<String> {
        fixed(options).map(|c| c.key().to_owned())
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
        let credentials = fixed(&options).expect("credentials");
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
            matches!(&missing, Error::Settings(crate::SettingsError::Profile { profile, .. }) if profile == "missing"),
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
        assert!(fixed(&files.options(None).expect("missing")).is_none());
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
        assert!(fixed(&options).is_none());
        assert_eq!(options.region, "sa-east-1");
    }

    #[test]
    fn a_comment_after_a_profile_s_header_never_gives_its_keys_to_another_profile() {
        let files = Files::new(
            "[default]\naws_access_key_id = DEFAULTKEY\naws_secret_access_key = d\n\n[prod]   # production account\naws_access_key_id = PRODKEY ; the prod key\naws_secret_access_key = p\n",
            "[default]\nregion = eu-west-1 # Ireland\n[profile prod] ; prod\nregion = us-east-2\n",
        );
        let options = files.options(None).expect("default");
        assert_eq!(key(&options).as_deref(), Some("DEFAULTKEY"));
        assert_eq!(options.region, "eu-west-1");
        let options = files.options(Some("prod")).expect("prod");
        assert_eq!(key(&options).as_deref(), Some("PRODKEY"));
        assert_eq!(options.region, "us-east-2");
        let files = files.with("AWS_PROFILE", "prod");
        assert_eq!(
            key(&files.options(None).expect("AWS_PROFILE")).as_deref(),
            Some("PRODKEY")
        );
    }

    #[test]
    fn a_broken_shared_file_is_an_error_that_names_its_line() {
        let files = Files::new("[default]\naws_access_key_id = A\n[prod\n", "");
        let e = files.options(None).expect_err("broken");
        let line = e.to_string();
        assert!(
            line.contains("credentials line 3: a profile's header must end with ']'"),
            "{line}"
        );
        assert!(
            matches!(e, Error::Settings(crate::SettingsError::Profile { .. })),
            "{e:?}"
        );
        // Not read at all when the environment gives keys, region and endpoint.
        let files = files
            .with("AWS_ACCESS_KEY_ID", "ENVKEY")
            .with("AWS_SECRET_ACCESS_KEY", "s")
            .with("AWS_REGION", "eu-west-1")
            .with("AWS_ENDPOINT_URL", "http://127.0.0.1:9");
        assert_eq!(
            key(&files.options(None).expect("from the environment")).as_deref(),
            Some("ENVKEY")
        );
        // ... but read for the region the environment lacks.
        let files = Files::new("[default]\n[broken\n", "")
            .with("AWS_ACCESS_KEY_ID", "K")
            .with("AWS_SECRET_ACCESS_KEY", "s");
        assert!(files.options(None).is_err());
    }

    #[test]
    fn half_a_pair_of_keys_is_an_error_not_a_fall_through_to_another_identity() {
        let files = Files::new("[default]\naws_access_key_id = ONLYKEY\n", "");
        let e = files.options(None).expect_err("half keys");
        assert!(e.to_string().contains("no aws_secret_access_key"), "{e}");
    }

    #[test]
    fn the_region_comes_from_the_profile_or_its_source_profile() {
        let files = Files::new(
            "[base]\naws_access_key_id = BASEKEY\naws_secret_access_key = b\n",
            "[profile deploy]\nrole_arn = arn:aws:iam::1:role/deploy\nsource_profile = base\n[profile base]\nregion = ap-southeast-2\n",
        );
        let options = files.options(Some("deploy")).expect("deploy");
        assert_eq!(options.region, "ap-southeast-2");
        // The role's chain is a source, whose name says which role.
        let signer = options.signer().expect("a source");
        assert!(
            signer
                .sign_in()
                .source
                .contains("assumes role arn:aws:iam::1:role/deploy"),
            "{:?}",
            signer.sign_in()
        );
    }

    #[test]
    fn a_services_section_names_the_s3_endpoint_and_beats_the_profile_s_own() {
        let config = "[profile ci]\nservices = local\nendpoint_url = http://127.0.0.1:1\n[services local]\ns3 =\n  endpoint_url = http://127.0.0.1:2\n[profile plain]\nendpoint_url = http://127.0.0.1:3\n";
        let credentials = format!(
            "{CREDENTIALS}\n[plain]\naws_access_key_id = PLAIN\naws_secret_access_key = p\n"
        );
        let files = Files::new(&credentials, config);
        let port = |p: &str| {
            files
                .options(Some(p))
                .expect("options")
                .endpoint
                .and_then(|e| e.port())
        };
        assert_eq!(port("ci"), Some(2));
        assert_eq!(port("plain"), Some(3));
        // The environment's beats both.
        let files = files.with("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:4");
        assert_eq!(
            files
                .options(Some("ci"))
                .expect("ci")
                .endpoint
                .and_then(|e| e.port()),
            Some(4)
        );
    }
}
