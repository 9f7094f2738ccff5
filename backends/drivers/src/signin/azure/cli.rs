//! The Azure CLI's signed-in account: `az account get-access-token --output json --resource
//! https://storage.azure.com`, whose JSON gives `accessToken` and its expiry, as `expires_on`
//! (Unix seconds, CLI 2.54 and later) or `expiresOn` (local time, `YYYY-MM-DD HH:MM:SS.ffffff`).

use super::RESOURCE;
use crate::signin::bearer::seconds;
use crate::signin::fetch::run_from;
use crate::signin::refresh::Fetched;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

/// How long the CLI may take (it is a Python program, and may refresh its own token).
const LIMIT: Duration = Duration::from_secs(10);

/// The CLI: the program to run, `az` unless `SETS3LOCK_AZURE_CLI` names another.
#[derive(Clone, Debug)]
pub(crate) struct Cli {
    pub(crate) program: String,
}

impl Cli {
    /// What a user calls it.
    pub(crate) fn name(&self) -> String {
        if self.program == "az" {
            "the Azure CLI".into()
        } else {
            format!("the Azure CLI ({})", self.program)
        }
    }

    /// A token for Azure Storage from the CLI's signed-in account.
    pub(crate) fn token(&self) -> Result<Fetched<String>, String> {
        let line = format!(
            "{} account get-access-token --output json --resource {RESOURCE}",
            self.program
        );
        let out = run_from(&safe_directory(), &line, LIMIT).map_err(|e| {
            if e.contains("127") && e.contains("not found") {
                format!("`{}` is not installed", self.program)
            } else {
                e
            }
        })?;
        parse(&out)
    }
}

/// Where the CLI is run from, as azure_identity runs it: a system directory, so that an `az`
/// in the directory the lock was opened from (which Windows' `cmd` would run before the one on
/// `PATH`) is never the one that runs.
fn safe_directory() -> PathBuf {
    if cfg!(windows) {
        std::env::var_os("SYSTEMROOT")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(r"C:\Windows"))
    } else {
        PathBuf::from("/bin")
    }
}

/// The token and its expiry in the CLI's output.
pub(crate) fn parse(out: &[u8]) -> Result<Fetched<String>, String> {
    let json: serde_json::Value = serde_json::from_slice(out)
        .map_err(|_| "`az account get-access-token` did not print JSON".to_owned())?;
    let token = json
        .get("accessToken")
        .and_then(|v| v.as_str())
        .filter(|t| !t.is_empty())
        .ok_or("`az account get-access-token` printed no accessToken")?;
    let expires = match json.get("expires_on").and_then(seconds) {
        Some(at) => crate::signin::fetch::unix_seconds(at, "`az account get-access-token`")?,
        None => {
            let local = json
                .get("expiresOn")
                .and_then(|v| v.as_str())
                .ok_or("`az account get-access-token` printed no expires_on or expiresOn")?;
            local_expiry(local, SystemTime::now())?
        }
    };
    Ok(Fetched {
        value: token.to_owned(),
        expires: Some(expires),
        note: None,
    })
}

/// An `expiresOn` of an older CLI, in this machine's time zone. If the zone cannot be known
/// (or the result is implausible: a CLI token lives about an hour), the token is taken to
/// expire in five minutes, so that it is fetched again soon rather than used too long.
fn local_expiry(text: &str, now: SystemTime) -> Result<SystemTime, String> {
    let civil: jiff::civil::DateTime = text.trim().parse().map_err(|_| {
        format!("`az account get-access-token` printed an expiresOn {text:?} that is not a time")
    })?;
    let zone = jiff::tz::TimeZone::try_system()
        .ok()
        .or_else(|| {
            let bytes = std::fs::read("/etc/localtime").ok()?;
            jiff::tz::TimeZone::tzif("localtime", &bytes).ok()
        })
        .unwrap_or(jiff::tz::TimeZone::UTC);
    let at = zone
        .to_ambiguous_timestamp(civil)
        .compatible()
        .ok()
        .map(SystemTime::from);
    let plausible = |t: &SystemTime| *t > now && *t < now + Duration::from_secs(24 * 3600);
    Ok(at
        .filter(plausible)
        .unwrap_or(now + Duration::from_secs(300)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cli_s_epoch_expiry_is_preferred_and_its_local_time_read_otherwise() {
        let f = parse(
            br#"{"accessToken":"eyJ.cli","expiresOn":"2030-01-01 00:00:00.000000","expires_on":1900000000,"tokenType":"Bearer"}"#,
        )
        .expect("parsed");
        assert_eq!(f.value, "eyJ.cli");
        assert_eq!(
            f.expires,
            Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1_900_000_000))
        );
        let f = parse(br#"{"accessToken":"t","expires_on":"1900000000"}"#).expect("string");
        assert_eq!(
            f.expires,
            Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1_900_000_000))
        );
        // An older CLI: local time, an hour ahead (in whatever zone this machine is in).
        let now = SystemTime::now();
        let zone = jiff::tz::TimeZone::try_system().unwrap_or(jiff::tz::TimeZone::UTC);
        let in_an_hour = jiff::Timestamp::try_from(now + Duration::from_secs(3600))
            .expect("time")
            .to_zoned(zone)
            .datetime()
            .strftime("%Y-%m-%d %H:%M:%S.%6f")
            .to_string();
        let out = format!(r#"{{"accessToken":"t","expiresOn":"{in_an_hour}"}}"#);
        let f = parse(out.as_bytes()).expect("local");
        let left = f
            .expires
            .expect("expires")
            .duration_since(now)
            .expect("later");
        assert!(
            left > Duration::from_secs(290) && left <= Duration::from_secs(3601),
            "{left:?}"
        );
        assert!(parse(br#"{"accessToken":"t"}"#).is_err());
        let e = parse(b"ERROR: not json").expect_err("refused");
        assert!(!e.contains("ERROR"), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn a_fake_cli_is_run_with_the_storage_resource() {
        let dir = std::env::temp_dir().join(format!("sets3lock-az-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let args = dir.join("args");
        let script = dir.join("az");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\necho \"$@\" > '{}'\npwd >> '{0}'\necho '{{\"accessToken\":\"from-fake-az\",\"expires_on\":1900000000}}'\n",
                args.display()
            ),
        )
        .expect("script");
        let cli = Cli {
            program: format!("sh {}", script.display()),
        };
        assert_eq!(cli.token().expect("token").value, "from-fake-az");
        let said = std::fs::read_to_string(&args).expect("args");
        // Run from /bin, whatever directory the lock was opened from: an `az` there is never
        // the one that runs.
        let bin = std::fs::canonicalize("/bin").expect("/bin");
        assert_eq!(
            said.trim(),
            format!(
                "account get-access-token --output json --resource https://storage.azure.com\n{}",
                bin.display()
            )
        );
        let missing = Cli {
            program: "sets3lock-no-such-az".into(),
        };
        let e = missing.token().expect_err("missing");
        assert!(e.contains("not installed"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
