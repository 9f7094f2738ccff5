//! AWS STS: `AssumeRoleWithWebIdentity` (an unsigned form POST carrying a token file's
//! contents: EKS IRSA, any OIDC federation) and `AssumeRole` (signed with the credentials of
//! the profile it starts from). Both answer XML with temporary credentials.

use super::sigv4::sign_form_post;
use crate::signin::fetch::{form, rfc3339, token_file, Answer, Http};
use crate::signin::refresh::Fetched;
use crate::AwsCredentials;
use http::Method;
use std::path::PathBuf;
use url::Url;

/// How long the credentials asked for last (STS's default, and the most a role allows by
/// default).
const DURATION_SECS: &str = "3600";

/// Where STS is: the endpoint the settings name (`AWS_ENDPOINT_URL_STS`, `AWS_ENDPOINT_URL`, the
/// profile's), else the region's (in its partition: `sts.cn-north-1.amazonaws.com.cn`).
#[derive(Clone, Debug)]
pub(crate) struct Sts {
    pub(crate) url: Url,
    pub(crate) region: String,
}

impl Sts {
    pub(crate) fn new(endpoint: Option<&str>, region: &str) -> Result<Sts, String> {
        let url = match endpoint {
            Some(e) => e.to_owned(),
            None => format!("{}/", super::partition::endpoint("sts", region)?),
        };
        let url = Url::parse(&url).map_err(|e| format!("the STS endpoint {url:?}: {e}"))?;
        if !crate::signin::fetch::safe_for_secrets(&url) {
            return Err(format!(
                "the STS endpoint {url} is plain http off this machine: tokens and credentials would go in clear; use https"
            ));
        }
        Ok(Sts {
            url,
            region: region.to_owned(),
        })
    }
}

/// A web identity: the role and the token file (re-read at each fetch: it rotates).
#[derive(Clone, Debug)]
pub(crate) struct WebIdentity {
    pub(crate) role_arn: String,
    pub(crate) token_file: PathBuf,
    pub(crate) session_name: String,
}

/// `AssumeRoleWithWebIdentity`: temporary credentials for the role, for the token in the file.
pub(crate) fn assume_role_with_web_identity(
    http: &Http,
    sts: &Sts,
    who: &WebIdentity,
) -> Result<Fetched<AwsCredentials>, String> {
    let token = token_file(&who.token_file, "the web identity token file")?;
    let body = form(&[
        ("Action", "AssumeRoleWithWebIdentity"),
        ("Version", "2011-06-15"),
        ("RoleArn", &who.role_arn),
        ("RoleSessionName", &who.session_name),
        ("WebIdentityToken", &token),
        ("DurationSeconds", DURATION_SECS),
    ]);
    let answer = http.send(Method::POST, &sts.url, &[], Some(body))?;
    credentials_in(&answer, "AssumeRoleWithWebIdentity")
}

/// A role to assume with other credentials.
#[derive(Clone, Debug)]
pub(crate) struct Role {
    pub(crate) role_arn: String,
    pub(crate) session_name: String,
    pub(crate) external_id: Option<String>,
}

/// `AssumeRole`, signed with `base`.
pub(crate) fn assume_role(
    http: &Http,
    sts: &Sts,
    role: &Role,
    base: &AwsCredentials,
) -> Result<Fetched<AwsCredentials>, String> {
    let mut fields = vec![
        ("Action", "AssumeRole"),
        ("Version", "2011-06-15"),
        ("RoleArn", role.role_arn.as_str()),
        ("RoleSessionName", role.session_name.as_str()),
        ("DurationSeconds", DURATION_SECS),
    ];
    if let Some(id) = &role.external_id {
        fields.push(("ExternalId", id));
    }
    let (content_type, body) = form(&fields);
    let host = match (sts.url.host_str(), sts.url.port()) {
        (Some(h), Some(p)) => format!("{h}:{p}"),
        (Some(h), None) => h.to_owned(),
        (None, _) => return Err(format!("the STS endpoint {} has no host", sts.url)),
    };
    let signed = sign_form_post(
        base,
        &host,
        sts.url.path(),
        &body,
        "sts",
        &sts.region,
        jiff::Timestamp::now(),
    );
    let headers: Vec<(&str, &str)> = signed
        .iter()
        .filter(|(n, _)| *n != "content-type")
        .map(|(n, v)| (*n, v.as_str()))
        .collect();
    let answer = http.send(Method::POST, &sts.url, &headers, Some((content_type, body)))?;
    credentials_in(&answer, "AssumeRole")
}

/// The credentials in an STS reply, or what STS said instead.
fn credentials_in(answer: &Answer, action: &str) -> Result<Fetched<AwsCredentials>, String> {
    let xml = String::from_utf8_lossy(&answer.body);
    if answer.status != 200 {
        let code = element(&xml, "Code").unwrap_or_default();
        let message = element(&xml, "Message").unwrap_or_else(|| answer.quoted());
        return Err(format!(
            "STS {action} answered HTTP {} {code}: {message}",
            answer.status
        ));
    }
    let field = |name: &str| {
        element(&xml, name).ok_or_else(|| format!("STS {action} answered without {name}"))
    };
    let expires = rfc3339(&field("Expiration")?)
        .ok_or_else(|| format!("STS {action} answered an Expiration that is not a time"))?;
    Ok(Fetched {
        value: AwsCredentials::new_with_token(
            field("AccessKeyId")?,
            field("SecretAccessKey")?,
            field("SessionToken")?,
        ),
        expires: Some(expires),
        note: None,
    })
}

/// The text of the first `<name>` element of `xml`, unescaped.
pub(crate) fn element(xml: &str, name: &str) -> Option<String> {
    let open = format!("<{name}>");
    let close = format!("</{name}>");
    let start = xml.find(&open)? + open.len();
    let end = start + xml[start..].find(&close)?;
    Some(
        xml[start..end]
            .trim()
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&amp;", "&"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_read_from_sts_s_reply_and_its_errors_are_quoted() {
        let ok = Answer {
            status: 200,
            body: br#"<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <Credentials>
      <SessionToken>FQoG&amp;token</SessionToken>
      <SecretAccessKey>wJalr</SecretAccessKey>
      <Expiration>2026-12-05T02:00:00Z</Expiration>
      <AccessKeyId>ASIAEXAMPLE</AccessKeyId>
    </Credentials>
  </AssumeRoleWithWebIdentityResult>
</AssumeRoleWithWebIdentityResponse>"#
                .to_vec(),
        };
        let f = credentials_in(&ok, "AssumeRoleWithWebIdentity").expect("credentials");
        assert_eq!(f.value.key(), "ASIAEXAMPLE");
        assert_eq!(f.value.token(), Some("FQoG&token"));
        assert_eq!(f.expires, rfc3339("2026-12-05T02:00:00Z"));
        let refused = Answer {
            status: 403,
            body: b"<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>Not authorized to perform sts:AssumeRoleWithWebIdentity</Message></Error></ErrorResponse>".to_vec(),
        };
        let e = credentials_in(&refused, "AssumeRoleWithWebIdentity").expect_err("refused");
        assert_eq!(
            e,
            "STS AssumeRoleWithWebIdentity answered HTTP 403 AccessDenied: Not authorized to perform sts:AssumeRoleWithWebIdentity"
        );
    }

    #[test]
    fn sts_is_the_endpoint_given_or_the_region_s_in_its_partition() {
        let at = |endpoint: Option<&str>, region: &str| {
            Sts::new(endpoint, region).map(|s| s.url.to_string())
        };
        assert_eq!(
            at(None, "eu-west-1").as_deref(),
            Ok("https://sts.eu-west-1.amazonaws.com/")
        );
        assert_eq!(
            at(None, "cn-north-1").as_deref(),
            Ok("https://sts.cn-north-1.amazonaws.com.cn/")
        );
        assert_eq!(
            at(Some("http://127.0.0.1:1/"), "x").as_deref(),
            Ok("http://127.0.0.1:1/")
        );
        assert!(at(Some("http://sts.example.com/"), "x")
            .expect_err("in clear")
            .contains("use https"));
        assert!(at(None, "bad region")
            .expect_err("no host")
            .contains("set AWS_REGION"));
    }
}
