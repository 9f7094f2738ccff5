//! Which Entra ID source applies, from the variables alone where they decide it: a service
//! principal's secret, then workload identity. Managed identity and the Azure CLI cannot be
//! told apart without asking, so the last source asks managed identity, then the CLI, at its
//! first fetch, and keeps to whichever answered (as `DefaultAzureCredential` does).

use super::certificate::Certificate;
use super::cli::Cli;
use super::entra::{Entra, Proof};
use super::managed::{Managed, IMDS};
use crate::signin::bearer::{is_true, Clients, PROBE_LIMIT, SERVICE_LIMIT};
use crate::signin::chained::{Chained, Name};
use crate::signin::fetch::CaBundle;
use crate::signin::refresh::{Fetch, Fetched};
use crate::signin::source::{BearerToken, CredentialSource};
use crate::Error;
use std::path::PathBuf;
use std::sync::Arc;
use url::Url;

/// The advice when nothing gave a token.
const FIX: &str = "run `az login`, or set AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN, or AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET (on Azure: give the resource a managed identity)";

/// Managed identity, then the CLI; the one that answered first.
#[derive(Clone)]
struct Ambient {
    managed: Option<Managed>,
    cli: Cli,
    chosen: Option<Choice>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Choice {
    Managed,
    Cli,
}

#[derive(Clone)]
enum Source {
    Entra(Entra),
    Ambient(Ambient),
}

struct Fetcher {
    source: Source,
    clients: Clients,
    name: Name,
}

impl Fetch for Fetcher {
    type Value = String;
    fn fetch(&mut self) -> Result<Fetched<String>, String> {
        match &mut self.source {
            Source::Entra(e) => e.token(self.clients.for_url(&e.token_url, SERVICE_LIMIT)?),
            Source::Ambient(a) => ambient(a, &mut self.clients, &self.name),
        }
    }
}

fn managed_token(
    m: &Managed,
    clients: &mut Clients,
    settled: bool,
) -> Result<Fetched<String>, String> {
    let url = m.url()?;
    let limit = m.limit(settled);
    let http = match limit <= PROBE_LIMIT {
        true => clients.for_probe(&url, limit)?,
        false => clients.for_url(&url, limit)?,
    };
    m.token(http)
}

fn ambient(a: &mut Ambient, clients: &mut Clients, name: &Name) -> Result<Fetched<String>, String> {
    match (a.chosen, &a.managed) {
        (Some(Choice::Managed), Some(m)) => {
            return managed_token(m, clients, true).map_err(|e| format!("{} ({e})", m.name()))
        }
        (Some(Choice::Cli), _) => {
            return a.cli.token().map_err(|e| format!("{} ({e})", a.cli.name()))
        }
        _ => {}
    }
    let mut why = Vec::new();
    if let Some(m) = &a.managed {
        match managed_token(m, clients, false) {
            Ok(t) => {
                a.chosen = Some(Choice::Managed);
                name.set(m.name());
                return Ok(t);
            }
            Err(e) => why.push(format!("{} ({e})", m.name())),
        }
    }
    match a.cli.token() {
        Ok(t) => {
            a.chosen = Some(Choice::Cli);
            name.set(a.cli.name());
            Ok(t)
        }
        Err(e) => {
            why.push(format!("{} ({e})", a.cli.name()));
            Err(why.join(", "))
        }
    }
}

/// A managed identity endpoint a variable names: `https`, or in clear only on this machine or
/// its link (a token comes back from it, and App Service's secret header goes to it).
fn metadata_url(text: &str, variable: &str) -> Result<Url, String> {
    let url = Url::parse(text).map_err(|e| format!("{variable} {text:?} is not a URL ({e})"))?;
    if !crate::signin::fetch::safe_for_secrets(&url) {
        return Err(format!(
            "{variable} {text:?} is plain http off this machine and its link: a token would cross the network in clear; use https"
        ));
    }
    Ok(url)
}

/// What makes the fetcher of `source`'s thread (see `Refreshing`).
fn fetcher(
    source: Source,
    ca_bundle: CaBundle,
    name: Name,
) -> impl Fn() -> Fetcher + Send + Sync + 'static {
    move || Fetcher {
        source: source.clone(),
        clients: Clients::new(ca_bundle.clone()),
        name: name.clone(),
    }
}

/// The chain for an account with no key and no SAS, from `var`: the source that applies,
/// with what was passed over to reach it.
pub(crate) fn resolve(
    var: &dyn Fn(&str) -> Option<String>,
    ca_bundle: &CaBundle,
) -> Result<Arc<dyn CredentialSource<BearerToken>>, Error> {
    let bad = |reason: String| Error::NoCredentials {
        store: "Azure",
        reason,
    };
    let authority =
        var("AZURE_AUTHORITY_HOST").unwrap_or_else(|| "https://login.microsoftonline.com".into());
    let (tenant, client_id) = (var("AZURE_TENANT_ID"), var("AZURE_CLIENT_ID"));
    let entra = |proof: Proof, fix: &str, tried: Vec<String>| {
        let (Some(tenant), Some(client_id)) = (&tenant, &client_id) else {
            return Err(bad("no tenant or client".into()));
        };
        let e = Entra::new(&authority, tenant, client_id, proof).map_err(bad)?;
        let name = Name::new(e.name());
        let fetcher = fetcher(Source::Entra(e), ca_bundle.clone(), name.clone());
        Ok(
            Arc::new(Chained::new(fetcher, name, tried, fix, "azure-token"))
                as Arc<dyn CredentialSource<BearerToken>>,
        )
    };
    let missing = |names: &[(&str, bool)]| {
        let absent: Vec<&str> = names
            .iter()
            .filter(|(_, set)| !set)
            .map(|(n, _)| *n)
            .collect();
        if absent.len() == names.len() {
            "not configured".to_owned()
        } else {
            format!("{} not set", absent.join(" and "))
        }
    };
    let mut tried = Vec::new();
    match var("AZURE_CLIENT_SECRET") {
        Some(secret) if tenant.is_some() && client_id.is_some() => {
            return entra(
                Proof::Secret(secret),
                "check AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET (a client secret expires: make a new one in the app registration)",
                tried,
            );
        }
        secret => tried.push(format!(
            "a service principal ({})",
            missing(&[
                ("AZURE_TENANT_ID", tenant.is_some()),
                ("AZURE_CLIENT_ID", client_id.is_some()),
                ("AZURE_CLIENT_SECRET", secret.is_some()),
            ])
        )),
    }
    match var("AZURE_CLIENT_CERTIFICATE_PATH") {
        Some(path) if tenant.is_some() && client_id.is_some() => {
            let send_chain = is_true(var, "AZURE_CLIENT_SEND_CERTIFICATE_CHAIN");
            let certificate =
                Certificate::read(std::path::Path::new(&path), send_chain).map_err(bad)?;
            return entra(
                Proof::Certificate(certificate),
                "check AZURE_TENANT_ID and AZURE_CLIENT_ID, and that the app registration has this certificate (its thumbprint is in the source's name)",
                tried,
            );
        }
        path => tried.push(format!(
            "a service principal's certificate ({})",
            missing(&[
                ("AZURE_TENANT_ID", tenant.is_some()),
                ("AZURE_CLIENT_ID", client_id.is_some()),
                ("AZURE_CLIENT_CERTIFICATE_PATH", path.is_some()),
            ])
        )),
    }
    match var("AZURE_FEDERATED_TOKEN_FILE") {
        Some(file) if tenant.is_some() && client_id.is_some() => {
            return entra(
                Proof::Assertion(PathBuf::from(file)),
                "check the app's federated credential (its issuer and subject must match the token in AZURE_FEDERATED_TOKEN_FILE)",
                tried,
            );
        }
        file => tried.push(format!(
            "workload identity ({})",
            missing(&[
                ("AZURE_FEDERATED_TOKEN_FILE", file.is_some()),
                ("AZURE_TENANT_ID", tenant.is_some()),
                ("AZURE_CLIENT_ID", client_id.is_some()),
            ])
        )),
    }
    // Managed identity's other hosts are not supported: each says so, rather than falling
    // through to another identity (the Azure CLI's user).
    if var("IDENTITY_SERVER_THUMBPRINT").is_some() {
        return Err(bad("managed identity on Service Fabric (IDENTITY_SERVER_THUMBPRINT) is not supported: use a service principal (AZURE_CLIENT_SECRET or AZURE_CLIENT_CERTIFICATE_PATH) or workload identity".into()));
    }
    if var("IDENTITY_ENDPOINT").is_some() && var("IMDS_ENDPOINT").is_some() {
        return Err(bad("managed identity on Azure Arc (IMDS_ENDPOINT) is not supported: use a service principal (AZURE_CLIENT_SECRET or AZURE_CLIENT_CERTIFICATE_PATH) or workload identity".into()));
    }
    let managed = match (var("IDENTITY_ENDPOINT"), var("IDENTITY_HEADER")) {
        (Some(endpoint), Some(header)) => Some(Managed::AppService {
            endpoint: metadata_url(&endpoint, "IDENTITY_ENDPOINT").map_err(bad)?,
            header,
            client_id: client_id.clone(),
        }),
        _ if is_true(var, "AZURE_IMDS_DISABLED") => {
            tried.push(
                "managed identity (instance metadata turned off by AZURE_IMDS_DISABLED)".into(),
            );
            None
        }
        _ => {
            let host = var("AZURE_POD_IDENTITY_AUTHORITY_HOST").unwrap_or_else(|| IMDS.into());
            Some(Managed::Imds {
                authority: metadata_url(&host, "AZURE_POD_IDENTITY_AUTHORITY_HOST").map_err(bad)?,
                client_id: client_id.clone(),
            })
        }
    };
    let cli = Cli {
        program: var("SETS3LOCK_AZURE_CLI").unwrap_or_else(|| "az".into()),
    };
    let name = Name::new(match &managed {
        Some(m) => format!("{} or {}", m.name(), cli.name()),
        None => cli.name(),
    });
    let ambient = Source::Ambient(Ambient {
        managed,
        cli,
        chosen: None,
    });
    let fetcher = fetcher(ambient, ca_bundle.clone(), name.clone());
    Ok(
        Arc::new(Chained::new(fetcher, name, tried, FIX, "azure-token").listing_itself())
            as Arc<dyn CredentialSource<BearerToken>>,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signin::stub::Stub;

    fn vars(pairs: Vec<(&'static str, String)>) -> impl Fn(&str) -> Option<String> {
        move |n: &str| pairs.iter().find(|(k, _)| *k == n).map(|(_, v)| v.clone())
    }

    #[test]
    fn a_secret_in_the_environment_is_used_first() {
        let stub = Stub::start(|_| {
            (
                200,
                r#"{"access_token":"from-secret","expires_in":3599}"#.into(),
            )
        });
        let var = vars(vec![
            ("AZURE_AUTHORITY_HOST", stub.origin()),
            ("AZURE_TENANT_ID", "ten".into()),
            ("AZURE_CLIENT_ID", "cli".into()),
            ("AZURE_CLIENT_SECRET", "hush-hush".into()),
            ("AZURE_FEDERATED_TOKEN_FILE", "/nonexistent".into()),
        ]);
        let source = resolve(&var, &CaBundle::default()).expect("source");
        source.ready().expect("ready");
        assert_eq!(source.current().expect("token").secret(), "from-secret");
        assert_eq!(stub.seen()[0].target, "/ten/oauth2/v2.0/token");
        let shown = format!("{source:?} {}", source.sign_in());
        assert!(
            shown.contains("service principal") && !shown.contains("hush-hush"),
            "{shown}"
        );
    }

    #[test]
    fn instance_metadata_is_found_where_azure_pod_identity_authority_host_says() {
        let stub = Stub::start(|r| {
            if r.header("metadata") == Some("true") {
                (
                    200,
                    r#"{"access_token":"from-imds","expires_in":"86399"}"#.into(),
                )
            } else {
                (400, "{}".into())
            }
        });
        let var = vars(vec![
            ("AZURE_POD_IDENTITY_AUTHORITY_HOST", stub.origin()),
            ("SETS3LOCK_AZURE_CLI", "sets3lock-no-such-az".into()),
        ]);
        let source = resolve(&var, &CaBundle::default()).expect("source");
        source.ready().expect("ready");
        assert_eq!(source.current().expect("token").secret(), "from-imds");
        assert!(source.sign_in().source.contains("instance metadata"));
        assert_eq!(stub.seen().len(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn the_cli_is_asked_when_managed_identity_is_off_and_kept_to() {
        let dir = std::env::temp_dir().join(format!("sets3lock-az-chain-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let script = dir.join("az");
        std::fs::write(
            &script,
            "#!/bin/sh\necho '{\"accessToken\":\"from-az\",\"expires_on\":1900000000}'\n",
        )
        .expect("script");
        let var = vars(vec![
            ("AZURE_IMDS_DISABLED", "true".into()),
            ("SETS3LOCK_AZURE_CLI", format!("sh {}", script.display())),
        ]);
        let source = resolve(&var, &CaBundle::default()).expect("source");
        source.ready().expect("ready");
        assert_eq!(source.current().expect("token").secret(), "from-az");
        assert!(source.sign_in().source.contains("Azure CLI"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn when_nothing_gives_a_token_every_source_tried_is_named_with_the_fix() {
        // Instance metadata on a port where nothing listens: refused at once.
        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            l.local_addr().expect("addr").port()
        };
        let var = vars(vec![
            (
                "AZURE_POD_IDENTITY_AUTHORITY_HOST",
                format!("http://127.0.0.1:{closed}"),
            ),
            ("AZURE_CLIENT_ID", "only-a-client".into()),
            ("SETS3LOCK_AZURE_CLI", "sets3lock-no-such-az".into()),
        ]);
        let source = resolve(&var, &CaBundle::default()).expect("source");
        let e = source.ready().expect_err("nothing").to_string();
        assert!(
            e.starts_with("tried a service principal (AZURE_TENANT_ID and AZURE_CLIENT_SECRET not set), a service principal's certificate (AZURE_TENANT_ID and AZURE_CLIENT_CERTIFICATE_PATH not set), workload identity (AZURE_FEDERATED_TOKEN_FILE and AZURE_TENANT_ID not set), managed identity (instance metadata, client only-a-client) ("),
            "{e}"
        );
        assert!(
            e.contains("the Azure CLI (sets3lock-no-such-az) (`sets3lock-no-such-az` is not installed); run `az login`"),
            "{e}"
        );
        assert!(!e.contains('\n'), "{e}");
        let off = vars(vec![
            ("AZURE_IMDS_DISABLED", "true".into()),
            ("SETS3LOCK_AZURE_CLI", "sets3lock-no-such-az".into()),
        ]);
        let e = resolve(&off, &CaBundle::default())
            .expect("source")
            .ready()
            .expect_err("nothing")
            .to_string();
        assert!(e.contains("turned off by AZURE_IMDS_DISABLED"), "{e}");
    }

    #[test]
    fn a_certificate_signs_an_assertion_for_the_tenant_s_endpoint_after_a_secret_and_before_workload_identity(
    ) {
        let stub = Stub::start(|_| {
            (
                200,
                r#"{"access_token":"from-certificate","expires_in":3599}"#.into(),
            )
        });
        let pem =
            std::env::temp_dir().join(format!("sets3lock-az-cert-{}.pem", std::process::id()));
        std::fs::write(&pem, super::super::certificate::tests::TEST_PEM).expect("write");
        let var = vars(vec![
            ("AZURE_AUTHORITY_HOST", stub.origin()),
            ("AZURE_TENANT_ID", "ten".into()),
            ("AZURE_CLIENT_ID", "cli".into()),
            ("AZURE_CLIENT_CERTIFICATE_PATH", pem.display().to_string()),
            ("AZURE_FEDERATED_TOKEN_FILE", "/nonexistent".into()),
        ]);
        let source = resolve(&var, &CaBundle::default()).expect("source");
        source.ready().expect("ready");
        assert_eq!(
            source.current().expect("token").secret(),
            "from-certificate"
        );
        let seen = stub.seen();
        assert_eq!(seen[0].target, "/ten/oauth2/v2.0/token");
        assert_eq!(
            seen[0].field("client_assertion_type").as_deref(),
            Some("urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
        );
        let assertion = seen[0].field("client_assertion").expect("an assertion");
        let claims = assertion.split('.').nth(1).expect("claims");
        let claims: serde_json::Value = serde_json::from_slice(
            &base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, claims)
                .expect("base64"),
        )
        .expect("json");
        assert_eq!(
            claims["aud"],
            format!("{}/ten/oauth2/v2.0/token", stub.origin())
        );
        assert_eq!(claims["iss"], "cli");
        assert!(source
            .sign_in()
            .source
            .contains("AZURE_CLIENT_CERTIFICATE_PATH"));
        // A secret comes first.
        let var = vars(vec![
            ("AZURE_AUTHORITY_HOST", stub.origin()),
            ("AZURE_TENANT_ID", "ten".into()),
            ("AZURE_CLIENT_ID", "cli".into()),
            ("AZURE_CLIENT_SECRET", "s".into()),
            ("AZURE_CLIENT_CERTIFICATE_PATH", pem.display().to_string()),
        ]);
        assert!(resolve(&var, &CaBundle::default())
            .expect("source")
            .sign_in()
            .source
            .contains("AZURE_CLIENT_SECRET"));
        // A certificate that cannot be used is an error, never another identity.
        let var = vars(vec![
            ("AZURE_TENANT_ID", "ten".into()),
            ("AZURE_CLIENT_ID", "cli".into()),
            (
                "AZURE_CLIENT_CERTIFICATE_PATH",
                "/nonexistent/cert.pem".into(),
            ),
        ]);
        let e = resolve(&var, &CaBundle::default()).expect_err("unreadable");
        assert!(e.to_string().contains("cannot be read"), "{e}");
        let _ = std::fs::remove_file(&pem);
    }

    #[test]
    fn service_fabric_and_arc_say_they_are_not_supported_rather_than_fall_through() {
        for (extra, said) in [
            ("IDENTITY_SERVER_THUMBPRINT", "Service Fabric"),
            ("IMDS_ENDPOINT", "Azure Arc"),
        ] {
            let var = vars(vec![
                ("IDENTITY_ENDPOINT", "http://127.0.0.1:9/msi/token".into()),
                ("IDENTITY_HEADER", "h".into()),
                (extra, "x".into()),
            ]);
            let e = resolve(&var, &CaBundle::default()).expect_err("not supported");
            assert!(
                e.to_string().contains(said) && e.to_string().contains("not supported"),
                "{e}"
            );
        }
    }

    #[test]
    fn managed_identity_endpoints_in_clear_must_stay_on_this_machine_or_its_link() {
        for (name, value) in [
            ("IDENTITY_ENDPOINT", "http://tokens.example.com/msi/token"),
            ("AZURE_POD_IDENTITY_AUTHORITY_HOST", "http://10.0.0.9/"),
        ] {
            let var = vars(vec![(name, value.into()), ("IDENTITY_HEADER", "h".into())]);
            let e = resolve(&var, &CaBundle::default()).expect_err("in clear");
            assert!(
                e.to_string().contains(name) && e.to_string().contains("use https"),
                "{e}"
            );
        }
        for ok in [
            "http://127.0.0.1:41741/msi/token",
            "http://169.254.169.254/",
            "https://x/",
        ] {
            assert!(metadata_url(ok, "IDENTITY_ENDPOINT").is_ok(), "{ok}");
        }
    }
}
