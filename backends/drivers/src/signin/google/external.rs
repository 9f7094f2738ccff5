//! Workload identity federation (`external_account`): a token of another issuer (from a
//! file, a URL, or a command) exchanged at Google's STS for an access token, then optionally
//! for a service account's token (`service_account_impersonation_url`).

use super::SCOPE;
use crate::signin::bearer::{oauth_token, refused, Clients, SERVICE_LIMIT};
use crate::signin::fetch::safe_for_a_users_secret;
use crate::signin::fetch::{form, rfc3339, run_words, token_file};
use crate::signin::refresh::Fetched;
use http::Method;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};
use url::Url;

/// Google's STS, when the file names none.
const TOKEN_URL: &str = "https://sts.googleapis.com/v1/token";
/// Google's limits on an executable's time (milliseconds), and its default.
const EXECUTABLE_LEAST: u64 = 5_000;
const EXECUTABLE_MOST: u64 = 120_000;
const EXECUTABLE_DEFAULT: u64 = 30_000;

/// How the subject token is written.
#[derive(Debug)]
enum Format {
    Text,
    /// A JSON object; the token is this field.
    Json(String),
}

/// Where the subject token comes from.
enum Subject {
    File {
        path: PathBuf,
        format: Format,
    },
    Url {
        url: Url,
        /// May hold secrets: never shown.
        headers: Vec<(String, String)>,
        format: Format,
    },
    Executable {
        command: String,
        timeout: Duration,
        output_file: Option<PathBuf>,
    },
}

/// One `external_account` file.
pub(crate) struct External {
    audience: String,
    subject_token_type: String,
    token_url: Url,
    impersonation_url: Option<Url>,
    subject: Subject,
}

impl External {
    /// From the file's JSON; `var` gives `GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES`.
    pub(crate) fn from_json(
        json: &serde_json::Value,
        var: &dyn Fn(&str) -> Option<String>,
    ) -> Result<External, String> {
        let text = |v: &serde_json::Value, name: &str| {
            v.get(name).and_then(|v| v.as_str()).map(str::to_owned)
        };
        let need = |name: &str| text(json, name).ok_or_else(|| format!("it has no {name}"));
        let https = |name: &str, value: String| {
            Url::parse(&value)
                .ok()
                .filter(safe_for_a_users_secret)
                .ok_or_else(|| format!("its {name} {value:?} is not an https URL"))
        };
        let token_url = https(
            "token_url",
            text(json, "token_url").unwrap_or_else(|| TOKEN_URL.into()),
        )?;
        let impersonation_url = match text(json, "service_account_impersonation_url") {
            Some(u) => Some(https("service_account_impersonation_url", u)?),
            None => None,
        };
        let source = json
            .get("credential_source")
            .ok_or("it has no credential_source")?;
        let format = match source.get("format") {
            Some(f) => match text(f, "type").as_deref() {
                Some("json") => Format::Json(text(f, "subject_token_field_name").ok_or(
                    "its credential_source format is json but names no subject_token_field_name",
                )?),
                Some("text") | None => Format::Text,
                Some(other) => {
                    return Err(format!(
                        "its credential_source format {other:?} is not text or json"
                    ))
                }
            },
            None => Format::Text,
        };
        let subject = if let Some(env) = text(source, "environment_id") {
            return Err(format!(
                "its credential_source environment_id {env:?} (AWS) is not supported yet: use a file, url or executable credential_source"
            ));
        } else if let Some(path) = text(source, "file") {
            Subject::File {
                path: PathBuf::from(path),
                format,
            }
        } else if let Some(url) = text(source, "url") {
            let headers = source
                .get("headers")
                .and_then(|h| h.as_object())
                .map(|h| {
                    h.iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                        .collect()
                })
                .unwrap_or_default();
            let url =
                Url::parse(&url).map_err(|e| format!("its credential_source url {url:?}: {e}"))?;
            // The subject token comes back from it, and its headers may be secrets.
            if !crate::signin::fetch::safe_for_secrets(&url) {
                return Err(format!(
                    "its credential_source url {url} is plain http off this machine and its link: the subject token would cross the network in clear; use https"
                ));
            }
            Subject::Url {
                url,
                headers,
                format,
            }
        } else if let Some(exe) = source.get("executable") {
            let command = text(exe, "command").ok_or("its executable has no command")?;
            if var("GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES").as_deref() != Some("1") {
                return Err(format!(
                    "its credential_source runs `{}`, and Google's rule is to run it only when GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES=1: set that to allow it",
                    command.split_whitespace().next().unwrap_or("")
                ));
            }
            let millis = exe
                .get("timeout_millis")
                .and_then(|v| v.as_u64())
                .unwrap_or(EXECUTABLE_DEFAULT);
            if !(EXECUTABLE_LEAST..=EXECUTABLE_MOST).contains(&millis) {
                return Err(format!(
                    "its executable's timeout_millis {millis} is not between {EXECUTABLE_LEAST} and {EXECUTABLE_MOST}"
                ));
            }
            Subject::Executable {
                command,
                timeout: Duration::from_millis(millis),
                output_file: text(exe, "output_file").map(PathBuf::from),
            }
        } else {
            return Err("its credential_source has no file, url or executable".into());
        };
        Ok(External {
            audience: need("audience")?,
            subject_token_type: need("subject_token_type")?,
            token_url,
            impersonation_url,
            subject,
        })
    }

    /// What a user calls it.
    pub(crate) fn name(&self) -> String {
        let who = match &self.impersonation_url {
            Some(u) => format!(
                ", as {}",
                u.path_segments()
                    .and_then(|mut s| s.next_back())
                    .unwrap_or("")
                    .trim_end_matches(":generateAccessToken")
            ),
            None => String::new(),
        };
        format!("workload identity federation ({}{who})", self.audience)
    }

    /// An access token: the subject token exchanged at STS, then for the service account's.
    pub(crate) fn token(&self, clients: &mut Clients) -> Result<Fetched<String>, String> {
        let subject = self.subject_token(clients)?;
        let body = form(&[
            (
                "grant_type",
                "urn:ietf:params:oauth:grant-type:token-exchange",
            ),
            (
                "requested_token_type",
                "urn:ietf:params:oauth:token-type:access_token",
            ),
            ("subject_token", &subject),
            ("subject_token_type", &self.subject_token_type),
            ("audience", &self.audience),
            ("scope", SCOPE),
        ]);
        let http = clients.for_url(&self.token_url, SERVICE_LIMIT)?;
        let answer = http.send(Method::POST, &self.token_url, &[], Some(body))?;
        let federated = oauth_token(&answer, "Google STS")?;
        let Some(url) = &self.impersonation_url else {
            return Ok(federated);
        };
        let http = clients.for_url(url, SERVICE_LIMIT)?;
        let bearer = format!("Bearer {}", federated.value);
        let body = serde_json::json!({ "scope": [SCOPE] }).to_string();
        let answer = http.send(
            Method::POST,
            url,
            &[("authorization", &bearer)],
            Some(("application/json", body)),
        )?;
        let what = "the service account impersonation endpoint";
        if answer.status != 200 {
            return Err(refused(&answer, what));
        }
        let json = answer.json().map_err(|e| format!("{what}: {e}"))?;
        let token = json
            .get("accessToken")
            .and_then(|v| v.as_str())
            .ok_or_else(|| format!("{what} answered without an accessToken"))?;
        let expires = json
            .get("expireTime")
            .and_then(|v| v.as_str())
            .and_then(rfc3339)
            .ok_or_else(|| format!("{what} answered without an expireTime"))?;
        Ok(Fetched {
            value: token.to_owned(),
            expires: Some(expires),
            note: None,
        })
    }

    /// The service account impersonated, from its URL (`…/serviceAccounts/EMAIL:generateAccessToken`).
    fn impersonated_email(&self) -> Option<String> {
        let url = self.impersonation_url.as_ref()?;
        let last = url.path_segments()?.next_back()?;
        let email = last.strip_suffix(":generateAccessToken").unwrap_or(last);
        Some(
            url::form_urlencoded::parse(format!("e={email}").as_bytes())
                .next()
                .map(|(_, v)| v.into_owned())
                .unwrap_or_else(|| email.to_owned()),
        )
    }

    fn subject_token(&self, clients: &mut Clients) -> Result<String, String> {
        match &self.subject {
            Subject::File { path, format } => {
                let text = token_file(path, "the subject token file")?;
                in_format(&text, format, "the subject token file")
            }
            Subject::Url {
                url,
                headers,
                format,
            } => {
                let http = clients.for_url(url, SERVICE_LIMIT)?;
                let headers: Vec<(&str, &str)> = headers
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect();
                let answer = http.send(Method::GET, url, &headers, None)?;
                let what = "the subject token URL";
                if answer.status != 200 {
                    return Err(refused(&answer, what));
                }
                in_format(String::from_utf8_lossy(&answer.body).trim(), format, what)
            }
            Subject::Executable {
                command,
                timeout,
                output_file,
            } => {
                if let Some(file) = output_file {
                    // A still-valid answer the command left there is used again; one without
                    // an expiry counts as expired (Google's rule), or it would be used forever.
                    if let Ok(Some(t)) = std::fs::read(file).map(|b| cached_answer(&b)) {
                        return Ok(t);
                    }
                }
                let file = output_file.as_ref().map(|f| f.display().to_string());
                let mut vars = vec![
                    ("GOOGLE_EXTERNAL_ACCOUNT_AUDIENCE", self.audience.as_str()),
                    (
                        "GOOGLE_EXTERNAL_ACCOUNT_TOKEN_TYPE",
                        self.subject_token_type.as_str(),
                    ),
                    ("GOOGLE_EXTERNAL_ACCOUNT_INTERACTIVE", "0"),
                ];
                if let Some(f) = &file {
                    vars.push(("GOOGLE_EXTERNAL_ACCOUNT_OUTPUT_FILE", f.as_str()));
                }
                let email = self.impersonated_email();
                if let Some(email) = &email {
                    vars.push(("GOOGLE_EXTERNAL_ACCOUNT_IMPERSONATED_EMAIL", email.as_str()));
                }
                let printed = run_words(command, &vars, *timeout)?;
                // A command that wrote its answer to the output file only, as Google's
                // libraries allow.
                match (printed.trim_ascii().is_empty(), output_file) {
                    (true, Some(file)) => executable_answer(&std::fs::read(file).map_err(|e| {
                        format!(
                            "the executable printed nothing, and its output_file {} cannot be read: {e}",
                            file.display()
                        )
                    })?),
                    _ => executable_answer(&printed),
                }
            }
        }
    }
}

/// The token in an answer an executable left in its output file, if it is still good: it
/// succeeded, has an `expiration_time`, and that is still ahead.
fn cached_answer(out: &[u8]) -> Option<String> {
    let json: serde_json::Value = serde_json::from_slice(out).ok()?;
    json.get("expiration_time").and_then(|v| v.as_u64())?;
    executable_answer(out).ok()
}

/// The subject token in `text`, written as `format` says.
fn in_format(text: &str, format: &Format, what: &str) -> Result<String, String> {
    match format {
        Format::Text => Ok(text.to_owned()),
        Format::Json(field) => serde_json::from_str::<serde_json::Value>(text)
            .ok()
            .and_then(|j| j.get(field).and_then(|v| v.as_str()).map(str::to_owned))
            .ok_or_else(|| format!("{what} is not JSON with a {field} field")),
    }
}

/// The token in an executable's answer (`{"version":1,"success":true,"token_type",
/// "id_token" or "saml_response","expiration_time"}`), if it succeeded and has not expired.
fn executable_answer(out: &[u8]) -> Result<String, String> {
    let json: serde_json::Value =
        serde_json::from_slice(out).map_err(|_| "the executable did not print JSON".to_owned())?;
    if json.get("version").and_then(|v| v.as_u64()) != Some(1) {
        return Err("the executable's answer is not version 1".into());
    }
    if json.get("success").and_then(|v| v.as_bool()) != Some(true) {
        let field = |n: &str| json.get(n).and_then(|v| v.as_str()).unwrap_or("");
        return Err(format!(
            "the executable failed: {} {}",
            field("code"),
            field("message")
        ));
    }
    if let Some(at) = json.get("expiration_time").and_then(|v| v.as_u64()) {
        let expires = crate::signin::fetch::unix_seconds(at, "the executable")?;
        if expires <= SystemTime::now() {
            return Err("the executable's token has expired".into());
        }
    }
    let field = match json.get("token_type").and_then(|v| v.as_str()) {
        Some("urn:ietf:params:oauth:token-type:saml2") => "saml_response",
        _ => "id_token",
    };
    json.get(field)
        .and_then(|v| v.as_str())
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| format!("the executable's answer has no {field}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signin::stub::Stub;

    fn external(
        json: serde_json::Value,
        var: &dyn Fn(&str) -> Option<String>,
    ) -> Result<External, String> {
        External::from_json(&json, var)
    }

    /// STS at `/sts` and the impersonation endpoint at `/sa`, on one stub.
    fn google() -> Stub {
        Stub::start(|r| {
            match r.target.as_str() {
            "/sts" => (
                200,
                r#"{"access_token":"sts-token","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":3600}"#.into(),
            ),
            "/subject" if r.header("x-secret") == Some("h1") => {
                (200, r#"{"value":"subject-from-url"}"#.into())
            }
            p if p.starts_with("/v1/projects/-/serviceAccounts/") => (
                200,
                r#"{"accessToken":"ya29.impersonated","expireTime":"2030-01-01T00:00:00Z"}"#.into(),
            ),
            _ => (404, "{}".into()),
        }
        })
    }

    #[test]
    fn a_file_s_token_is_exchanged_at_sts_then_for_the_service_account_s() {
        let stub = google();
        let dir = std::env::temp_dir().join(format!("sets3lock-ext-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("oidc");
        std::fs::write(&file, "oidc-subject\n").expect("write");
        let e = external(
            serde_json::json!({
                "type": "external_account",
                "audience": "//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/q",
                "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
                "token_url": stub.url.join("/sts").expect("url").as_str(),
                "credential_source": { "file": file.display().to_string() },
            }),
            &|_| None,
        )
        .expect("external");
        let t = e.token(&mut Clients::new(None)).expect("token");
        assert_eq!(t.value, "sts-token");
        let r = &stub.seen()[0];
        assert_eq!(r.method, "POST");
        assert_eq!(r.field("subject_token").as_deref(), Some("oidc-subject"));
        assert_eq!(
            r.field("grant_type").as_deref(),
            Some("urn:ietf:params:oauth:grant-type:token-exchange")
        );
        assert_eq!(
            r.field("requested_token_type").as_deref(),
            Some("urn:ietf:params:oauth:token-type:access_token")
        );
        assert_eq!(
            r.field("subject_token_type").as_deref(),
            Some("urn:ietf:params:oauth:token-type:jwt")
        );
        assert!(r
            .field("audience")
            .expect("audience")
            .ends_with("providers/q"));
        assert_eq!(r.field("scope").as_deref(), Some(SCOPE));

        // With impersonation: two requests, the second with the first's token.
        let sa = stub
            .url
            .join(
                "/v1/projects/-/serviceAccounts/lock@p.iam.gserviceaccount.com:generateAccessToken",
            )
            .expect("url");
        let e = external(
            serde_json::json!({
                "type": "external_account",
                "audience": "aud",
                "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
                "token_url": stub.url.join("/sts").expect("url").as_str(),
                "service_account_impersonation_url": sa.as_str(),
                "credential_source": { "file": file.display().to_string() },
            }),
            &|_| None,
        )
        .expect("external");
        assert!(
            e.name().contains("lock@p.iam.gserviceaccount.com"),
            "{}",
            e.name()
        );
        let t = e.token(&mut Clients::new(None)).expect("token");
        assert_eq!(t.value, "ya29.impersonated");
        assert_eq!(t.expires, rfc3339("2030-01-01T00:00:00Z"));
        let seen = stub.seen();
        assert_eq!(seen.len(), 3);
        let second = &seen[2];
        assert_eq!(second.method, "POST");
        assert_eq!(second.header("authorization"), Some("Bearer sts-token"));
        assert_eq!(second.header("content-type"), Some("application/json"));
        let body: serde_json::Value = serde_json::from_str(&second.body).expect("json");
        assert_eq!(body, serde_json::json!({ "scope": [SCOPE] }));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_url_source_is_asked_with_its_headers_and_read_as_json() {
        let stub = google();
        let e = external(
            serde_json::json!({
                "type": "external_account",
                "audience": "aud",
                "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
                "token_url": stub.url.join("/sts").expect("url").as_str(),
                "credential_source": {
                    "url": stub.url.join("/subject").expect("url").as_str(),
                    "headers": { "x-secret": "h1" },
                    "format": { "type": "json", "subject_token_field_name": "value" },
                },
            }),
            &|_| None,
        )
        .expect("external");
        assert_eq!(
            e.token(&mut Clients::new(None)).expect("token").value,
            "sts-token"
        );
        let seen = stub.seen();
        assert_eq!(seen[0].target, "/subject");
        assert_eq!(
            seen[1].field("subject_token").as_deref(),
            Some("subject-from-url")
        );
    }

    #[test]
    fn an_executable_runs_only_when_google_s_variable_allows_it() {
        let json = serde_json::json!({
            "type": "external_account",
            "audience": "aud",
            "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
            "credential_source": { "executable": { "command": "/usr/bin/get-token --now" } },
        });
        let e = external(json.clone(), &|_| None)
            .map(|_| ())
            .expect_err("refused");
        assert!(
            e.contains("GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES=1")
                && e.contains("/usr/bin/get-token"),
            "{e}"
        );
        let allow =
            |n: &str| (n == "GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES").then(|| "1".to_owned());
        assert!(external(json, &allow).is_ok());
        let aws = serde_json::json!({
            "type": "external_account", "audience": "a", "subject_token_type": "t",
            "credential_source": { "environment_id": "aws1", "region_url": "http://169.254.169.254" },
        });
        let e = external(aws, &|_| None).map(|_| ()).expect_err("refused");
        assert!(e.contains("not supported yet"), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn an_executable_s_answer_is_read_and_it_is_told_the_audience() {
        let stub = google();
        let dir = std::env::temp_dir().join(format!("sets3lock-exe-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let script = dir.join("token.sh");
        std::fs::write(
            &script,
            "#!/bin/sh\nprintf '{\"version\":1,\"success\":true,\"token_type\":\"urn:ietf:params:oauth:token-type:id_token\",\"id_token\":\"%s\",\"expiration_time\":4000000000}' \"id-for-$GOOGLE_EXTERNAL_ACCOUNT_AUDIENCE\"\n",
        )
        .expect("script");
        let allow =
            |n: &str| (n == "GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES").then(|| "1".to_owned());
        let e = external(
            serde_json::json!({
                "type": "external_account",
                "audience": "aud-1",
                "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
                "token_url": stub.url.join("/sts").expect("url").as_str(),
                "credential_source": { "executable": { "command": format!("sh {}", script.display()), "timeout_millis": 5000 } },
            }),
            &allow,
        )
        .expect("external");
        e.token(&mut Clients::new(None)).expect("token");
        assert_eq!(
            stub.seen()[0].field("subject_token").as_deref(),
            Some("id-for-aud-1")
        );
        let failed = executable_answer(
            br#"{"version":1,"success":false,"code":"401","message":"no login"}"#,
        )
        .expect_err("failed");
        assert_eq!(failed, "the executable failed: 401 no login");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_output_file_without_an_expiry_is_run_again_and_an_empty_stdout_reads_the_file() {
        let stub = google();
        let dir = std::env::temp_dir().join(format!("sets3lock-exe-out-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let out = dir.join("out.json");
        let runs = dir.join("runs");
        // The command notes each run, says who it impersonates, and answers in the output
        // file only (stdout empty).
        let script = dir.join("token.sh");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh
echo run >> '{}'
printf '{{\"version\":1,\"success\":true,\"token_type\":\"urn:ietf:params:oauth:token-type:jwt\",\"id_token\":\"%s\",\"expiration_time\":4000000000}}' \"as-$GOOGLE_EXTERNAL_ACCOUNT_IMPERSONATED_EMAIL\" > \"$GOOGLE_EXTERNAL_ACCOUNT_OUTPUT_FILE\"
",
                runs.display()
            ),
        )
        .expect("script");
        // A cached answer with no expiration_time: Google's rule says expired.
        std::fs::write(
            &out,
            r#"{"version":1,"success":true,"token_type":"urn:ietf:params:oauth:token-type:jwt","id_token":"forever"}"#,
        )
        .expect("cached");
        let allow =
            |n: &str| (n == "GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES").then(|| "1".to_owned());
        let e = external(
            serde_json::json!({
                "type": "external_account",
                "audience": "aud-1",
                "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
                "token_url": stub.url.join("/sts").expect("url").as_str(),
                "service_account_impersonation_url": stub.url.join("/v1/projects/-/serviceAccounts/lock%40p.iam.gserviceaccount.com:generateAccessToken").expect("url").as_str(),
                "credential_source": { "executable": {
                    "command": format!("sh {}", script.display()),
                    "timeout_millis": 5000,
                    "output_file": out.display().to_string(),
                } },
            }),
            &allow,
        )
        .expect("external");
        let _ = e.token(&mut Clients::new(None));
        let sts = stub
            .seen()
            .into_iter()
            .find(|r| r.target == "/sts")
            .expect("an exchange at STS");
        assert_eq!(
            sts.field("subject_token").as_deref(),
            Some("as-lock@p.iam.gserviceaccount.com")
        );
        assert_eq!(
            std::fs::read_to_string(&runs).expect("ran").lines().count(),
            1
        );
        // Now the file holds an answer with an expiry ahead: used again, not run.
        let _ = e.token(&mut Clients::new(None));
        assert_eq!(
            std::fs::read_to_string(&runs).expect("ran").lines().count(),
            1,
            "a good cached answer was not used"
        );
        assert_eq!(
            cached_answer(br#"{"version":1,"success":true,"id_token":"t"}"#),
            None
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_url_source_in_clear_must_stay_on_this_machine_or_its_link() {
        let json = |url: &str| {
            serde_json::json!({
                "type": "external_account", "audience": "a", "subject_token_type": "t",
                "credential_source": { "url": url, "headers": { "Metadata": "True" } },
            })
        };
        let e = external(json("http://tokens.example.com/t"), &|_| None)
            .map(|_| ())
            .expect_err("in clear");
        assert!(e.contains("use https"), "{e}");
        for ok in [
            "http://169.254.169.254/metadata/identity/oauth2/token",
            "http://127.0.0.1:9/t",
            "https://tokens.example.com/t",
        ] {
            assert!(external(json(ok), &|_| None).is_ok(), "{ok}");
        }
    }
}
