//! Every fixture of `fixtures/aws/` resolved by aws-config (its default chain, as an AWS SDK
//! program resolves it) and by sets3lock (`S3Settings::from_vars_and_profile`, as the command
//! and the library resolve it), offline: the token services are `support/stub.rs` on
//! loopback, instance metadata is off. Both must give the same outcome: the same access key
//! (which spells the whole chain, see the stub) and region, or both an error. A fixture whose
//! outcomes differ on purpose says so in its `differs` file, with the reason, and the test
//! holds each side to what that file says.
//!
//! A fixture is a directory of:
//! - `config`, `credentials`: the shared files (`${FIXTURE}`, `${HOME}` and `${STUB}` are
//!   replaced by the fixture's directory, the home directory made for the run, the stub);
//! - `env`: `NAME=VALUE` lines, the same replacements;
//! - `sso-cache/NAME.json`: files for `~/.aws/sso/cache/` (`${IN_2_MIN}`, `${IN_1_H}`,
//!   `${IN_30_D}`, `${AGO_1_MIN}` are times from now);
//! - `differs`: `aws: …` and `ours: …` lines (an outcome each, as `outcome()` writes it), and
//!   the reason on the other lines.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use support::stub::Stub;

/// What a resolver gave: the key and region, or an error.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Outcome {
    Signed { key: String, region: String },
    Failed(String),
}

/// An outcome as a `differs` file writes it: `ok KEY REGION`, or `error`.
fn outcome(o: &Outcome) -> String {
    match o {
        Outcome::Signed { key, region } => format!("ok {key} {region}"),
        Outcome::Failed(_) => "error".into(),
    }
}

/// Where a run's files are: its own home directory (the SSO cache is rewritten by a refresh).
struct Run {
    home: PathBuf,
    vars: BTreeMap<String, String>,
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.home);
    }
}

fn at(offset: i64) -> String {
    (jiff::Timestamp::now() + jiff::SignedDuration::from_secs(offset))
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// The fixture at `dir`, laid out in a fresh home for one resolver.
fn prepare(dir: &Path, stub: &Stub, who: &str) -> Run {
    let mut seed = [0u8; 8];
    getrandom(&mut seed);
    let home = std::env::temp_dir().join(format!(
        "sets3lock-differential-{}-{who}-{:016x}",
        dir.file_name().and_then(|n| n.to_str()).unwrap_or("x"),
        u64::from_le_bytes(seed)
    ));
    let cache = home.join(".aws/sso/cache");
    std::fs::create_dir_all(&cache).expect("home");
    let replace = |text: &str| {
        text.replace("${FIXTURE}", &dir.display().to_string())
            .replace("${HOME}", &home.display().to_string())
            .replace("${STUB}", &stub.url)
            .replace("${IN_2_MIN}", &at(120))
            .replace("${IN_1_H}", &at(3600))
            .replace("${IN_30_D}", &at(30 * 24 * 3600))
            .replace("${AGO_1_MIN}", &at(-60))
    };
    for name in ["config", "credentials"] {
        if let Ok(text) = std::fs::read_to_string(dir.join(name)) {
            std::fs::write(home.join(".aws").join(name), replace(&text)).expect("write");
        }
    }
    if let Ok(entries) = std::fs::read_dir(dir.join("sso-cache")) {
        for entry in entries.flatten() {
            let text = std::fs::read_to_string(entry.path()).expect("cache");
            std::fs::write(cache.join(entry.file_name()), replace(&text)).expect("write");
        }
    }
    let mut vars = BTreeMap::from([
        ("HOME".to_owned(), home.display().to_string()),
        ("AWS_EC2_METADATA_DISABLED".to_owned(), "true".to_owned()),
        ("AWS_ENDPOINT_URL_STS".to_owned(), stub.url.clone()),
        ("AWS_ENDPOINT_URL_SSO".to_owned(), stub.url.clone()),
        ("AWS_ENDPOINT_URL_SSO_OIDC".to_owned(), stub.url.clone()),
    ]);
    if let Ok(text) = std::fs::read_to_string(dir.join("env")) {
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (k, v) = line.split_once('=').expect("NAME=VALUE");
            match v {
                // `NAME=` with nothing after it: the fixture takes NAME away.
                "" => vars.remove(k),
                v => vars.insert(k.to_owned(), replace(v)),
            };
        }
    }
    Run { home, vars }
}

fn getrandom(bytes: &mut [u8]) {
    // The time and a counter: enough to keep two runs' directories apart.
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let n = jiff::Timestamp::now().as_nanosecond() as u64 ^ COUNT.fetch_add(1, Ordering::SeqCst);
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = (n >> (8 * (i % 8))) as u8;
    }
}

/// aws-config's default chain and region, with only `vars` for an environment.
fn aws_config(run: &Run) -> Outcome {
    use aws_credential_types::provider::ProvideCredentials as _;
    let env: Vec<(&str, &str)> = run
        .vars
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let loaded = tokio::time::timeout(
            std::time::Duration::from_secs(20),
            aws_config::defaults(aws_config::BehaviorVersion::latest())
                .env(aws_types::os_shim_internal::Env::from_slice(&env))
                .load(),
        )
        .await;
        let Ok(config) = loaded else {
            return Outcome::Failed("aws-config did not load in 20 s".into());
        };
        let region = config
            .region()
            .map(|r| r.to_string())
            .unwrap_or_else(|| "(none)".into());
        let Some(provider) = config.credentials_provider() else {
            return Outcome::Failed("no credentials provider".into());
        };
        match tokio::time::timeout(
            std::time::Duration::from_secs(20),
            provider.provide_credentials(),
        )
        .await
        {
            Ok(Ok(c)) => Outcome::Signed {
                key: c.access_key_id().to_owned(),
                region,
            },
            Ok(Err(e)) => Outcome::Failed(one_line(&e)),
            Err(_) => Outcome::Failed("no credentials in 20 s".into()),
        }
    })
}

/// An error with its causes, on one line.
fn one_line(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// sets3lock's settings and credentials, with only `vars` for an environment.
fn sets3lock(run: &Run) -> Outcome {
    let var = |name: &str| run.vars.get(name).cloned();
    let settings = match sets3lock::S3Settings::from_vars_and_profile(None, var) {
        Ok(s) => s,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    let Some(signer) = settings.signer() else {
        return Outcome::Failed("no credentials".into());
    };
    if let Err(e) = signer.ready() {
        return Outcome::Failed(e.to_string());
    }
    match signer.current() {
        Ok(c) => Outcome::Signed {
            key: c.key().to_owned(),
            region: settings.region.clone(),
        },
        Err(e) => Outcome::Failed(e.to_string()),
    }
}

/// A `differs` file: what each side must give, and why.
struct Differs {
    aws: String,
    ours: String,
}

fn differs(dir: &Path) -> Option<Differs> {
    let text = std::fs::read_to_string(dir.join("differs")).ok()?;
    let line = |prefix: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .map(|l| l.trim().to_owned())
            .unwrap_or_else(|| panic!("{}: a differs file needs an `{prefix}` line", dir.display()))
    };
    let reasons = text
        .lines()
        .filter(|l| !l.starts_with("aws:") && !l.starts_with("ours:") && !l.trim().is_empty())
        .count();
    assert!(reasons > 0, "{}: a differs file says why", dir.display());
    Some(Differs {
        aws: line("aws:"),
        ours: line("ours:"),
    })
}

/// The outcome as it is compared: aws-config leaves the region unset where no variable or
/// profile names one; sets3lock signs S3 for us-east-1 then (S3's default). That is the one
/// difference every fixture allows.
fn compared(o: &Outcome) -> Outcome {
    match o {
        Outcome::Signed { key, region } if region == "(none)" => Outcome::Signed {
            key: key.clone(),
            region: "us-east-1".into(),
        },
        // Errors are compared as errors: the SDK's words are not ours.
        Outcome::Failed(_) => Outcome::Failed(String::new()),
        other => other.clone(),
    }
}

#[test]
fn every_fixture_resolves_alike_in_aws_config_and_sets3lock() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/aws");
    let mut fixtures: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("fixtures")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    fixtures.sort();
    assert!(fixtures.len() >= 40, "{} fixtures", fixtures.len());
    let stub = Stub::start();
    let mut failures = Vec::new();
    let mut report = Vec::new();
    for dir in &fixtures {
        let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("?");
        let aws = aws_config(&prepare(dir, &stub, "aws"));
        let ours = sets3lock(&prepare(dir, &stub, "ours"));
        let line = format!(
            "{name}: aws-config {} | sets3lock {}",
            describe(&aws),
            describe(&ours)
        );
        report.push(line.clone());
        match differs(dir) {
            None if compared(&aws) == compared(&ours) => {}
            None => failures.push(format!("{line}\n    (no differs file explains it)")),
            Some(d) => {
                if outcome(&compared(&aws)) != d.aws || outcome(&compared(&ours)) != d.ours {
                    failures.push(format!(
                        "{line}\n    (its differs file says aws: {} / ours: {})",
                        d.aws, d.ours
                    ));
                }
            }
        }
    }
    println!("{}", report.join("\n"));
    assert!(
        failures.is_empty(),
        "{} of {} fixtures resolve differently:\n{}",
        failures.len(),
        fixtures.len(),
        failures.join("\n")
    );
}

fn describe(o: &Outcome) -> String {
    match o {
        Outcome::Signed { key, region } => format!("{key} in {region}"),
        Outcome::Failed(e) => format!("error ({})", e.chars().take(160).collect::<String>()),
    }
}
