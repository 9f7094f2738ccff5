//! What Azure's and Google's chains share: OAuth token answers, the HTTP clients of a source,
//! the time limits of their services.

use crate::signin::fetch::{seconds_from_now, unix_seconds, Answer};
use crate::signin::refresh::Fetched;
use std::time::Duration;

/// How long a token service may take for one request.
pub(crate) const SERVICE_LIMIT: Duration = Duration::from_secs(10);
/// How long a metadata endpoint may take when it is asked whether it is there at all (off
/// the cloud it never answers: this is what trying it costs).
pub(crate) const PROBE_LIMIT: Duration = Duration::from_secs(1);

/// A number of seconds written as a number or as a string (`"3599"`).
pub(crate) fn seconds(v: &serde_json::Value) -> Option<u64> {
    v.as_u64()
        .or_else(|| v.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
}

/// An error answer of a token service, one line: OAuth's `error` and `error_description`,
/// Google's `{"error":{"message"}}`, or the start of the body.
pub(crate) fn refused(answer: &Answer, what: &str) -> String {
    let said = answer
        .json()
        .ok()
        .and_then(|json| {
            let error = json.get("error")?;
            if let Some(code) = error.as_str() {
                let description = json
                    .get("error_description")
                    .and_then(|d| d.as_str())
                    .unwrap_or("");
                // Entra ID's descriptions run on with trace and correlation ids.
                let description = description.lines().next().unwrap_or("").trim();
                Some(if description.is_empty() {
                    code.to_owned()
                } else {
                    format!("{code}: {description}")
                })
            } else {
                error
                    .get("message")
                    .and_then(|m| m.as_str())
                    .map(str::to_owned)
            }
        })
        .map(|s| s.chars().take(300).collect::<String>())
        .unwrap_or_else(|| answer.quoted());
    format!("{what} answered HTTP {}: {said}", answer.status)
}

/// The token in an OAuth-style answer: `access_token`, valid for `expires_in` seconds (a
/// number or a string) or, without it, until `expires_on` (Unix seconds).
pub(crate) fn oauth_token(answer: &Answer, what: &str) -> Result<Fetched<String>, String> {
    if answer.status != 200 {
        return Err(refused(answer, what));
    }
    let json = answer.json().map_err(|e| format!("{what}: {e}"))?;
    let token = json
        .get("access_token")
        .and_then(|v| v.as_str())
        .filter(|t| !t.is_empty())
        .ok_or_else(|| format!("{what} answered without an access_token"))?;
    let expires = if let Some(s) = json.get("expires_in").and_then(seconds) {
        seconds_from_now(s, what)?
    } else if let Some(at) = json.get("expires_on").and_then(seconds) {
        unix_seconds(at, what)?
    } else {
        return Err(format!("{what} answered without expires_in or expires_on"));
    };
    Ok(Fetched {
        value: token.to_owned(),
        expires: Some(expires),
        note: None,
    })
}

pub(crate) use crate::signin::fetch::Clients;

/// A variable that turns something off: `true` (any case) or `1`.
pub(crate) fn is_true(var: &dyn Fn(&str) -> Option<String>, name: &str) -> bool {
    var(name).is_some_and(|v| v.trim().eq_ignore_ascii_case("true") || v.trim() == "1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    fn answer(status: u16, body: &str) -> Answer {
        Answer {
            status,
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn a_token_answer_gives_its_expiry_as_a_number_a_string_or_a_time() {
        let before = SystemTime::now();
        let f = oauth_token(
            &answer(200, r#"{"access_token":"t1","expires_in":"3599"}"#),
            "x",
        )
        .expect("token");
        assert_eq!(f.value, "t1");
        let left = f
            .expires
            .expect("expires")
            .duration_since(before)
            .expect("later");
        assert!(left >= Duration::from_secs(3599) && left < Duration::from_secs(3610));
        let f = oauth_token(
            &answer(200, r#"{"access_token":"t2","expires_on":1800000000}"#),
            "x",
        )
        .expect("token");
        assert_eq!(
            f.expires,
            Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000))
        );
        let e = oauth_token(&answer(200, r#"{"access_token":"t3"}"#), "x").expect_err("no expiry");
        assert!(e.contains("expires_in"), "{e}");
    }

    #[test]
    fn refusals_are_quoted_in_one_line_from_either_error_shape() {
        let e = refused(
            &answer(
                401,
                "{\"error\":\"invalid_client\",\"error_description\":\"AADSTS7000215: Invalid client secret provided.\\r\\nTrace ID: 1\"}",
            ),
            "Entra ID",
        );
        assert_eq!(
            e,
            "Entra ID answered HTTP 401: invalid_client: AADSTS7000215: Invalid client secret provided."
        );
        let e = refused(
            &answer(
                403,
                r#"{"error":{"code":403,"message":"Permission 'iam.serviceAccounts.getAccessToken' denied","status":"PERMISSION_DENIED"}}"#,
            ),
            "IAM",
        );
        assert_eq!(
            e,
            "IAM answered HTTP 403: Permission 'iam.serviceAccounts.getAccessToken' denied"
        );
        assert_eq!(
            refused(&answer(502, "bad\ngateway"), "x"),
            "x answered HTTP 502: bad gateway"
        );
    }
}
