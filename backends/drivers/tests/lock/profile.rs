//! AWS profiles end to end: the keys of the profile chosen (by name or by `AWS_PROFILE`) sign
//! requests the mock server accepts; another profile's keys are refused.

use crate::support;

use sets3lock::{Client, Options, S3Settings};

#[test]
fn a_named_profiles_keys_sign_the_requests() {
    let mock = support::mock(404);
    let dir = std::env::temp_dir().join(format!("sets3lock-profile-{:016x}", support::rand_u64()));
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("credentials");
    std::fs::write(
        &file,
        format!(
            "[default]\naws_access_key_id = nope\naws_secret_access_key = nope\n\n[ci]\naws_access_key_id = {}\naws_secret_access_key = {}\n",
            mock.access_key, mock.secret
        ),
    )
    .expect("write");
    let vars = |profile: Option<&'static str>| {
        let file = file.to_str().expect("utf-8 path").to_owned();
        let endpoint = mock.endpoint.clone();
        move |name: &str| match name {
            "AWS_SHARED_CREDENTIALS_FILE" => Some(file.clone()),
            "AWS_CONFIG_FILE" => Some("/nonexistent/sets3lock-config".to_owned()),
            "AWS_ENDPOINT_URL" => Some(endpoint.clone()),
            "AWS_PROFILE" => profile.map(str::to_owned),
            _ => None,
        }
    };
    let status = |s3: S3Settings| {
        let mut options = Options::default();
        options.s3 = s3;
        Client::new(&mock.bucket, &options).and_then(|c| c.status(&support::fresh_key("profile")))
    };

    let named = S3Settings::from_vars_and_profile(Some("ci"), vars(None)).expect("profile ci");
    assert!(status(named).expect("signed with ci's keys").is_none());
    let from_env = S3Settings::from_vars_and_profile(None, vars(Some("ci"))).expect("AWS_PROFILE");
    assert!(status(from_env).expect("signed with ci's keys").is_none());
    let default = S3Settings::from_vars_and_profile(None, vars(None)).expect("default");
    assert!(
        status(default).is_err(),
        "the default profile's keys are wrong"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
