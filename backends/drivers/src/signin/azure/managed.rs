//! Managed identity: the local endpoint of App Service, Functions and Container Apps
//! (`IDENTITY_ENDPOINT` with the secret header `IDENTITY_HEADER`), else a VM's instance
//! metadata (IMDS, `http://169.254.169.254`).

use super::RESOURCE;
use crate::signin::bearer::{oauth_token, PROBE_LIMIT, SERVICE_LIMIT};
use crate::signin::fetch::{Http, Patience};
use crate::signin::refresh::Fetched;
use http::Method;
use std::time::Duration;
use url::Url;

/// IMDS's address.
pub(crate) const IMDS: &str = "http://169.254.169.254";

/// How IMDS is asked again, as Azure's SDKs ask it: on 404 and 410 (it is being updated, and
/// says it will be back within 70 s), 429 and 5xx, and no answer in time; seven tries, the
/// pauses doubling from 2 s (with jitter, 45 to 90 s in all).
pub(crate) const IMDS_PATIENCE: Patience = Patience {
    tries: 7,
    first_pause: Duration::from_secs(2),
    most_pause: Duration::from_secs(30),
    again: |status| matches!(status, 404 | 410 | 429) || status >= 500,
};

/// How the App Service endpoint is asked again (as MSAL asks it): on 408, 429 and 5xx, three
/// tries.
const APP_SERVICE: Patience = Patience {
    tries: 3,
    first_pause: Duration::from_secs(1),
    most_pause: Duration::from_secs(4),
    again: |status| matches!(status, 408 | 429) || status >= 500,
};

/// Where the managed identity's tokens come from.
#[derive(Clone)]
pub(crate) enum Managed {
    /// App Service, Functions, Container Apps.
    AppService {
        endpoint: Url,
        /// `IDENTITY_HEADER`: a secret.
        header: String,
        client_id: Option<String>,
    },
    /// A VM's instance metadata (`AZURE_POD_IDENTITY_AUTHORITY_HOST` moves it).
    Imds {
        authority: Url,
        client_id: Option<String>,
    },
}

impl core::fmt::Debug for Managed {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.name())
    }
}

impl Managed {
    /// What a user calls it.
    pub(crate) fn name(&self) -> String {
        let (what, client_id) = match self {
            Managed::AppService { client_id, .. } => {
                ("managed identity (App Service endpoint", client_id)
            }
            Managed::Imds { client_id, .. } => ("managed identity (instance metadata", client_id),
        };
        match client_id {
            Some(c) => format!("{what}, client {c})"),
            None => format!("{what})"),
        }
    }

    /// The token request's URL.
    pub(crate) fn url(&self) -> Result<Url, String> {
        let (mut url, version, client_id) = match self {
            Managed::AppService {
                endpoint,
                client_id,
                ..
            } => (endpoint.clone(), "2019-08-01", client_id),
            Managed::Imds {
                authority,
                client_id,
            } => (
                authority
                    .join("/metadata/identity/oauth2/token")
                    .map_err(|e| format!("the instance metadata address {authority}: {e}"))?,
                "2018-02-01",
                client_id,
            ),
        };
        url.query_pairs_mut()
            .append_pair("api-version", version)
            .append_pair("resource", RESOURCE);
        if let Some(c) = client_id {
            url.query_pairs_mut().append_pair("client_id", c);
        }
        Ok(url)
    }

    /// How long one request may take: instance metadata is asked at most a second until it
    /// has answered once (off Azure it never does).
    pub(crate) fn limit(&self, answered_before: bool) -> Duration {
        match self {
            Managed::Imds { .. } if !answered_before => PROBE_LIMIT,
            _ => SERVICE_LIMIT,
        }
    }

    /// A token for Azure Storage, asked again as the endpoint's [`Patience`] says.
    pub(crate) fn token(&self, http: &Http) -> Result<Fetched<String>, String> {
        let url = self.url()?;
        let answer = match self {
            Managed::AppService { header, .. } => http.send_patiently(
                &APP_SERVICE,
                Method::GET,
                &url,
                &[("x-identity-header", header.as_str())],
                None,
            )?,
            Managed::Imds { .. } => http.send_patiently(
                &IMDS_PATIENCE,
                Method::GET,
                &url,
                &[("metadata", "true")],
                None,
            )?,
        };
        oauth_token(&answer, "the managed identity endpoint")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signin::stub::Stub;

    #[test]
    fn app_service_is_asked_with_its_header_and_the_client_id() {
        let stub = Stub::start(|_| {
            (
                200,
                r#"{"access_token":"t-app","expires_on":"1900000000","resource":"https://storage.azure.com","token_type":"Bearer"}"#.into(),
            )
        });
        let m = Managed::AppService {
            endpoint: stub.url.join("/msi/token").expect("url"),
            header: "hdr-secret".into(),
            client_id: Some("c-9".into()),
        };
        let http = Http::new(&stub.url, None, m.limit(false)).expect("client");
        let t = m.token(&http).expect("token");
        assert_eq!(t.value, "t-app");
        assert_eq!(
            t.expires,
            Some(std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_900_000_000))
        );
        let r = &stub.seen()[0];
        assert_eq!(r.method, "GET");
        assert!(r.target.starts_with("/msi/token?"), "{}", r.target);
        assert_eq!(r.header("x-identity-header"), Some("hdr-secret"));
        assert_eq!(r.query("api-version").as_deref(), Some("2019-08-01"));
        assert_eq!(r.query("resource").as_deref(), Some(RESOURCE));
        assert_eq!(r.query("client_id").as_deref(), Some("c-9"));
        assert!(!format!("{m:?}").contains("hdr-secret"));
    }

    #[test]
    fn imds_is_asked_with_the_metadata_header_and_a_refusal_is_quoted() {
        let stub = Stub::start(|r| {
            if r.header("metadata") == Some("true") && r.query("client_id").is_none() {
                (
                    200,
                    r#"{"access_token":"t-vm","expires_in":"86399"}"#.into(),
                )
            } else {
                (
                    400,
                    r#"{"error":"invalid_request","error_description":"Identity not found"}"#
                        .into(),
                )
            }
        });
        let authority = Url::parse(&stub.origin()).expect("url");
        let m = Managed::Imds {
            authority: authority.clone(),
            client_id: None,
        };
        let http = Http::new(&stub.url, None, m.limit(false)).expect("client");
        assert_eq!(m.token(&http).expect("token").value, "t-vm");
        let r = &stub.seen()[0];
        assert!(
            r.target.starts_with("/metadata/identity/oauth2/token?"),
            "{}",
            r.target
        );
        assert_eq!(r.query("api-version").as_deref(), Some("2018-02-01"));
        let m = Managed::Imds {
            authority,
            client_id: Some("other".into()),
        };
        let e = m.token(&http).expect_err("refused");
        assert_eq!(
            e,
            "the managed identity endpoint answered HTTP 400: invalid_request: Identity not found"
        );
    }
}
