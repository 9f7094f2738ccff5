//! The command signs in without keys, the way the AWS tools do, on moto (instance metadata and
//! STS on the port of its S3) and with a container endpoint served here: it locks, runs the
//! program and releases; temporary credentials are refreshed under a long hold; a source that
//! fails mid-hold ends the hold (exit 112) before its lease; nothing at all is one line.

use crate::support::command::{code, one_line, stderr, TestCommand};
use crate::support::token_service::{in_secs, TokenService};
use crate::support::{self, fresh_key, scratch_dir, Server};
use std::time::{Duration, Instant};

fn moto() -> Option<(Server, String)> {
    let server = support::real("moto")?;
    let metadata = std::env::var("SETS3LOCK_MOTO_METADATA").expect("SETS3LOCK_MOTO_METADATA");
    Some((server, metadata))
}

#[test]
fn an_ec2_role_from_instance_metadata_signs_the_command() {
    let Some((s, metadata)) = moto() else { return };
    let out = TestCommand::new(&s)
        .without_keys()
        .env("AWS_EC2_METADATA_DISABLED", "false")
        .env("AWS_EC2_METADATA_SERVICE_ENDPOINT", &metadata)
        .args(["-v", &s.url(&fresh_key("cli-imds")), "true"])
        .output();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("signed by instance metadata, credentials expire at"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_web_identity_and_a_credential_process_sign_the_command() {
    let Some((s, _)) = moto() else { return };
    let dir = scratch_dir("signin");
    let token = format!("{dir}/token");
    std::fs::write(&token, "eyJhbGciOi.projected.token").expect("write");
    let out = TestCommand::new(&s)
        .without_keys()
        .env("AWS_WEB_IDENTITY_TOKEN_FILE", &token)
        .env("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/ci")
        .args(["-v", &s.url(&fresh_key("cli-irsa")), "true"])
        .output();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("signed by web identity (role arn:aws:iam::123456789012:role/ci)"),
        "{}",
        stderr(&out)
    );
    let config = format!("{dir}/config");
    std::fs::write(
        &config,
        format!(
            "[profile tool]\ncredential_process = printf '{{\"Version\":1,\"AccessKeyId\":\"AKIAPROC\",\"SecretAccessKey\":\"x\",\"SessionToken\":\"t\",\"Expiration\":\"{}\"}}'\n",
            in_secs(3600)
        ),
    )
    .expect("write");
    let out = TestCommand::new(&s)
        .without_keys()
        .env("AWS_CONFIG_FILE", &config)
        .args([
            "-v",
            "--profile",
            "tool",
            &s.url(&fresh_key("cli-process")),
            "true",
        ])
        .output();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("signed by profile tool (credential_process)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_assume_role_profile_signs_the_command() {
    let Some((s, _)) = moto() else { return };
    let dir = scratch_dir("signin-role");
    std::fs::write(
        format!("{dir}/credentials"),
        "[base]\naws_access_key_id = AKIABASE\naws_secret_access_key = base-secret\n",
    )
    .expect("write");
    std::fs::write(
        format!("{dir}/config"),
        "[profile deploy]\nrole_arn = arn:aws:iam::123456789012:role/deploy\nsource_profile = base\n",
    )
    .expect("write");
    let out = TestCommand::new(&s)
        .without_keys()
        .env("AWS_SHARED_CREDENTIALS_FILE", &format!("{dir}/credentials"))
        .env("AWS_CONFIG_FILE", &format!("{dir}/config"))
        .args([
            "-v",
            "--profile",
            "deploy",
            &s.url(&fresh_key("cli-role")),
            "true",
        ])
        .output();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "signed by profile deploy (assumes role arn:aws:iam::123456789012:role/deploy)"
        ),
        "{}",
        stderr(&out)
    );
}

/// A container endpoint whose credentials live `life` seconds.
fn container(life: i64) -> TokenService {
    TokenService::start(move |_, n| {
        let body = format!(
            r#"{{"AccessKeyId":"ASIA{n}","SecretAccessKey":"secret-{n}-xyzzy","Token":"session-{n}-plugh","Expiration":"{}"}}"#,
            in_secs(life)
        );
        (200, body)
    })
}

#[test]
fn a_hold_longer_than_its_credentials_keeps_renewing_and_a_dead_source_ends_it_in_time() {
    let Some((s, _)) = moto() else { return };
    // Credentials living 20 s, refreshed every 10 s, under a 60 s hold with a 4 s lease.
    let service = container(20);
    let started = Instant::now();
    let out = TestCommand::new(&s)
        .without_keys()
        .env("AWS_CONTAINER_CREDENTIALS_FULL_URI", &service.url)
        .args([
            "-v",
            "--lease",
            "4s",
            &s.url(&fresh_key("cli-refresh")),
            "sleep",
            "60",
        ])
        .output();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // Every line it wrote, with -v, names the source and no secret or token.
    let said = format!("{}{}", stderr(&out), crate::support::command::stdout(&out));
    assert!(said.contains("signed by the container endpoint"), "{said}");
    assert!(
        !said.contains("xyzzy") && !said.contains("plugh"),
        "a secret leaked: {said}"
    );
    assert!(started.elapsed() >= Duration::from_secs(60));
    let fetched = service.asked().len();
    assert!(fetched >= 6, "fetched {fetched} times in 60 s");
    // Every renewal landed: -v shows none delayed.
    assert!(!stderr(&out).contains("RenewalDelayed"), "{}", stderr(&out));
    assert!(
        stderr(&out).matches("Renewed").count() >= 20,
        "{}",
        stderr(&out)
    );
    // The source goes down 1 s in: its credentials (8 s) stop signing 3 s later; the hold
    // ends then, its program is stopped and the command exits 112 before the lease runs out.
    let service = container(8);
    let mut child = TestCommand::new(&s)
        .without_keys()
        .env("AWS_CONTAINER_CREDENTIALS_FULL_URI", &service.url)
        .args([
            "--lease",
            "3s",
            &s.url(&fresh_key("cli-dead-source")),
            "sleep",
            "60",
        ])
        .spawn();
    std::thread::sleep(Duration::from_secs(1));
    service.go_down();
    let down = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(
            down.elapsed() < Duration::from_secs(20),
            "still running 20 s after the source went down"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(status.code(), Some(112));
    assert!(
        down.elapsed() < Duration::from_secs(3 + 3 + 2),
        "exited {:?} after the source went down",
        down.elapsed()
    );
}

#[test]
fn with_no_credentials_anywhere_one_line_names_what_was_tried() {
    let s = support::offline();
    let out = TestCommand::new(&s)
        .without_keys()
        .args([&s.url("k"), "true"])
        .output();
    assert_eq!(code(&out), 111);
    one_line(&out, "no AWS credentials: tried the environment");
    for said in [
        "web identity (not configured)",
        "container (not configured)",
        "instance metadata (turned off by AWS_EC2_METADATA_DISABLED)",
        "aws sso login",
    ] {
        assert!(stderr(&out).contains(said), "{said:?}: {}", stderr(&out));
    }
}

/// Runs the command without keys on moto with these variables, `-v`; its output.
fn signed_on_moto(s: &Server, key: &str, vars: &[(&str, &str)]) -> std::process::Output {
    let mut command = TestCommand::new(s).without_keys();
    for (k, v) in vars {
        command = command.env(k, v);
    }
    command
        .args(["-v", &s.url(&fresh_key(key)), "true"])
        .output()
}

#[test]
fn a_comment_after_a_profile_s_header_never_signs_with_another_profile_s_keys() {
    let Some((s, _)) = moto() else { return };
    let dir = scratch_dir("signin-comment");
    let credentials = format!("{dir}/credentials");
    std::fs::write(
        &credentials,
        "[default]\naws_access_key_id = AKIADEFAULTKEY\naws_secret_access_key = default-secret\n\n[prod]   # production account\naws_access_key_id = AKIAPRODKEY\naws_secret_access_key = prod-secret\n",
    )
    .expect("write");
    let files = [
        ("AWS_SHARED_CREDENTIALS_FILE", credentials.as_str()),
        ("AWS_CONFIG_FILE", "/nonexistent/sets3lock-config"),
    ];
    let out = signed_on_moto(&s, "cli-comment", &files);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("signed by keys (AKIADEFAULTKEY)"),
        "{}",
        stderr(&out)
    );
    let with_prod = [files[0], files[1], ("AWS_PROFILE", "prod")];
    let out = signed_on_moto(&s, "cli-comment", &with_prod);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("signed by keys (AKIAPRODKEY)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_source_profile_with_keys_and_a_role_of_its_own_signs_the_next_role_with_its_keys() {
    let Some((s, _)) = moto() else { return };
    let dir = scratch_dir("signin-chain");
    std::fs::write(
        format!("{dir}/credentials"),
        "[base]\naws_access_key_id = AKIABASE\naws_secret_access_key = base-secret\n",
    )
    .expect("write");
    // base has a role of its own, with no source: past the first hop its keys win, as in
    // aws-config and botocore.
    std::fs::write(
        format!("{dir}/config"),
        "[profile deploy]\nrole_arn = arn:aws:iam::123456789012:role/deploy\nsource_profile = base\n\n[profile base]\nrole_arn = arn:aws:iam::123456789012:role/base-only\n",
    )
    .expect("write");
    let credentials = format!("{dir}/credentials");
    let config = format!("{dir}/config");
    let out = signed_on_moto(
        &s,
        "cli-chain",
        &[
            ("AWS_SHARED_CREDENTIALS_FILE", &credentials),
            ("AWS_CONFIG_FILE", &config),
            ("AWS_PROFILE", "deploy"),
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "signed by profile deploy (assumes role arn:aws:iam::123456789012:role/deploy)"
        ),
        "{}",
        stderr(&out)
    );
}

#[test]
fn instance_metadata_that_holds_its_first_answer_3_s_is_asked_again_and_the_command_runs() {
    let Some((s, metadata)) = moto() else { return };
    let slow = crate::support::proxy::FaultProxy::holding_first(&metadata, Duration::from_secs(3));
    let started = Instant::now();
    let out = signed_on_moto(
        &s,
        "cli-imds-slow",
        &[
            ("AWS_EC2_METADATA_DISABLED", "false"),
            ("AWS_EC2_METADATA_SERVICE_ENDPOINT", &slow.endpoint),
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("signed by instance metadata"),
        "{}",
        stderr(&out)
    );
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn instance_metadata_failing_mid_hold_keeps_the_hold_and_the_command_says_so() {
    let Some((s, _)) = moto() else { return };
    let (key, secret) = (s.access_key.clone(), s.secret.clone());
    let down = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let broken = down.clone();
    // Credentials living 30 s (asked for again at 15 s), then instance metadata down (503).
    let imds = TokenService::start(move |asked, n| {
        if broken.load(std::sync::atomic::Ordering::SeqCst) {
            return (503, "updating".into());
        }
        match asked.target.as_str() {
            "/latest/api/token" => (200, "imds-token".into()),
            "/latest/meta-data/iam/security-credentials/" => (200, "locker-role".into()),
            _ => (
                200,
                format!(
                    r#"{{"Code":"Success","AccessKeyId":"{key}","SecretAccessKey":"{secret}","Token":"session-{n}","Expiration":"{}"}}"#,
                    in_secs(30)
                ),
            ),
        }
    });
    let mut child = TestCommand::new(&s)
        .without_keys()
        .env("AWS_EC2_METADATA_DISABLED", "false")
        .env("AWS_EC2_METADATA_SERVICE_ENDPOINT", &imds.url)
        .args([
            "--lease",
            "3s",
            &s.url(&fresh_key("cli-imds-steady")),
            "sleep",
            "33",
        ])
        .cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run");
    std::thread::sleep(Duration::from_secs(2));
    down.store(true, std::sync::atomic::Ordering::SeqCst);
    let started = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "still running 90 s after instance metadata went down"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = child.wait_with_output().expect("output");
    // Past its credentials' expiry, the program ran to its end on the last ones, and the
    // command said why once.
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let said = stderr(&out);
    assert!(
        said.contains("signing in: instance metadata failed")
            && said.contains("the last credentials it gave are used until"),
        "{said}"
    );
    assert_eq!(said.matches("signing in:").count(), 1, "{said}");
}
