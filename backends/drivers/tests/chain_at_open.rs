//! Settings made in code leave the credentials to the chain (`Credentials::Chain`, the
//! default), and every store finds it alike when it opens, from the process environment, as
//! the cloud's own tools do: S3 the environment's keys, or those of the profile the settings
//! name (which win over the environment's); GCS the metadata server the environment names;
//! Azure the service principal it names. The environment is the process's, so each scenario
//! runs in a child process of this binary (`SETS3LOCK_CHAIN_SCENARIO`), with only the
//! variables it needs (and every metadata service off or on loopback).
#![cfg(all(feature = "azure", feature = "gcs"))]

mod support;

use sets3lock::{blocking::Locker, Options, StoreCheck, Wait};
use std::process::{Command, Output};
use support::proxy::LossyProxy;
use support::token_service::TokenService;

/// The child: opens a lock with settings made in code and the chain left to the store, takes
/// and releases it, and prints who signed.
#[test]
fn child() {
    let Ok(scenario) = std::env::var("SETS3LOCK_CHAIN_SCENARIO") else {
        return;
    };
    let given = |name: &str| std::env::var(name).unwrap_or_default();
    let endpoint = sets3lock::parse_endpoint(&given("SETS3LOCK_CHAIN_ENDPOINT")).expect("endpoint");
    let mut options = Options::default();
    options.store_check = StoreCheck::Off;
    match scenario.as_str() {
        "s3" => {
            options.s3.endpoint = Some(endpoint);
            options.s3.profile = std::env::var("SETS3LOCK_CHAIN_PROFILE").ok();
        }
        "gcs" => options.gcs.endpoint = Some(endpoint),
        _ => {
            options.azure.account = Some("acct".into());
            options.azure.endpoint = Some(endpoint);
        }
    }
    // Two lockers from the settings: they share what the chain found.
    let url = given("SETS3LOCK_CHAIN_URL");
    for options in [options.clone(), options] {
        let locker = Locker::new(&url, options).expect("opened");
        println!("signed by {}", locker.sign_in().expect("a sign-in"));
        if scenario != "azure" {
            let held = locker.acquire(Wait::No).expect("acquired");
            held.release().expect("released");
        }
    }
}

/// Runs the child for `scenario` with only `vars` (and the metadata services off).
fn child_with(scenario: &str, endpoint: &str, url: &str, vars: &[(&str, &str)]) -> Output {
    let home = std::env::temp_dir().join(format!("sets3lock-chain-home-{}", support::rand_u64()));
    std::fs::create_dir_all(&home).expect("home");
    let mut cmd = Command::new(std::env::current_exe().expect("exe"));
    cmd.args(["--exact", "child", "--nocapture", "--test-threads", "1"])
        .env_clear()
        .env("HOME", &home)
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AZURE_IMDS_DISABLED", "true")
        .env("SETS3LOCK_CHAIN_SCENARIO", scenario)
        .env("SETS3LOCK_CHAIN_ENDPOINT", endpoint)
        .env("SETS3LOCK_CHAIN_URL", url);
    if scenario != "gcs" {
        cmd.env("NO_GCE_CHECK", "true");
    }
    for (name, value) in vars {
        cmd.env(name, value);
    }
    let out = cmd.output().expect("the child runs");
    let _ = std::fs::remove_dir_all(&home);
    out
}

fn said(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The child succeeded, and every S3 request through `proxy` was signed with `key` alone.
fn signed_only_by(proxy: &LossyProxy, key: &str, out: &Output) {
    assert!(out.status.success(), "{}", said(out));
    assert_eq!(signed_with(proxy), [key], "{}", said(out));
}

/// The access key ids the S3 requests through `proxy` were signed with.
fn signed_with(proxy: &LossyProxy) -> Vec<String> {
    let mut keys: Vec<String> = proxy
        .requests()
        .iter()
        .filter_map(|m| {
            let (_, rest) = m.start.split_once("X-Amz-Credential=")?;
            Some(rest.split("%2F").next()?.to_owned())
        })
        .collect();
    keys.dedup();
    keys
}

#[test]
fn s3_settings_made_in_code_sign_with_the_environment_s_keys_found_at_open() {
    if std::env::var("SETS3LOCK_CHAIN_SCENARIO").is_ok() {
        return;
    }
    let mock = support::mock(404);
    let proxy = LossyProxy::start(&mock.endpoint);
    let url = mock.url(&support::fresh_key("chain-env"));
    let out = child_with(
        "s3",
        &proxy.endpoint,
        &url,
        &[
            ("AWS_ACCESS_KEY_ID", &mock.access_key),
            ("AWS_SECRET_ACCESS_KEY", &mock.secret),
        ],
    );
    signed_only_by(&proxy, &mock.access_key, &out);
    let signer = format!("signed by keys ({})", mock.access_key);
    assert!(said(&out).contains(&signer), "{}", said(&out));
}

#[test]
fn s3_settings_that_name_a_profile_sign_with_its_keys_over_the_environment_s() {
    if std::env::var("SETS3LOCK_CHAIN_SCENARIO").is_ok() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("sets3lock-chain-{}", support::rand_u64()));
    std::fs::create_dir_all(&dir).expect("dir");
    let (credentials, config) = (dir.join("credentials"), dir.join("config"));
    // The mock knows its own keys only: the profile has them, the environment has others.
    let mock = support::mock(404);
    std::fs::write(
        &credentials,
        format!(
            "[ci]\naws_access_key_id = {}\naws_secret_access_key = {}\n",
            mock.access_key, mock.secret
        ),
    )
    .expect("write");
    std::fs::write(&config, "").expect("write");
    let proxy = LossyProxy::start(&mock.endpoint);
    let url = mock.url(&support::fresh_key("chain-profile"));
    let (credentials, config) = (
        credentials.display().to_string(),
        config.display().to_string(),
    );
    let out = child_with(
        "s3",
        &proxy.endpoint,
        &url,
        &[
            ("AWS_ACCESS_KEY_ID", "AKIDENVLOSES"),
            ("AWS_SECRET_ACCESS_KEY", "secret"),
            ("AWS_SHARED_CREDENTIALS_FILE", &credentials),
            ("AWS_CONFIG_FILE", &config),
            ("SETS3LOCK_CHAIN_PROFILE", "ci"),
        ],
    );
    let _ = std::fs::remove_dir_all(&dir);
    signed_only_by(&proxy, &mock.access_key, &out);
}

#[test]
fn gcs_settings_made_in_code_ask_the_metadata_server_the_environment_names_at_open() {
    if std::env::var("SETS3LOCK_CHAIN_SCENARIO").is_ok() {
        return;
    }
    let metadata = TokenService::start(|_, _| {
        (
            200,
            r#"{"access_token":"ya29.chain-env","expires_in":3599,"token_type":"Bearer"}"#.into(),
        )
    });
    let mock = support::mock_gcs();
    let proxy = LossyProxy::start(&mock.endpoint);
    let url = mock.url(&support::fresh_key("chain-gcs"));
    let host = metadata.url.trim_start_matches("http://").to_owned();
    let out = child_with(
        "gcs",
        &proxy.endpoint,
        &url,
        &[("GCE_METADATA_HOST", &host)],
    );
    assert!(out.status.success(), "{}", said(&out));
    let bearers: Vec<String> = proxy
        .requests()
        .iter()
        .map(|m| m.header("authorization").unwrap_or("").to_owned())
        .collect();
    assert!(
        !bearers.is_empty() && bearers.iter().all(|a| a == "Bearer ya29.chain-env"),
        "{bearers:?}: {}",
        said(&out)
    );
    // Asked once: the second locker from the same settings uses the source the first found.
    let asked = metadata.asked();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].header("metadata-flavor"), Some("Google"));
}

#[test]
fn azure_settings_made_in_code_sign_in_as_the_service_principal_the_environment_names() {
    if std::env::var("SETS3LOCK_CHAIN_SCENARIO").is_ok() {
        return;
    }
    let entra = TokenService::start(|_, _| {
        (
            200,
            r#"{"access_token":"eyJ.chain-env","expires_in":3599,"token_type":"Bearer"}"#.into(),
        )
    });
    // Bearer tokens need https: nothing listens there, and nothing is sent to it (the lock
    // is only opened, which fetches the first token).
    let out = child_with(
        "azure",
        "https://127.0.0.1:9/acct",
        "az://container/chain-azure",
        &[
            ("AZURE_TENANT_ID", "tenant-1"),
            ("AZURE_CLIENT_ID", "client-1"),
            ("AZURE_CLIENT_SECRET", "not-shown"),
            ("AZURE_AUTHORITY_HOST", &entra.url),
        ],
    );
    assert!(out.status.success(), "{}", said(&out));
    assert!(
        said(&out).contains("signed by a service principal"),
        "{}",
        said(&out)
    );
    assert!(!said(&out).contains("not-shown"), "{}", said(&out));
    let asked = entra.asked();
    assert_eq!(asked.len(), 1, "one token for both lockers: {asked:?}");
    assert!(
        asked[0].method == "POST" && asked[0].target.starts_with("/tenant-1/oauth2/v2.0/token"),
        "{asked:?}"
    );
}
