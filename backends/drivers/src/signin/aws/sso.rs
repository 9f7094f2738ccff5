//! IAM Identity Center (SSO): the access token `aws sso login` cached, exchanged at the SSO
//! portal for the role's credentials. The token is not refreshed here: when it has expired,
//! the error says to log in again.

use crate::signin::fetch::{rfc3339, Http};
use crate::signin::refresh::Fetched;
use crate::AwsCredentials;
use http::Method;
use sha1::Digest as _;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};
use url::Url;

/// One SSO role.
#[derive(Clone, Debug)]
pub(crate) struct Sso {
    /// The cache file of `aws sso login`: `~/.aws/sso/cache/<sha1 of the session name, or of
    /// the start URL for a legacy profile>.json`.
    pub(crate) cache_file: PathBuf,
    /// The portal: `https://portal.sso.<sso_region>.amazonaws.com` (or `AWS_ENDPOINT_URL_SSO`).
    pub(crate) portal: Url,
    pub(crate) account_id: String,
    pub(crate) role_name: String,
    /// The profile, for the advice to log in again.
    pub(crate) profile: String,
}

/// The name of the cache file for a session name or start URL.
pub(crate) fn cache_name(session_or_start_url: &str) -> String {
    let digest = sha1::Sha1::digest(session_or_start_url.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("{hex}.json")
}

/// The role's credentials for the cached token.
pub(crate) fn credentials(http: &Http, sso: &Sso) -> Result<Fetched<AwsCredentials>, String> {
    let login = format!("run `aws sso login --profile {}`", sso.profile);
    let text = std::fs::read_to_string(&sso.cache_file).map_err(|_| {
        format!(
            "no SSO login is cached ({} cannot be read): {login}",
            sso.cache_file.display()
        )
    })?;
    let json: serde_json::Value = serde_json::from_str(&text)
        .map_err(|_| format!("the SSO cache file is not JSON: {login}"))?;
    let token = json
        .get("accessToken")
        .and_then(|v| v.as_str())
        .ok_or_else(|| format!("the SSO cache file has no accessToken: {login}"))?;
    if let Some(expires) = json
        .get("expiresAt")
        .and_then(|v| v.as_str())
        .and_then(rfc3339)
    {
        if expires <= SystemTime::now() {
            return Err(format!(
                "the SSO login expired at {}: {login}",
                crate::signin::refresh::shown(expires)
            ));
        }
    }
    let mut url = sso
        .portal
        .join("/federation/credentials")
        .map_err(|e| format!("the SSO portal {}: {e}", sso.portal))?;
    url.query_pairs_mut()
        .append_pair("role_name", &sso.role_name)
        .append_pair("account_id", &sso.account_id);
    let answer = http.send(
        Method::GET,
        &url,
        &[("x-amz-sso_bearer_token", token)],
        None,
    )?;
    if answer.status == 401 || answer.status == 403 {
        return Err(format!(
            "the SSO portal refused the cached login (HTTP {}): {login}",
            answer.status
        ));
    }
    if answer.status != 200 {
        return Err(format!(
            "the SSO portal answered HTTP {}: {}",
            answer.status,
            answer.quoted()
        ));
    }
    let json = answer.json().map_err(|e| format!("the SSO portal: {e}"))?;
    let role = json
        .get("roleCredentials")
        .ok_or("the SSO portal answered without roleCredentials")?;
    let field = |name: &str| {
        role.get(name)
            .and_then(|v| v.as_str())
            .map(str::to_owned)
            .ok_or_else(|| format!("the SSO portal answered without {name}"))
    };
    let expires = role
        .get("expiration")
        .and_then(|v| v.as_u64())
        .map(|ms| SystemTime::UNIX_EPOCH + Duration::from_millis(ms));
    Ok(Fetched {
        value: AwsCredentials::new_with_token(
            field("accessKeyId")?,
            field("secretAccessKey")?,
            field("sessionToken")?,
        ),
        expires,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_file_is_named_by_the_sha1_of_the_session() {
        // The AWS CLI names the file by the hex SHA-1 of the name: FIPS 180's vector for "abc".
        assert_eq!(
            cache_name("abc"),
            "a9993e364706816aba3e25717850c26c9cd0d89d.json"
        );
    }
}
