//! The AWS credential chain end to end: each source signs a lock's requests, temporary
//! credentials are refreshed under a hold, a source that fails ends a hold as an outage does,
//! and a chain with nothing to offer says so in one line. The token services are stubs on
//! loopback (container endpoint, instance metadata) or moto (instance metadata and STS).

use crate::support::token_service::{in_secs, TokenService};
use crate::support::vars::{no_metadata, Vars};
use crate::support::{self, fresh_key};
use sets3lock::blocking::Locker;
use sets3lock::proto::{ReleaseOutcome, Scheme};
use sets3lock::{Error, Loss, Options, Wait};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A container endpoint whose credentials (the mock's key, a new session token each time)
/// live `life` seconds.
fn container(key: String, secret: String, life: i64) -> TokenService {
    TokenService::start(move |_, n| {
        let body = serde_json::json!({
            "AccessKeyId": key,
            "SecretAccessKey": secret,
            "Token": format!("session-{n}"),
            "Expiration": in_secs(life),
        });
        (200, body.to_string())
    })
}

fn tokens_seen(proxy: &support::proxy::LossyProxy) -> Vec<String> {
    let mut tokens: Vec<String> = proxy
        .requests()
        .iter()
        .filter_map(|m| {
            let target = m.start.split_whitespace().nth(1)?;
            let url = url::Url::parse(&format!("http://x{target}")).ok()?;
            url.query_pairs()
                .find(|(k, _)| k == "X-Amz-Security-Token")
                .map(|(_, v)| v.into_owned())
        })
        .collect();
    tokens.dedup();
    tokens
}

#[test]
fn container_credentials_sign_and_a_hold_outlives_them() {
    let mock = support::mock(404);
    let (proxy, _) = mock.proxied();
    let service = container(mock.access_key.clone(), mock.secret.clone(), 10);
    let vars = no_metadata()
        .with(
            "AWS_CONTAINER_CREDENTIALS_FULL_URI",
            &format!("{}/creds", service.url),
        )
        .with("AWS_CONTAINER_AUTHORIZATION_TOKEN", "pod-identity-token")
        .with("AWS_ENDPOINT_URL", &proxy.endpoint)
        .with("AWS_REGION", "us-east-1");
    let mut options = Options::from_vars(Scheme::S3, vars.lookup()).expect("options");
    // No keys: the source the chain found.
    assert!(matches!(
        options.s3.credentials,
        sets3lock::Credentials::Source(_)
    ));
    let shown = format!("{options:?}");
    assert!(shown.contains("the container endpoint"), "{shown}");
    assert!(!shown.contains(&mock.secret), "{shown}");
    options.lock.lease = Duration::from_secs(3);
    // Every renewal must land: none delayed (a request with no credentials to sign with is
    // a setback, which would show here).
    let renewed = Arc::new(AtomicUsize::new(0));
    let delayed = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (r, d) = (renewed.clone(), delayed.clone());
    options.observer = Some(sets3lock::Observer::new(move |o| {
        if let sets3lock::Observation::Event(e) = o {
            match e {
                sets3lock::Event::Renewed { .. } => {
                    r.fetch_add(1, Ordering::SeqCst);
                }
                sets3lock::Event::RenewalDelayed { setback } => {
                    d.lock().expect("setbacks").push(format!("{setback:?}"));
                }
                _ => {}
            }
        }
    }));
    let locker = Locker::new(&mock.url(&fresh_key("container")), options).expect("locker");
    let signer = locker.sign_in().expect("the S3 store says who signs");
    assert!(signer.source.contains("container endpoint"), "{signer:?}");
    assert!(signer.expires.is_some(), "{signer:?}");
    let held = locker
        .acquire(Wait::No)
        .expect("signed with the container's credentials");
    // Credentials living 10 s are fetched again every 5 s: across 16 s, three times at least,
    // and every renewal (each second) lands.
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(16) {
        assert!(
            held.is_held(),
            "the hold ended at {:?}: {:?}",
            started.elapsed(),
            held.loss_watch().loss()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    assert_eq!(held.release().expect("release"), ReleaseOutcome::Deleted);
    let delayed = delayed.lock().expect("setbacks").clone();
    assert!(delayed.is_empty(), "renewals were delayed: {delayed:?}");
    assert!(
        renewed.load(Ordering::SeqCst) >= 5,
        "{} renewals in 16 s",
        renewed.load(Ordering::SeqCst)
    );
    let asked = service.asked();
    assert!(asked.len() >= 4, "fetched {} times in 16 s", asked.len());
    assert!(asked
        .iter()
        .all(|a| a.header("authorization") == Some("pod-identity-token")));
    let tokens = tokens_seen(&proxy);
    assert!(
        tokens.len() >= 3 && tokens.first().map(String::as_str) == Some("session-0"),
        "the requests were signed with {tokens:?}"
    );
}

#[test]
fn a_source_that_fails_mid_hold_ends_the_hold_as_an_outage_would() {
    let mock = support::mock(404);
    let service = container(mock.access_key.clone(), mock.secret.clone(), 8);
    let vars = no_metadata()
        .with("AWS_CONTAINER_CREDENTIALS_FULL_URI", &service.url)
        .with("AWS_ENDPOINT_URL", &mock.endpoint);
    let mut options = Options::from_vars(Scheme::S3, vars.lookup()).expect("options");
    let lease = Duration::from_secs(3);
    options.lock.lease = lease;
    let key = fresh_key("container-down");
    let held = Locker::new(&mock.url(&key), options)
        .expect("locker")
        .acquire(Wait::No)
        .expect("acquire");
    service.go_down();
    let down = Instant::now();
    // A waiter with good keys, from the moment the source goes down.
    let waiter = {
        let mut other = mock.options();
        other.lock.lease = lease;
        let url = mock.url(&key);
        std::thread::spawn(move || {
            let held = Locker::new(&url, other)
                .expect("locker")
                .acquire(Wait::Timeout(Duration::from_secs(20)))
                .expect("taken over after the lease");
            let at = Instant::now();
            held.release().expect("release");
            at
        })
    };
    // The credentials are usable until 5 s before they expire (3 s from now); then no request
    // can be signed, and the hold ends before its last renewal's lease runs out.
    let mut loss = None;
    while down.elapsed() < Duration::from_secs(15) && loss.is_none() {
        loss = held.loss_watch().loss();
        std::thread::sleep(Duration::from_millis(20));
    }
    let lost_at = Instant::now();
    assert_eq!(loss, Some(Loss::Expired), "after {:?}", down.elapsed());
    assert!(
        down.elapsed() < Duration::from_secs(3) + lease + Duration::from_secs(1),
        "ended {:?} after the service went down",
        down.elapsed()
    );
    // Nobody else had it while the holder still counted on it.
    let taken_at = waiter.join().expect("waiter");
    assert!(
        taken_at + Duration::from_millis(20) >= lost_at,
        "the waiter took it {:?} before the holder's hold ended",
        lost_at.duration_since(taken_at)
    );
}

#[test]
fn with_nothing_to_sign_with_one_line_names_every_source_tried() {
    // Off EC2: nothing listens at instance metadata's address (here a closed port on
    // loopback, which refuses the connection): one try, at once.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = closed.local_addr().expect("addr");
    drop(closed);
    let vars = no_metadata()
        .with("AWS_EC2_METADATA_DISABLED", "false")
        .with(
            "AWS_EC2_METADATA_SERVICE_ENDPOINT",
            &format!("http://{address}"),
        )
        .with("AWS_ENDPOINT_URL", "http://127.0.0.1:9");
    let options = Options::from_vars(Scheme::S3, vars.lookup()).expect("options");
    let started = Instant::now();
    let e = Locker::new("s3://bucket/key", options).expect_err("no credentials");
    let took = started.elapsed();
    let line = e.to_string();
    assert!(
        matches!(e, Error::NoCredentials { store: "AWS", .. }),
        "{e:?}"
    );
    for said in [
        "no AWS credentials: tried the environment",
        "profile default (no profiles in /nonexistent/sets3lock-test-home/.aws/credentials",
        "web identity (not configured)",
        "container (not configured)",
        "instance metadata (",
        "could not be reached",
        "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE",
    ] {
        assert!(line.contains(said), "{said:?} is not in: {line}");
    }
    assert!(
        !line.contains("tries"),
        "a refused connection is tried once: {line}"
    );
    assert!(!line.contains('\n'), "{line}");
    assert!(took < Duration::from_millis(1500), "took {took:?}");
    // Turned off: nothing is asked, at once.
    let vars = no_metadata().with("AWS_ENDPOINT_URL", "http://127.0.0.1:9");
    let options = Options::from_vars(Scheme::S3, vars.lookup()).expect("options");
    let e = Locker::new("s3://bucket/key", options).expect_err("no credentials");
    assert!(
        e.to_string()
            .contains("instance metadata (turned off by AWS_EC2_METADATA_DISABLED)"),
        "{e}"
    );
}

#[test]
fn keys_set_in_code_win_over_the_source_the_chain_found() {
    let mock = support::mock(404);
    let service = container("AKIAWRONG".into(), "wrong".into(), 3600);
    let vars = no_metadata()
        .with("AWS_CONTAINER_CREDENTIALS_FULL_URI", &service.url)
        .with("AWS_ENDPOINT_URL", &mock.endpoint);
    let mut options = Options::from_vars(Scheme::S3, vars.lookup()).expect("options");
    options.s3.credentials = sets3lock::Credentials::Fixed(sets3lock::AwsCredentials::new(
        mock.access_key.clone(),
        mock.secret.clone(),
    ));
    let held = Locker::new(&mock.url(&fresh_key("keys-win")), options)
        .expect("locker")
        .acquire(Wait::No)
        .expect("signed with the keys given");
    held.release().expect("release");
    assert!(service.asked().is_empty(), "the chain's source was asked");
}

#[test]
fn a_credential_process_signs_and_its_failure_is_quoted() {
    let mock = support::mock(404);
    let dir = std::env::temp_dir().join(format!("sets3lock-process-{:016x}", support::rand_u64()));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join("config");
    std::fs::write(
        &config,
        format!(
            "[profile tool]\ncredential_process = printf '{{\"Version\":1,\"AccessKeyId\":\"%s\",\"SecretAccessKey\":\"%s\",\"SessionToken\":\"T\",\"Expiration\":\"{}\"}}' {} {}\n\n[profile broken]\ncredential_process = sh -c 'echo please log in >&2; exit 2'\n",
            in_secs(3600),
            mock.access_key,
            mock.secret
        ),
    )
    .expect("write");
    let vars = |profile: &str| {
        no_metadata()
            .with("AWS_CONFIG_FILE", config.to_str().expect("utf-8"))
            .with("AWS_PROFILE", profile)
            .with("AWS_ENDPOINT_URL", &mock.endpoint)
    };
    let options = Options::from_vars(Scheme::S3, vars("tool").lookup()).expect("options");
    let held = Locker::new(&mock.url(&fresh_key("process")), options)
        .expect("locker")
        .acquire(Wait::No)
        .expect("signed with the process's credentials");
    held.release().expect("release");
    let options = Options::from_vars(Scheme::S3, vars("broken").lookup()).expect("options");
    let e = Locker::new(&mock.url(&fresh_key("process")), options).expect_err("refused");
    assert!(e.to_string().contains("please log in"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// moto, started by `scripts/s3-server.sh start moto`: instance metadata and STS on the port
/// of its S3.
fn moto() -> Option<(String, String)> {
    let endpoint = std::env::var("SETS3LOCK_MOTO_ENDPOINT").ok();
    let bucket = std::env::var("SETS3LOCK_MOTO_BUCKET").ok();
    match (endpoint, bucket) {
        (Some(e), Some(b)) => Some((e, b)),
        _ => {
            support::raw::missing("moto", "SETS3LOCK_MOTO");
            None
        }
    }
}

/// Locks and releases on moto through a proxy with `vars`; the session tokens the requests
/// carried.
fn lock_on_moto(endpoint: &str, bucket: &str, vars: Vars) -> (sets3lock::SignIn, Vec<String>) {
    let proxy = support::proxy::LossyProxy::start(endpoint);
    let vars = vars
        .with("AWS_ENDPOINT_URL_S3", &proxy.endpoint)
        .with("AWS_REGION", "us-east-1");
    let options = Options::from_vars(Scheme::S3, vars.lookup()).expect("options");
    // No keys given, no source of the caller's: the one the chain found.
    assert!(matches!(
        options.s3.credentials,
        sets3lock::Credentials::Source(_)
    ));
    let source = options.s3.signer().expect("the chain's source");
    let locker = Locker::new(
        &format!("s3://{bucket}/{}", fresh_key("moto-chain")),
        options,
    )
    .expect("locker");
    let held = locker.acquire(Wait::No).expect("acquire");
    assert_eq!(held.release().expect("release"), ReleaseOutcome::Deleted);
    let handed = source.current().expect("credentials");
    let tokens = tokens_seen(&proxy);
    assert!(!tokens.is_empty(), "no request carried a session token");
    assert!(
        tokens.iter().all(|t| Some(t.as_str()) == handed.token()),
        "the requests carried {tokens:?}, the source handed out another token"
    );
    let keys: Vec<String> = proxy
        .requests()
        .iter()
        .filter_map(|m| {
            m.start
                .split("X-Amz-Credential=")
                .nth(1)
                .map(|r| r.split("%2F").next().unwrap_or("").to_owned())
        })
        .collect();
    assert!(
        keys.iter().all(|k| k == handed.key()),
        "keys {keys:?}, handed out {}",
        handed.key()
    );
    (locker.sign_in().expect("sign in"), tokens)
}

#[test]
fn on_moto_an_ec2_role_from_imdsv2_signs() {
    let Some((endpoint, bucket)) = moto() else {
        return;
    };
    let vars = no_metadata()
        .with("AWS_EC2_METADATA_DISABLED", "false")
        .with("AWS_EC2_METADATA_SERVICE_ENDPOINT", &endpoint);
    let (signer, tokens) = lock_on_moto(&endpoint, &bucket, vars);
    assert_eq!(signer.source, "instance metadata");
    assert_eq!(
        tokens[0], "test-session-token",
        "moto's fixed role credentials"
    );
}

#[test]
fn on_moto_a_web_identity_is_exchanged_at_sts() {
    let Some((endpoint, bucket)) = moto() else {
        return;
    };
    let file = std::env::temp_dir().join(format!("sets3lock-irsa-{:016x}", support::rand_u64()));
    std::fs::write(&file, "eyJhbGciOi.the-projected-service-account-token.x").expect("write");
    let vars = no_metadata()
        .with("AWS_WEB_IDENTITY_TOKEN_FILE", file.to_str().expect("utf-8"))
        .with("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/locker")
        .with("AWS_ENDPOINT_URL_STS", &endpoint);
    let (signer, _) = lock_on_moto(&endpoint, &bucket, vars);
    assert!(
        signer
            .source
            .contains("web identity (role arn:aws:iam::123456789012:role/locker)"),
        "{signer:?}"
    );
    assert!(signer.expires.is_some());
    let _ = std::fs::remove_file(&file);
}

#[test]
fn on_moto_an_assume_role_profile_signs_with_the_role() {
    let Some((endpoint, bucket)) = moto() else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("sets3lock-role-{:016x}", support::rand_u64()));
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(
        dir.join("credentials"),
        "[base]\naws_access_key_id = AKIABASE\naws_secret_access_key = base-secret\n",
    )
    .expect("write");
    std::fs::write(dir.join("config"), "[profile deploy]\nrole_arn = arn:aws:iam::123456789012:role/deploy\nsource_profile = base\nregion = us-east-1\n").expect("write");
    let vars = no_metadata()
        .with(
            "AWS_SHARED_CREDENTIALS_FILE",
            dir.join("credentials").to_str().expect("utf-8"),
        )
        .with(
            "AWS_CONFIG_FILE",
            dir.join("config").to_str().expect("utf-8"),
        )
        .with("AWS_PROFILE", "deploy")
        .with("AWS_ENDPOINT_URL_STS", &endpoint);
    let (signer, tokens) = lock_on_moto(&endpoint, &bucket, vars);
    assert!(
        signer.source.contains("profile deploy (assumes role"),
        "{signer:?}"
    );
    assert_ne!(tokens[0], "test-session-token");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_sso_profile_signs_with_the_role_the_portal_hands_out_for_the_cached_login() {
    let mock = support::mock(404);
    let (key, secret) = (mock.access_key.clone(), mock.secret.clone());
    let portal = TokenService::start(move |_, _| {
        let expires = jiff::Timestamp::now().as_millisecond() + 3_600_000;
        let body = serde_json::json!({"roleCredentials": {
            "accessKeyId": key, "secretAccessKey": secret,
            "sessionToken": "sso-session", "expiration": expires,
        }});
        (200, body.to_string())
    });
    let home = std::env::temp_dir().join(format!("sets3lock-sso-{:016x}", support::rand_u64()));
    let cache = home.join(".aws/sso/cache");
    std::fs::create_dir_all(&cache).expect("dir");
    std::fs::write(
        home.join(".aws/config"),
        "[profile dev]\nsso_session = corp\nsso_account_id = 111122223333\nsso_role_name = Locker\n\n[sso-session corp]\nsso_region = eu-west-1\nsso_start_url = https://corp.awsapps.com/start\n",
    )
    .expect("write");
    // `aws sso login` names the cache file by the SHA-1 of the session's name.
    let login = |expires: &str| {
        std::fs::write(
            cache.join("ee0bfd2552fbd840c02cc48b6e823320543c450f.json"),
            serde_json::json!({"accessToken": "sso-access-token", "expiresAt": expires})
                .to_string(),
        )
        .expect("write");
    };
    let vars = no_metadata()
        .with("HOME", home.to_str().expect("utf-8"))
        .with("AWS_PROFILE", "dev")
        .with("AWS_ENDPOINT_URL_SSO", &portal.url)
        .with("AWS_ENDPOINT_URL", &mock.endpoint);
    login(&in_secs(3600));
    let options = Options::from_vars(Scheme::S3, vars.lookup()).expect("options");
    let held = Locker::new(&mock.url(&fresh_key("sso")), options)
        .expect("locker")
        .acquire(Wait::No)
        .expect("signed with the SSO role's credentials");
    held.release().expect("release");
    let asked = portal.asked();
    assert_eq!(asked.len(), 1);
    assert_eq!(
        asked[0].target,
        "/federation/credentials?role_name=Locker&account_id=111122223333"
    );
    assert_eq!(
        asked[0].header("x-amz-sso_bearer_token"),
        Some("sso-access-token")
    );
    // An expired login: the advice is to log in again.
    login(&in_secs(-60));
    let options = Options::from_vars(Scheme::S3, vars.lookup()).expect("options");
    let e = Locker::new(&mock.url(&fresh_key("sso")), options).expect_err("expired");
    assert!(e.to_string().contains("aws sso login --profile dev"), "{e}");
    let _ = std::fs::remove_dir_all(&home);
}

/// The longest gap between the ticks of a task that ticks every 10 ms on the runtime, while
/// `work` runs on the same runtime: what `work` kept the runtime from doing.
async fn longest_stall<T>(work: impl std::future::Future<Output = T>) -> (T, Duration) {
    let longest = Arc::new(std::sync::Mutex::new(Duration::ZERO));
    let seen = longest.clone();
    let ticker = tokio::spawn(async move {
        let mut last = Instant::now();
        // Aborted below; a bound all the same.
        for _ in 0..100_000 {
            tokio::time::sleep(Duration::from_millis(10)).await;
            let now = Instant::now();
            let mut longest = seen.lock().expect("gap");
            *longest = (*longest).max(now - last);
            last = now;
        }
    });
    // Let the ticker start before the work does.
    tokio::time::sleep(Duration::from_millis(30)).await;
    let out = work.await;
    tokio::time::sleep(Duration::from_millis(30)).await;
    ticker.abort();
    let stall = *longest.lock().expect("gap");
    (out, stall)
}

#[test]
fn a_lock_opens_on_a_current_thread_runtime_without_stalling_its_other_tasks() {
    let mock = support::mock(404);
    // A container endpoint that holds its answer for 3 s: the first credentials take that long.
    let (key, secret) = (mock.access_key.clone(), mock.secret.clone());
    let service = TokenService::start(move |_, n| {
        std::thread::sleep(Duration::from_secs(3));
        let body = serde_json::json!({
            "AccessKeyId": key, "SecretAccessKey": secret,
            "Token": format!("session-{n}"), "Expiration": in_secs(3600),
        });
        (200, body.to_string())
    });
    let vars = no_metadata()
        .with("AWS_CONTAINER_CREDENTIALS_FULL_URI", &service.url)
        .with("AWS_ENDPOINT_URL", &mock.endpoint);
    let options = Options::from_vars(Scheme::S3, vars.lookup()).expect("options");
    let url = mock.url(&fresh_key("current-thread"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (took, stall) = runtime.block_on(longest_stall(async {
        let started = Instant::now();
        let locker = sets3lock::Locker::new(&url, options).expect("locker");
        let opened = started.elapsed();
        let held = locker.acquire(Wait::No).await.expect("acquired");
        let acquired = started.elapsed();
        assert_eq!(
            held.release().await.expect("release"),
            ReleaseOutcome::Deleted
        );
        drop(locker);
        (opened, acquired)
    }));
    let (opened, acquired) = took;
    assert!(
        opened < Duration::from_millis(200),
        "opening took {opened:?}"
    );
    // The acquisition waited for the credentials (3 s), on the runtime, without blocking it.
    assert!(
        acquired >= Duration::from_millis(2900),
        "acquired after {acquired:?}"
    );
    assert!(
        stall < Duration::from_millis(200),
        "the runtime's other task stalled {stall:?} while the lock opened and was used"
    );
    assert_eq!(
        service.asked().len(),
        1,
        "one fetch of the first credentials"
    );
}

#[test]
fn an_async_lock_without_credentials_fails_at_its_first_acquisition_in_one_line() {
    let vars = no_metadata().with("AWS_ENDPOINT_URL", "http://127.0.0.1:9");
    let options = Options::from_vars(Scheme::S3, vars.lookup()).expect("options");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let locker = sets3lock::Locker::new("s3://bucket/key", options).expect("opens");
        let e = locker.ready().await.expect_err("no credentials");
        assert!(
            matches!(e, Error::NoCredentials { store: "AWS", .. }),
            "{e:?}"
        );
        let e = locker.acquire(Wait::No).await.expect_err("no credentials");
        let line = e.to_string();
        assert!(
            line.contains("no AWS credentials: tried the environment")
                && line.contains("instance metadata (turned off by AWS_EC2_METADATA_DISABLED)")
                && !line.contains('\n'),
            "{line}"
        );
    });
}

/// Instance metadata on loopback, answering as `answer(request, how many came before it)`;
/// IMDSv2's three requests, the credentials being the mock's.
fn instance_metadata(
    mock: &support::Server,
    answer: impl Fn(&crate::support::token_service::Asked, usize) -> Option<(u16, String)>
        + Send
        + Sync
        + 'static,
) -> TokenService {
    let (key, secret) = (mock.access_key.clone(), mock.secret.clone());
    TokenService::start(move |asked, n| {
        if let Some(special) = answer(asked, n) {
            return special;
        }
        match asked.target.as_str() {
            "/latest/api/token" => (200, "imds-token".to_owned()),
            "/latest/meta-data/iam/security-credentials/" => (200, "locker-role".to_owned()),
            _ => {
                let body = serde_json::json!({
                    "Code": "Success", "AccessKeyId": key, "SecretAccessKey": secret,
                    "Token": format!("imds-session-{n}"), "Expiration": in_secs(3600),
                });
                (200, body.to_string())
            }
        }
    })
}

fn on_imds(service: &TokenService, mock: &support::Server) -> Options {
    let vars = no_metadata()
        .with("AWS_EC2_METADATA_DISABLED", "false")
        .with("AWS_EC2_METADATA_SERVICE_ENDPOINT", &service.url)
        .with("AWS_ENDPOINT_URL", &mock.endpoint);
    Options::from_vars(Scheme::S3, vars.lookup()).expect("options")
}

#[test]
fn instance_metadata_that_holds_its_first_token_answer_3_s_is_asked_again_and_the_lock_opens() {
    let mock = support::mock(404);
    let service = instance_metadata(&mock, |_, n| {
        if n == 0 {
            // The first token request is held past its 1 s limit.
            std::thread::sleep(Duration::from_secs(3));
        }
        None
    });
    let started = Instant::now();
    let locker = Locker::new(&mock.url(&fresh_key("imds-slow")), on_imds(&service, &mock))
        .expect("opens after another try");
    let took = started.elapsed();
    let held = locker.acquire(Wait::No).expect("signed with the role");
    held.release().expect("release");
    let asked: Vec<String> = service.asked().iter().map(|a| a.target.clone()).collect();
    assert_eq!(
        &asked[..2],
        ["/latest/api/token", "/latest/api/token"],
        "{asked:?}"
    );
    assert!(took < Duration::from_secs(5), "the opening took {took:?}");
    assert_eq!(
        locker.sign_in().expect("signer").source,
        "instance metadata"
    );
}

#[test]
fn instance_metadata_answering_5xx_or_429_is_asked_again_and_four_failures_are_named() {
    let mock = support::mock(404);
    // A 503, then a 429, then the credentials.
    let service = instance_metadata(&mock, |asked, n| match n {
        0 if asked.target == "/latest/api/token" => Some((503, "updating".into())),
        1 => Some((429, "slow down".into())),
        _ => None,
    });
    let held = Locker::new(&mock.url(&fresh_key("imds-5xx")), on_imds(&service, &mock))
        .expect("opens")
        .acquire(Wait::No)
        .expect("acquire");
    held.release().expect("release");
    // Always 500: four tries of the first request, then one line that says so.
    let service = instance_metadata(&mock, |_, _| Some((500, "broken".into())));
    let e = Locker::new("s3://bucket/key", on_imds(&service, &mock)).expect_err("no credentials");
    assert!(
        e.to_string()
            .contains("/latest/api/token answered HTTP 500 to each of 4 tries: broken"),
        "{e}"
    );
    assert_eq!(service.asked().len(), 4);
    // A refusal that another try cannot mend (403: IMDSv2 turned off) is not asked again.
    let service = instance_metadata(&mock, |_, _| Some((403, "forbidden".into())));
    let e = Locker::new("s3://bucket/key", on_imds(&service, &mock)).expect_err("refused");
    assert!(e.to_string().contains("answered HTTP 403"), "{e}");
    assert_eq!(service.asked().len(), 1);
}

/// An SSO login cached by `aws sso login` for session `corp`, for a profile `dev`: the home
/// directory, the cache file, and the variables that point at the portal and SSO-OIDC.
struct SsoLogin {
    home: std::path::PathBuf,
    cache: std::path::PathBuf,
}

impl SsoLogin {
    fn new() -> SsoLogin {
        let home = std::env::temp_dir().join(format!("sets3lock-sso-{:016x}", support::rand_u64()));
        let dir = home.join(".aws/sso/cache");
        std::fs::create_dir_all(&dir).expect("dir");
        std::fs::write(
            home.join(".aws/config"),
            "[profile dev]\nsso_session = corp\nsso_account_id = 111122223333\nsso_role_name = Locker\n\n[sso-session corp]\nsso_region = eu-west-1\nsso_start_url = https://corp.awsapps.com/start\n",
        )
        .expect("write");
        SsoLogin {
            cache: dir.join("ee0bfd2552fbd840c02cc48b6e823320543c450f.json"),
            home,
        }
    }

    /// The cache as `aws sso login` writes it: an access token expiring in `secs`, and what a
    /// refresh needs.
    fn cached(&self, secs: i64) {
        let json = serde_json::json!({
            "startUrl": "https://corp.awsapps.com/start", "region": "eu-west-1",
            "accessToken": "old-access-token", "expiresAt": in_secs(secs),
            "clientId": "client-id", "clientSecret": "client-secret",
            "registrationExpiresAt": in_secs(30 * 24 * 3600), "refreshToken": "refresh-1",
        });
        std::fs::write(&self.cache, json.to_string()).expect("write");
    }

    fn read(&self) -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(&self.cache).expect("read")).expect("json")
    }

    fn options(
        &self,
        portal: &TokenService,
        oidc: &TokenService,
        mock: &support::Server,
    ) -> Options {
        let vars = no_metadata()
            .with("HOME", self.home.to_str().expect("utf-8"))
            .with("AWS_PROFILE", "dev")
            .with("AWS_ENDPOINT_URL_SSO", &portal.url)
            .with("AWS_ENDPOINT_URL_SSO_OIDC", &oidc.url)
            .with("AWS_ENDPOINT_URL", &mock.endpoint);
        Options::from_vars(Scheme::S3, vars.lookup()).expect("options")
    }
}

impl Drop for SsoLogin {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.home);
    }
}

/// The SSO portal, handing out the mock's keys to any token it is shown.
fn portal(mock: &support::Server) -> TokenService {
    let (key, secret) = (mock.access_key.clone(), mock.secret.clone());
    TokenService::start(move |_, _| {
        let expires = jiff::Timestamp::now().as_millisecond() + 3_600_000;
        let body = serde_json::json!({"roleCredentials": {
            "accessKeyId": key, "secretAccessKey": secret,
            "sessionToken": "sso-session", "expiration": expires,
        }});
        (200, body.to_string())
    })
}

#[test]
fn an_sso_token_about_to_expire_is_refreshed_at_sso_oidc_and_the_cache_rewritten() {
    let mock = support::mock(404);
    let login = SsoLogin::new();
    // Expiring in two minutes: within the five the SDKs refresh ahead.
    login.cached(120);
    let portal = portal(&mock);
    let oidc = TokenService::start(|_, _| {
        (
            200,
            r#"{"accessToken":"new-access-token","expiresIn":3600,"refreshToken":"refresh-2","tokenType":"Bearer"}"#.into(),
        )
    });
    let held = Locker::new(
        &mock.url(&fresh_key("sso-refresh")),
        login.options(&portal, &oidc, &mock),
    )
    .expect("opens")
    .acquire(Wait::No)
    .expect("signed with the role");
    held.release().expect("release");
    let asked = oidc.asked();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(
        (asked[0].method.as_str(), asked[0].target.as_str()),
        ("POST", "/token")
    );
    let body: serde_json::Value = serde_json::from_str(&asked[0].body).expect("json");
    assert_eq!(
        body,
        serde_json::json!({"clientId": "client-id", "clientSecret": "client-secret",
            "grantType": "refresh_token", "refreshToken": "refresh-1"})
    );
    // The portal was shown the new token, and the cache holds it (the rest kept as it was).
    assert_eq!(
        portal.asked()[0].header("x-amz-sso_bearer_token"),
        Some("new-access-token")
    );
    let cache = login.read();
    assert_eq!(cache["accessToken"], "new-access-token");
    assert_eq!(cache["refreshToken"], "refresh-2");
    assert_eq!(cache["clientId"], "client-id");
    assert_eq!(cache["startUrl"], "https://corp.awsapps.com/start");
    let expires = cache["expiresAt"]
        .as_str()
        .and_then(|t| t.parse::<jiff::Timestamp>().ok());
    let left = expires.expect("a time") - jiff::Timestamp::now();
    assert!(left.get_seconds() > 3500, "{left:?}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&login.cache)
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    }
    // No temporary file left beside it.
    let left_behind: Vec<_> = std::fs::read_dir(login.cache.parent().expect("dir"))
        .expect("list")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left_behind.len(), 1, "{left_behind:?}");
}

#[test]
fn a_failed_sso_refresh_keeps_a_token_still_valid_and_names_itself_once_the_token_expired() {
    let mock = support::mock(404);
    let login = SsoLogin::new();
    let portal = portal(&mock);
    let oidc = TokenService::start(|_, _| {
        (
            400,
            r#"{"error":"invalid_grant","error_description":"the session ended"}"#.into(),
        )
    });
    // Still valid two minutes: used as it is.
    login.cached(120);
    let held = Locker::new(
        &mock.url(&fresh_key("sso-old")),
        login.options(&portal, &oidc, &mock),
    )
    .expect("opens with the old token")
    .acquire(Wait::No)
    .expect("acquire");
    held.release().expect("release");
    assert_eq!(
        portal.asked()[0].header("x-amz-sso_bearer_token"),
        Some("old-access-token")
    );
    assert_eq!(login.read()["accessToken"], "old-access-token");
    // Expired: the error says the refresh failed, and to log in again.
    login.cached(-60);
    let e = Locker::new(
        &mock.url(&fresh_key("sso-old")),
        login.options(&portal, &oidc, &mock),
    )
    .expect_err("expired");
    let line = e.to_string();
    assert!(
        line.contains("refreshing it failed (SSO-OIDC answered HTTP 400")
            && line.contains("aws sso login --profile dev"),
        "{line}"
    );
}

#[test]
fn a_ca_bundle_set_in_code_after_the_settings_were_made_reaches_the_token_services() {
    // A container endpoint over https: its client reads the CA bundle when it is made.
    let vars = no_metadata()
        .with(
            "AWS_CONTAINER_CREDENTIALS_FULL_URI",
            "https://127.0.0.1:9/creds",
        )
        .with("AWS_ENDPOINT_URL", "http://127.0.0.1:9");
    let mut options = Options::from_vars(Scheme::S3, vars.lookup()).expect("options");
    assert!(options.ca_bundle.is_none());
    let bundle = std::env::temp_dir().join(format!(
        "sets3lock-no-such-bundle-{:016x}.pem",
        support::rand_u64()
    ));
    options.ca_bundle = Some(bundle.clone());
    let e = Locker::new("s3://bucket/key", options).expect_err("the bundle is missing");
    assert!(
        e.to_string().contains(&bundle.display().to_string()),
        "the token service's client did not use the bundle set in code: {e}"
    );
}

#[test]
fn instance_metadata_failing_after_a_first_answer_keeps_the_hold_on_its_last_credentials() {
    let mock = support::mock(404);
    let (key, secret) = (mock.access_key.clone(), mock.secret.clone());
    let down = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let broken = down.clone();
    // Credentials living 30 s (asked for again at 15 s), then instance metadata down (503).
    let service = TokenService::start(move |asked, n| {
        if broken.load(Ordering::SeqCst) {
            return (503, "updating".into());
        }
        match asked.target.as_str() {
            "/latest/api/token" => (200, "imds-token".into()),
            "/latest/meta-data/iam/security-credentials/" => (200, "locker-role".into()),
            _ => (
                200,
                serde_json::json!({
                    "Code": "Success", "AccessKeyId": key, "SecretAccessKey": secret,
                    "Token": format!("imds-session-{n}"), "Expiration": in_secs(30),
                })
                .to_string(),
            ),
        }
    });
    let mut options = on_imds(&service, &mock);
    options.lock.lease = Duration::from_secs(3);
    let locker = Locker::new(&mock.url(&fresh_key("imds-steady")), options).expect("opens");
    let held = locker.acquire(Wait::No).expect("acquire");
    down.store(true, Ordering::SeqCst);
    let started = Instant::now();
    // Past the credentials' own expiry (30 s, unusable 5 s before): the hold lives on.
    while started.elapsed() < Duration::from_secs(32) {
        assert!(
            held.is_held(),
            "the hold ended {:?} after instance metadata went down: {:?}; signing in: {:?}",
            started.elapsed(),
            held.loss_watch().loss(),
            locker.sign_in()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    let signer = locker.sign_in().expect("signer");
    let problem = signer.problem.clone().unwrap_or_default();
    assert!(
        problem.contains("instance metadata failed")
            && problem.contains("the last credentials it gave are used until"),
        "{signer:?}"
    );
    assert!(
        signer
            .expires
            .is_some_and(|e| e > std::time::SystemTime::now() + Duration::from_secs(300)),
        "{signer:?}"
    );
    assert_eq!(held.release().expect("release"), ReleaseOutcome::Deleted);
}
