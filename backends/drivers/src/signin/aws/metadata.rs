//! Credentials served as JSON by a local endpoint: EC2 instance metadata (IMDSv2: a session
//! token first, then the role's credentials) and the container endpoint (ECS, Fargate, EKS Pod
//! Identity).

use crate::signin::fetch::{rfc3339, token_file, Answer, Http, Patience};
use crate::signin::refresh::Fetched;
use crate::AwsCredentials;
use http::Method;
use std::path::PathBuf;
use std::time::Duration;
use url::Url;

/// How instance metadata is asked again: four tries in all, as the AWS SDKs make, when it
/// answers 429 or 5xx or nothing in time (a new instance's first token can take seconds).
pub(crate) const PATIENCE: Patience = Patience {
    tries: 4,
    first_pause: Duration::from_secs(1),
    most_pause: Duration::from_secs(20),
    again: |status| status == 429 || status >= 500,
};

/// The credentials in a metadata-style JSON answer (`AccessKeyId`, `SecretAccessKey`, `Token`,
/// `Expiration`, in any case, as the SDKs read them), or what the service said instead (its
/// `Code` when it is not `Success`).
pub(crate) fn credentials_in(
    answer: &Answer,
    what: &str,
) -> Result<Fetched<AwsCredentials>, String> {
    if answer.status != 200 {
        return Err(format!(
            "{what} answered HTTP {}: {}",
            answer.status,
            answer.quoted()
        ));
    }
    let json = answer.json().map_err(|e| format!("{what}: {e}"))?;
    let field = |name: &str| {
        json.as_object()
            .and_then(|o| o.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)))
            .and_then(|(_, v)| v.as_str())
            .map(str::to_owned)
    };
    match field("Code").as_deref() {
        None | Some("Success") => {}
        Some("AssumeRoleUnauthorizedAccess") => {
            return Err(format!(
                "{what} answered AssumeRoleUnauthorizedAccess: {} (does the role trust ec2.amazonaws.com?)",
                field("Message").unwrap_or_default()
            ))
        }
        Some(code) => {
            return Err(format!(
                "{what} answered {code}: {}",
                field("Message").unwrap_or_default()
            ))
        }
    }
    let missing = |name: &str| format!("{what} answered without {name}");
    let key = field("AccessKeyId").ok_or_else(|| missing("AccessKeyId"))?;
    let secret = field("SecretAccessKey").ok_or_else(|| missing("SecretAccessKey"))?;
    let value = match field("Token").or_else(|| field("SessionToken")) {
        Some(token) => AwsCredentials::new_with_token(key, secret, token),
        None => AwsCredentials::new(key, secret),
    };
    let expires = match field("Expiration").or_else(|| field("ExpiresAt")) {
        Some(text) => Some(
            rfc3339(&text)
                .ok_or_else(|| format!("{what} answered an Expiration that is not a time"))?,
        ),
        None => None,
    };
    Ok(Fetched {
        value,
        expires,
        note: None,
    })
}

/// EC2 instance metadata, IMDSv2 only: `PUT /latest/api/token`, then the role's name, then its
/// credentials, each asked again as [`PATIENCE`] says. Off EC2 the first connection fails
/// within its time limit and nothing more is sent.
pub(crate) fn instance(http: &Http, endpoint: &Url) -> Result<Fetched<AwsCredentials>, String> {
    let at = |path: &str| {
        endpoint
            .join(path)
            .map_err(|e| format!("the instance metadata endpoint {endpoint}: {e}"))
    };
    let token = http.send_patiently(
        &PATIENCE,
        Method::PUT,
        &at("/latest/api/token")?,
        &[("x-aws-ec2-metadata-token-ttl-seconds", "21600")],
        None,
    )?;
    if token.status != 200 {
        return Err(format!(
            "its session token request answered HTTP {}",
            token.status
        ));
    }
    let token = String::from_utf8_lossy(&token.body).trim().to_owned();
    let with_token = [("x-aws-ec2-metadata-token", token.as_str())];
    let roles = http.send_patiently(
        &PATIENCE,
        Method::GET,
        &at("/latest/meta-data/iam/security-credentials/")?,
        &with_token,
        None,
    )?;
    if roles.status == 404 {
        return Err("this instance has no IAM role (attach an instance profile)".into());
    }
    if roles.status != 200 {
        return Err(format!("its role list answered HTTP {}", roles.status));
    }
    let listed = String::from_utf8_lossy(&roles.body);
    let role = listed
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .ok_or("this instance has no IAM role (attach an instance profile)")?
        .to_owned();
    let path = format!("/latest/meta-data/iam/security-credentials/{role}");
    let answer = http.send_patiently(&PATIENCE, Method::GET, &at(&path)?, &with_token, None)?;
    credentials_in(&answer, "instance metadata")
}

/// The container endpoint and how to authorize to it. Its `Debug` shows no token.
#[derive(Clone)]
pub(crate) struct Container {
    pub(crate) url: Url,
    /// `AWS_CONTAINER_AUTHORIZATION_TOKEN`.
    pub(crate) token: Option<String>,
    /// `AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE` (EKS Pod Identity; re-read at each fetch).
    pub(crate) token_file: Option<PathBuf>,
}

impl core::fmt::Debug for Container {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Container")
            .field("url", &self.url.as_str())
            .field("token", &self.token.as_ref().map(|_| "…"))
            .field("token_file", &self.token_file)
            .finish()
    }
}

impl Container {
    /// From `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI` (ECS, Fargate) or `..._FULL_URI` (EKS
    /// Pod Identity, and other agents on loopback); `None` if neither is set. A full URI must
    /// be `https`, or `http` to a loopback address or to ECS's or EKS's link-local agent (the
    /// SDKs' rule: credentials never cross a network in clear).
    pub(crate) fn from_vars(
        var: &dyn Fn(&str) -> Option<String>,
    ) -> Option<Result<Container, String>> {
        let url = if let Some(relative) = var("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") {
            // Appended to the agent's address, as the SDKs do: never a host of its own.
            let path = format!("/{}", relative.trim_start_matches('/'));
            Url::parse(&format!("http://169.254.170.2{path}"))
                .map_err(|e| format!("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI: {e}"))
        } else {
            let full = var("AWS_CONTAINER_CREDENTIALS_FULL_URI")?;
            Url::parse(&full)
                .map_err(|e| format!("AWS_CONTAINER_CREDENTIALS_FULL_URI: {e}"))
                .and_then(|url| match allowed(&url) {
                    true => Ok(url),
                    false => Err(format!(
                        "AWS_CONTAINER_CREDENTIALS_FULL_URI {full:?} is plain http to a host that is not loopback nor the ECS or EKS agent: use https"
                    )),
                })
        };
        Some(url.map(|url| Container {
            url,
            token: var("AWS_CONTAINER_AUTHORIZATION_TOKEN"),
            token_file: var("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE").map(PathBuf::from),
        }))
    }
}

fn allowed(url: &Url) -> bool {
    let agent = match url.host() {
        Some(url::Host::Ipv4(ip)) => {
            [[169, 254, 170, 2], [169, 254, 170, 23]].contains(&ip.octets())
        }
        Some(url::Host::Ipv6(ip)) => ip.segments() == [0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x23],
        _ => false,
    };
    url.scheme() == "https" || crate::signin::fetch::on_this_machine(url) || agent
}

/// The container's credentials.
pub(crate) fn container(http: &Http, c: &Container) -> Result<Fetched<AwsCredentials>, String> {
    let token = match (&c.token_file, &c.token) {
        (Some(file), _) => Some(token_file(file, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE")?),
        (None, Some(t)) => Some(t.clone()),
        (None, None) => None,
    };
    let headers: Vec<(&str, &str)> = token
        .iter()
        .map(|t| ("authorization", t.as_str()))
        .collect();
    let answer = http.send(Method::GET, &c.url, &headers, None)?;
    credentials_in(&answer, "the container credentials endpoint")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_uri_in_clear_must_stay_on_this_machine_or_go_to_the_agents() {
        let vars = |uri: &'static str| {
            move |n: &str| (n == "AWS_CONTAINER_CREDENTIALS_FULL_URI").then(|| uri.to_owned())
        };
        for ok in [
            "http://127.0.0.1:9/creds",
            "http://169.254.170.23/v1/credentials",
            "http://[fd00:ec2::23]/v1/credentials",
            "https://creds.example.com/",
            "http://localhost:1/",
        ] {
            let c = Container::from_vars(&vars(ok)).expect("configured");
            assert!(c.is_ok(), "{ok}: {c:?}");
        }
        let e = Container::from_vars(&vars("http://10.0.0.1/creds")).expect("configured");
        assert!(e.expect_err("refused").contains("use https"));
        let none = |_: &str| None;
        assert!(Container::from_vars(&none).is_none());
        let relative = |n: &str| {
            (n == "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
                .then(|| "/v2/credentials/abc".to_owned())
        };
        let c = Container::from_vars(&relative)
            .expect("configured")
            .expect("ok");
        assert_eq!(c.url.as_str(), "http://169.254.170.2/v2/credentials/abc");
    }

    #[test]
    fn metadata_answers_are_read_with_and_without_a_token() {
        let answer = |body: &str| Answer {
            status: 200,
            body: body.as_bytes().to_vec(),
        };
        let f = credentials_in(
            &answer(r#"{"Code":"Success","AccessKeyId":"ASIA1","SecretAccessKey":"s","Token":"t","Expiration":"2026-12-05T02:00:00Z"}"#),
            "instance metadata",
        )
        .expect("read");
        assert_eq!((f.value.key(), f.value.token()), ("ASIA1", Some("t")));
        assert!(f.expires.is_some());
        let e = credentials_in(&answer(r#"{"AccessKeyId":"A"}"#), "instance metadata")
            .expect_err("no secret");
        assert_eq!(e, "instance metadata answered without SecretAccessKey");
        // Keys in any case, and the other names the SDKs read.
        let f = credentials_in(
            &answer(r#"{"accesskeyid":"A","SECRETACCESSKEY":"s","SessionToken":"t","ExpiresAt":"2026-12-05T02:00:00Z"}"#),
            "x",
        )
        .expect("read");
        assert_eq!((f.value.key(), f.value.token()), ("A", Some("t")));
        assert!(f.expires.is_some());
        // A Code other than Success is what the service says instead.
        let e = credentials_in(
            &answer(
                r#"{"Code":"AssumeRoleUnauthorizedAccess","Message":"EC2 cannot assume the role"}"#,
            ),
            "instance metadata",
        )
        .expect_err("refused");
        assert!(
            e.contains("EC2 cannot assume the role") && e.contains("trust ec2.amazonaws.com"),
            "{e}"
        );
        assert!(credentials_in(
            &answer(r#"{"Code":"Throttled","AccessKeyId":"A","SecretAccessKey":"s"}"#),
            "x"
        )
        .expect_err("not Success")
        .contains("Throttled"));
    }
}
