//! `credential_process`: a profile's command that prints credentials as JSON (version 1).

use crate::signin::fetch::{rfc3339, run};
use crate::signin::refresh::Fetched;
use crate::AwsCredentials;
use std::time::Duration;

/// How long the command may take (it may prompt a hardware key or a browser).
const LIMIT: Duration = Duration::from_secs(60);

/// Runs `command` and reads its credentials.
pub(crate) fn credentials(command: &str) -> Result<Fetched<AwsCredentials>, String> {
    read(&run(command, LIMIT)?)
}

fn read(stdout: &[u8]) -> Result<Fetched<AwsCredentials>, String> {
    let json: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(stdout).map_err(|_| {
            "the credential_process printed something that is not a JSON object".to_owned()
        })?;
    // Keys in any case, as the AWS SDKs read them.
    let value = |name: &str| {
        json.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    };
    if value("Version").and_then(|v| v.as_u64()) != Some(1) {
        return Err("the credential_process printed no \"Version\": 1".into());
    }
    let field = |name: &str| value(name).and_then(|v| v.as_str()).map(str::to_owned);
    let missing = |name: &str| format!("the credential_process printed no {name}");
    let key = field("AccessKeyId").ok_or_else(|| missing("AccessKeyId"))?;
    let secret = field("SecretAccessKey").ok_or_else(|| missing("SecretAccessKey"))?;
    let value = match field("SessionToken") {
        Some(token) => AwsCredentials::new_with_token(key, secret, token),
        None => AwsCredentials::new(key, secret),
    };
    let expires = match field("Expiration") {
        Some(text) => Some(
            rfc3339(&text)
                .ok_or("the credential_process printed an Expiration that is not a time")?,
        ),
        None => None,
    };
    Ok(Fetched {
        value,
        expires,
        note: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_s_credentials_are_read_and_a_wrong_version_is_named() {
        let f = read(br#"{"Version":1,"AccessKeyId":"AK","SecretAccessKey":"S","SessionToken":"T","Expiration":"2026-12-05T02:00:00Z"}"#).expect("read");
        assert_eq!((f.value.key(), f.value.token()), ("AK", Some("T")));
        assert!(f.expires.is_some());
        let f =
            read(br#"{"Version":1,"AccessKeyId":"AK","SecretAccessKey":"S"}"#).expect("long-term");
        assert_eq!((f.value.token(), f.expires), (None, None));
        assert!(read(br#"{"Version":2}"#)
            .expect_err("v2")
            .contains("Version"));
        assert!(read(b"AK S")
            .expect_err("text")
            .contains("not a JSON object"));
        // Keys in any case.
        let f =
            read(br#"{"version":1,"accesskeyid":"ak","SECRETACCESSKEY":"s","sessiontoken":"t"}"#)
                .expect("any case");
        assert_eq!((f.value.key(), f.value.token()), ("ak", Some("t")));
    }

    #[test]
    fn the_command_runs_through_the_shell() {
        let f = credentials(
            r#"printf '{"Version":1,"AccessKeyId":"%s","SecretAccessKey":"S"}' AKPROC"#,
        )
        .expect("ran");
        assert_eq!(f.value.key(), "AKPROC");
    }
}
