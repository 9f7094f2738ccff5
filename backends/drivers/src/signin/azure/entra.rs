//! Entra ID's token endpoint, `POST {authority}/{tenant}/oauth2/v2.0/token`, with the client
//! credentials grant: a service principal's secret, or (workload identity) a federated token
//! read from its file at each fetch, since it rotates.

use super::certificate::Certificate;
use super::SCOPE;
use crate::signin::bearer::oauth_token;
use crate::signin::fetch::{form, safe_for_a_users_secret, token_file, Http};
use crate::signin::refresh::Fetched;
use http::Method;
use std::path::PathBuf;
use url::Url;

/// What proves the application's identity.
#[derive(Clone)]
pub(crate) enum Proof {
    /// `AZURE_CLIENT_SECRET`.
    Secret(String),
    /// `AZURE_FEDERATED_TOKEN_FILE`: a token of another issuer that Entra ID trusts.
    Assertion(PathBuf),
    /// `AZURE_CLIENT_CERTIFICATE_PATH`: an assertion signed with the certificate's key.
    Certificate(Certificate),
}

/// An application of a tenant, and its proof.
#[derive(Clone)]
pub(crate) struct Entra {
    /// `{authority}/{tenant}/oauth2/v2.0/token`.
    pub(crate) token_url: Url,
    pub(crate) tenant: String,
    pub(crate) client_id: String,
    pub(crate) proof: Proof,
}

impl core::fmt::Debug for Entra {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Entra")
            .field("tenant", &self.tenant)
            .field("client_id", &self.client_id)
            .field(
                "proof",
                &match &self.proof {
                    Proof::Secret(_) => "a client secret".to_owned(),
                    Proof::Assertion(p) => p.display().to_string(),
                    Proof::Certificate(c) => format!("a certificate ({})", c.thumbprint()),
                },
            )
            .finish()
    }
}

impl Entra {
    /// The application `client_id` of `tenant`, at `authority` (`AZURE_AUTHORITY_HOST`).
    /// A secret is sent over https only (or in clear to this machine, for a test's stub).
    pub(crate) fn new(
        authority: &str,
        tenant: &str,
        client_id: &str,
        proof: Proof,
    ) -> Result<Entra, String> {
        let mut token_url = Url::parse(authority)
            .map_err(|e| format!("AZURE_AUTHORITY_HOST {authority:?} is not a URL ({e})"))?;
        if !safe_for_a_users_secret(&token_url) {
            return Err(format!(
                "AZURE_AUTHORITY_HOST {authority:?} is not https: write it as https://HOST"
            ));
        }
        token_url
            .path_segments_mut()
            .map_err(|_| format!("AZURE_AUTHORITY_HOST {authority:?} cannot have a path"))?
            .pop_if_empty()
            .extend([tenant, "oauth2", "v2.0", "token"]);
        Ok(Entra {
            token_url,
            tenant: tenant.to_owned(),
            client_id: client_id.to_owned(),
            proof,
        })
    }

    /// What a user calls it.
    pub(crate) fn name(&self) -> String {
        match self.proof {
            Proof::Secret(_) => format!(
                "a service principal (client {} of tenant {}, AZURE_CLIENT_SECRET)",
                self.client_id, self.tenant
            ),
            Proof::Assertion(_) => format!(
                "workload identity (client {} of tenant {})",
                self.client_id, self.tenant
            ),
            Proof::Certificate(_) => format!(
                "a service principal (client {} of tenant {}, AZURE_CLIENT_CERTIFICATE_PATH)",
                self.client_id, self.tenant
            ),
        }
    }

    /// A token for Azure Storage.
    pub(crate) fn token(&self, http: &Http) -> Result<Fetched<String>, String> {
        let assertion = match &self.proof {
            Proof::Secret(_) => None,
            Proof::Assertion(path) => Some(token_file(path, "the federated token file")?),
            Proof::Certificate(c) => {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_err(|_| "this machine's clock is before 1970".to_owned())?
                    .as_secs();
                Some(c.assertion(&self.client_id, self.token_url.as_str(), now)?)
            }
        };
        let mut fields = vec![
            ("grant_type", "client_credentials"),
            ("client_id", self.client_id.as_str()),
            ("scope", SCOPE),
        ];
        if let Proof::Secret(secret) = &self.proof {
            fields.push(("client_secret", secret.as_str()));
        }
        if let Some(assertion) = &assertion {
            fields.push((
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            ));
            fields.push(("client_assertion", assertion.as_str()));
        }
        let answer = http.send(Method::POST, &self.token_url, &[], Some(form(&fields)))?;
        oauth_token(&answer, "Entra ID")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signin::stub::Stub;
    use std::time::Duration;

    fn http(stub: &Stub) -> Http {
        Http::new(&stub.url, None, Duration::from_secs(5)).expect("client")
    }

    #[test]
    fn a_secret_is_posted_as_a_form_to_the_tenant_s_token_endpoint() {
        let stub = Stub::start(|_| {
            (
                200,
                r#"{"token_type":"Bearer","expires_in":3599,"access_token":"eyJ.secret-flow"}"#
                    .into(),
            )
        });
        let entra = Entra::new(
            &stub.origin(),
            "tenant-1",
            "client-1",
            Proof::Secret("s3cr3t".into()),
        )
        .expect("entra");
        let t = entra.token(&http(&stub)).expect("token");
        assert_eq!(t.value, "eyJ.secret-flow");
        let seen = stub.seen();
        assert_eq!(seen.len(), 1);
        let r = &seen[0];
        assert_eq!(
            (r.method.as_str(), r.target.as_str()),
            ("POST", "/tenant-1/oauth2/v2.0/token")
        );
        assert_eq!(
            r.header("content-type"),
            Some("application/x-www-form-urlencoded")
        );
        let mut form = r.form();
        form.sort();
        assert_eq!(
            form,
            [
                ("client_id".to_owned(), "client-1".to_owned()),
                ("client_secret".to_owned(), "s3cr3t".to_owned()),
                ("grant_type".to_owned(), "client_credentials".to_owned()),
                (
                    "scope".to_owned(),
                    "https://storage.azure.com/.default".to_owned()
                ),
            ]
        );
        let shown = format!("{entra:?}");
        assert!(!shown.contains("s3cr3t"), "{shown}");
    }

    #[test]
    fn workload_identity_reads_its_token_file_again_at_each_fetch() {
        let stub = Stub::start(|_| (200, r#"{"expires_in":"3599","access_token":"t"}"#.into()));
        let dir = std::env::temp_dir().join(format!("sets3lock-wi-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("token");
        std::fs::write(&file, "assertion-1\n").expect("write");
        let entra =
            Entra::new(&stub.origin(), "t", "c", Proof::Assertion(file.clone())).expect("entra");
        let http = http(&stub);
        entra.token(&http).expect("first");
        std::fs::write(&file, "assertion-2").expect("rotate");
        entra.token(&http).expect("second");
        let seen = stub.seen();
        let assertions: Vec<Option<String>> =
            seen.iter().map(|r| r.field("client_assertion")).collect();
        assert_eq!(
            assertions,
            [Some("assertion-1".into()), Some("assertion-2".into())]
        );
        assert_eq!(
            seen[0].field("client_assertion_type").as_deref(),
            Some("urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
        );
        assert_eq!(seen[0].field("client_secret"), None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_secret_never_goes_in_clear_off_this_machine() {
        let e = Entra::new(
            "http://login.example.com",
            "t",
            "c",
            Proof::Secret("x".into()),
        )
        .expect_err("refused");
        assert!(e.contains("https"), "{e}");
    }
}
