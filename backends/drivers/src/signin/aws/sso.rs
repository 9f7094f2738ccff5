//! IAM Identity Center (SSO): the access token `aws sso login` cached, exchanged at the SSO
//! portal for the role's credentials.
//!
//! A token of an `[sso-session]` lives about an hour; the session, days. Within five minutes
//! of its expiry the token is refreshed at SSO-OIDC (`CreateToken` with the cached refresh
//! token), as the AWS CLI does, and the cache file is rewritten (atomically, readable by its
//! owner only) so that the CLI and other tools see the new token. A refresh that fails leaves
//! the old token in use while it lasts. A legacy profile (`sso_start_url` in the profile
//! itself) has no refresh token: when its login expires, the error says to log in again.

use crate::signin::fetch::{rfc3339, Clients};
use crate::signin::refresh::Fetched;
use crate::AwsCredentials;
use http::Method;
use sha1::Digest as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};
use url::Url;

/// How long a service may take for one request.
const LIMIT: Duration = Duration::from_secs(10);
/// A token this close to its expiry is refreshed first (the SDKs' margin).
const REFRESH_AHEAD: Duration = Duration::from_secs(300);

/// One SSO role.
#[derive(Clone, Debug)]
pub(crate) struct Sso {
    /// The cache file of `aws sso login`: `~/.aws/sso/cache/<sha1 of the session name, or of
    /// the start URL for a legacy profile>.json`.
    pub(crate) cache_file: PathBuf,
    /// The portal: `https://portal.sso.<sso_region>.<partition's domain>` (or
    /// `AWS_ENDPOINT_URL_SSO`).
    pub(crate) portal: Url,
    pub(crate) account_id: String,
    pub(crate) role_name: String,
    /// The profile, for the advice to log in again.
    pub(crate) profile: String,
    /// The `[sso-session]` the login belongs to; `None` for a legacy profile.
    pub(crate) session: Option<Session>,
}

/// An `[sso-session]`: where its token is refreshed.
#[derive(Clone, Debug)]
pub(crate) struct Session {
    /// SSO-OIDC: `https://oidc.<sso_region>.<partition's domain>` (or
    /// `AWS_ENDPOINT_URL_SSO_OIDC`).
    pub(crate) oidc: Url,
}

/// The name of the cache file for a session name or start URL.
pub(crate) fn cache_name(session_or_start_url: &str) -> String {
    let digest = sha1::Sha1::digest(session_or_start_url.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("{hex}.json")
}

/// The cached login: the file's JSON, whose other fields are written back as they were.
struct Cached {
    json: serde_json::Map<String, serde_json::Value>,
}

impl Cached {
    fn read(path: &Path, login: &str) -> Result<Cached, String> {
        let text = std::fs::read_to_string(path).map_err(|_| {
            format!(
                "no SSO login is cached ({} cannot be read): {login}",
                path.display()
            )
        })?;
        match serde_json::from_str(&text) {
            Ok(serde_json::Value::Object(json)) => Ok(Cached { json }),
            _ => Err(format!("the SSO cache file is not a JSON object: {login}")),
        }
    }

    /// A field, its name in any case (as the SDKs read it).
    fn get(&self, name: &str) -> Option<&str> {
        self.json
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .and_then(|(_, v)| v.as_str())
    }

    fn time(&self, name: &str) -> Option<SystemTime> {
        self.get(name).and_then(rfc3339)
    }

    /// Sets a field, under the name the file already gives it.
    fn set(&mut self, name: &str, value: String) {
        let key = self
            .json
            .keys()
            .find(|k| k.eq_ignore_ascii_case(name))
            .cloned()
            .unwrap_or_else(|| name.to_owned());
        self.json.insert(key, serde_json::Value::String(value));
    }
}

/// The role's credentials for the cached token (refreshed first when it is about to expire).
pub(crate) fn credentials(
    clients: &mut Clients,
    sso: &Sso,
) -> Result<Fetched<AwsCredentials>, String> {
    let login = format!("run `aws sso login --profile {}`", sso.profile);
    let mut cached = Cached::read(&sso.cache_file, &login)?;
    let now = SystemTime::now();
    let expires = cached.time("expiresAt");
    let mut refresh_failed = None;
    if let Some(session) = &sso.session {
        if expires.is_none_or(|e| e <= now + REFRESH_AHEAD) {
            match refresh(clients, session, &mut cached, &sso.cache_file, now) {
                Ok(()) => {}
                Err(e) => refresh_failed = Some(e),
            }
        }
    }
    let expires = cached.time("expiresAt");
    if let Some(expires) = expires.filter(|e| *e <= now) {
        let why = refresh_failed
            .map(|e| format!(" and refreshing it failed ({e})"))
            .unwrap_or_default();
        return Err(format!(
            "the SSO login expired at {}{why}: {login}",
            crate::signin::refresh::shown(expires)
        ));
    }
    let token = cached
        .get("accessToken")
        .ok_or_else(|| format!("the SSO cache file has no accessToken: {login}"))?;
    let mut url = sso
        .portal
        .join("/federation/credentials")
        .map_err(|e| format!("the SSO portal {}: {e}", sso.portal))?;
    url.query_pairs_mut()
        .append_pair("role_name", &sso.role_name)
        .append_pair("account_id", &sso.account_id);
    let answer = clients.for_url(&sso.portal, LIMIT)?.send(
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
        note: None,
    })
}

/// Refreshes the cached token at SSO-OIDC, and writes the cache file back.
fn refresh(
    clients: &mut Clients,
    session: &Session,
    cached: &mut Cached,
    file: &Path,
    now: SystemTime,
) -> Result<(), String> {
    let (Some(client_id), Some(client_secret), Some(refresh_token)) = (
        cached.get("clientId"),
        cached.get("clientSecret"),
        cached.get("refreshToken"),
    ) else {
        return Err("the cached login has no refresh token".into());
    };
    if cached
        .time("registrationExpiresAt")
        .is_none_or(|at| at <= now)
    {
        return Err("the cached login's client registration has expired".into());
    }
    let url = session
        .oidc
        .join("/token")
        .map_err(|e| format!("SSO-OIDC {}: {e}", session.oidc))?;
    let body = serde_json::json!({
        "clientId": client_id,
        "clientSecret": client_secret,
        "grantType": "refresh_token",
        "refreshToken": refresh_token,
    });
    let answer = clients.for_url(&session.oidc, LIMIT)?.send(
        Method::POST,
        &url,
        &[],
        Some(("application/json", body.to_string())),
    )?;
    if answer.status != 200 {
        return Err(format!(
            "SSO-OIDC answered HTTP {}: {}",
            answer.status,
            answer.quoted()
        ));
    }
    let json = answer.json().map_err(|e| format!("SSO-OIDC: {e}"))?;
    let token = json
        .get("accessToken")
        .and_then(|v| v.as_str())
        .filter(|t| !t.is_empty())
        .ok_or("SSO-OIDC answered without an accessToken")?;
    let life = json
        .get("expiresIn")
        .and_then(|v| v.as_u64())
        .ok_or("SSO-OIDC answered without expiresIn")?;
    let expires = now
        .checked_add(Duration::from_secs(life))
        .ok_or("SSO-OIDC answered a lifetime that is not a time")?;
    cached.set("accessToken", token.to_owned());
    cached.set("expiresAt", crate::signin::refresh::shown(expires));
    if let Some(rotated) = json.get("refreshToken").and_then(|v| v.as_str()) {
        cached.set("refreshToken", rotated.to_owned());
    }
    write_atomically(
        file,
        &serde_json::Value::Object(cached.json.clone()).to_string(),
    )
    .map_err(|e| {
        format!(
            "the refreshed token could not be cached in {}: {e}",
            file.display()
        )
    })
}

/// Writes `text` to `path` as one step: a file beside it, readable by its owner only, renamed
/// over it (a reader sees the old file or the new one, never half of one).
fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temporary = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let written = options.open(&temporary).and_then(|mut f| {
        f.write_all(text.as_bytes())?;
        f.sync_all()
    });
    match written.and_then(|()| std::fs::rename(&temporary, path)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&temporary);
            Err(e)
        }
    }
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
