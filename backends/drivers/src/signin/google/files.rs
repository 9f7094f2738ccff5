//! Google credentials files: a service account's key (`service_account`: tokens are JWTs it
//! signs, no request), a user's refresh token (`authorized_user`, from `gcloud auth
//! application-default login`), and workload identity federation (`external_account`).

use super::external::External;
use super::jwt::{rsa_key, self_signed, BACKDATED, LIFETIME};
use crate::signin::bearer::{oauth_token, Clients, SERVICE_LIMIT};
use crate::signin::fetch::form;
use crate::signin::fetch::safe_for_a_users_secret;
use crate::signin::refresh::Fetched;
use http::Method;
use std::path::Path;
use std::time::SystemTime;
use url::Url;

/// Google's token endpoint for refresh tokens, when the file names none.
const TOKEN_URI: &str = "https://oauth2.googleapis.com/token";

/// What a credentials file holds.
pub(crate) enum FileSource {
    /// A service account's key.
    ServiceAccount {
        email: String,
        key_id: String,
        key: aws_lc_rs::signature::RsaKeyPair,
    },
    /// A user's refresh token.
    User(User),
    /// Workload identity federation.
    External(External),
}

/// A user's OAuth client and refresh token (both secrets, never shown).
pub(crate) struct User {
    client_id: String,
    client_secret: String,
    refresh_token: String,
    token_uri: Url,
}

impl core::fmt::Debug for FileSource {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.name())
    }
}

impl FileSource {
    /// What a user calls it.
    pub(crate) fn name(&self) -> String {
        match self {
            FileSource::ServiceAccount { email, .. } => {
                format!("service account {email} (key file)")
            }
            FileSource::User(u) => format!("user credentials (client {})", u.client_id),
            FileSource::External(e) => e.name(),
        }
    }

    /// The advice when it fails.
    pub(crate) fn fix(&self) -> &'static str {
        match self {
            FileSource::ServiceAccount { .. } => "check the key file (`gcloud iam service-accounts keys create` makes a new one)",
            FileSource::User(_) => "run `gcloud auth application-default login` again (the refresh token may have been revoked)",
            FileSource::External(_) => "check the workload identity pool provider (its audience, the subject token's issuer) and, with impersonation, that the pool's principal may impersonate the service account (roles/iam.workloadIdentityUser)",
        }
    }

    /// A token.
    pub(crate) fn token(&self, clients: &mut Clients) -> Result<Fetched<String>, String> {
        match self {
            FileSource::ServiceAccount { email, key_id, key } => {
                // Dated by this machine's clock: it is made ahead of need, away from any
                // request whose reply would tell the server's.
                let now = SystemTime::now();
                let secs = now
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .map_err(|_| "this machine's clock is before 1970".to_owned())?
                    .as_secs();
                Ok(Fetched {
                    value: self_signed(email, key_id, key, secs)?,
                    // As the token says: issued BACKDATED ago.
                    expires: Some(now + LIFETIME - BACKDATED),
                    note: None,
                })
            }
            FileSource::User(u) => {
                let http = clients.for_url(&u.token_uri, SERVICE_LIMIT)?;
                let body = form(&[
                    ("grant_type", "refresh_token"),
                    ("client_id", &u.client_id),
                    ("client_secret", &u.client_secret),
                    ("refresh_token", &u.refresh_token),
                ]);
                let answer = http.send(Method::POST, &u.token_uri, &[], Some(body))?;
                oauth_token(&answer, "Google's token endpoint")
            }
            FileSource::External(e) => e.token(clients),
        }
    }
}

/// The file at `path`, read now (a file that cannot be used says so when the settings are
/// made); `var` for what an `external_account` file may need (its executable's permission).
pub(crate) fn read(
    path: &Path,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<FileSource, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let json: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("it is not JSON ({e})"))?;
    let field = |name: &str| json.get(name).and_then(|v| v.as_str()).map(str::to_owned);
    let need = |name: &str| field(name).ok_or_else(|| format!("it has no {name}"));
    match field("type").as_deref() {
        Some("service_account") => {
            let email = need("client_email")?;
            let key = rsa_key(&need("private_key")?)?;
            Ok(FileSource::ServiceAccount {
                email,
                key_id: field("private_key_id").unwrap_or_default(),
                key,
            })
        }
        Some("authorized_user") => {
            let uri = field("token_uri").unwrap_or_else(|| TOKEN_URI.into());
            let token_uri = Url::parse(&uri)
                .ok()
                .filter(safe_for_a_users_secret)
                .ok_or_else(|| format!("its token_uri {uri:?} is not an https URL"))?;
            Ok(FileSource::User(User {
                client_id: need("client_id")?,
                client_secret: need("client_secret")?,
                refresh_token: need("refresh_token")?,
                token_uri,
            }))
        }
        Some("external_account") => External::from_json(&json, var).map(FileSource::External),
        Some(other) => Err(format!(
            "its type is {other:?}; the types supported are service_account, authorized_user and external_account"
        )),
        None => Err("it has no \"type\": it is not a Google credentials file".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signin::stub::Stub;

    fn temp(name: &str, text: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("sets3lock-gfiles-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join(name);
        std::fs::write(&file, text).expect("write");
        file
    }

    #[test]
    fn an_authorized_user_file_is_accepted_and_an_unknown_type_names_the_supported_ones() {
        let none = |_: &str| None;
        let file = temp(
            "user.json",
            r#"{"type":"authorized_user","client_id":"x","client_secret":"y","refresh_token":"z"}"#,
        );
        assert!(matches!(read(&file, &none), Ok(FileSource::User(_))));
        let file = temp("other.json", r#"{"type":"gdch_service_account"}"#);
        let e = read(&file, &none).map(|_| ()).expect_err("refused");
        assert!(
            e.contains("gdch_service_account")
                && e.contains("service_account, authorized_user and external_account"),
            "{e}"
        );
        let file = temp(
            "sa.json",
            r#"{"type":"service_account","client_email":"a@b","private_key":"-----BEGIN PRIVATE KEY-----\nnot base64!\n-----END PRIVATE KEY-----\n"}"#,
        );
        let e = read(&file, &none).map(|_| ()).expect_err("refused");
        assert!(e.contains("PEM"), "{e}");
    }

    #[test]
    fn a_refresh_token_is_exchanged_at_the_file_s_token_uri() {
        let stub = Stub::start(|_| {
            (
                200,
                r#"{"access_token":"ya29.user","expires_in":3599,"token_type":"Bearer"}"#.into(),
            )
        });
        let file = temp(
            "user2.json",
            &serde_json::json!({
                "type": "authorized_user",
                "client_id": "cid.apps.googleusercontent.com",
                "client_secret": "csecret",
                "refresh_token": "1//refresh",
                "token_uri": stub.url.join("/token").expect("url").as_str(),
            })
            .to_string(),
        );
        let source = read(&file, &|_| None).expect("read");
        let t = source.token(&mut Clients::new(None)).expect("token");
        assert_eq!(t.value, "ya29.user");
        let r = &stub.seen()[0];
        assert_eq!((r.method.as_str(), r.target.as_str()), ("POST", "/token"));
        let mut form = r.form();
        form.sort();
        assert_eq!(
            form,
            [
                (
                    "client_id".to_owned(),
                    "cid.apps.googleusercontent.com".to_owned()
                ),
                ("client_secret".to_owned(), "csecret".to_owned()),
                ("grant_type".to_owned(), "refresh_token".to_owned()),
                ("refresh_token".to_owned(), "1//refresh".to_owned()),
            ]
        );
        let shown = format!("{source:?}");
        assert!(
            !shown.contains("csecret") && !shown.contains("1//refresh"),
            "{shown}"
        );
    }
}
