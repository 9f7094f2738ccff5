//! Entra ID and Google's ADC end to end: tokens from a token service on loopback sign a lock's
//! requests, which Azurite (over HTTPS with `--oauth basic`: it checks a token's audience,
//! issuer and times) accepts, and which fake-gcs-server receives with the token.

use crate::support::token_service::TokenService;
use crate::support::vars::no_metadata;
use crate::support::{self, fresh_key};
use base64::Engine as _;
use sets3lock::blocking::Locker;
use sets3lock::proto::Scheme;
use sets3lock::{Options, Wait};

/// An Entra ID access token for Azure Storage, unsigned (Azurite checks no signature):
/// valid from a minute ago for `life` seconds.
fn entra_token(life: i64) -> String {
    let b64 = |v: serde_json::Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
    };
    let now = jiff::Timestamp::now().as_second();
    format!(
        "{}.{}.",
        b64(serde_json::json!({"alg": "none", "typ": "JWT"})),
        b64(serde_json::json!({
            "aud": "https://storage.azure.com",
            "iss": "https://sts.windows.net/00000000-0000-0000-0000-000000000001/",
            "nbf": now - 60,
            "iat": now - 60,
            "exp": now + life,
        }))
    )
}

struct AzuriteOauth {
    endpoint: String,
    container: String,
    ca: String,
}

fn azurite_oauth() -> Option<AzuriteOauth> {
    let var = |n: &str| std::env::var(format!("SETS3LOCK_AZURITE_OAUTH_{n}")).ok();
    match (var("ENDPOINT"), var("CONTAINER"), var("CA")) {
        (Some(endpoint), Some(container), Some(ca)) => Some(AzuriteOauth {
            endpoint,
            container,
            ca,
        }),
        _ => {
            support::raw::missing("azurite-oauth", "SETS3LOCK_AZURITE_OAUTH");
            None
        }
    }
}

#[test]
fn a_service_principal_s_entra_token_signs_on_azurite() {
    let Some(azurite) = azurite_oauth() else {
        return;
    };
    let entra = TokenService::start(|_, _| {
        let body = serde_json::json!({
            "token_type": "Bearer",
            "expires_in": 3600,
            "access_token": entra_token(3600),
        });
        (200, body.to_string())
    });
    let vars = no_metadata()
        .with("AZURE_STORAGE_ACCOUNT", "devstoreaccount1")
        .with("AZURE_TENANT_ID", "tenant-1")
        .with("AZURE_CLIENT_ID", "client-1")
        .with("AZURE_CLIENT_SECRET", "client-secret-xyzzy")
        .with("AZURE_AUTHORITY_HOST", &entra.url)
        .with("SETS3LOCK_CA_BUNDLE", &azurite.ca);
    let mut options = Options::from_vars(Scheme::Azure, vars.lookup()).expect("options");
    assert!(!format!("{options:?}").contains("xyzzy"));
    options.set_endpoint(
        Scheme::Azure,
        sets3lock::parse_endpoint(&azurite.endpoint).expect("endpoint"),
    );
    let url = format!("az://{}/{}", azurite.container, fresh_key("entra"));
    let locker = Locker::new(&url, options).expect("locker");
    let signer = locker.sign_in().expect("who signs");
    assert!(signer.expires.is_some(), "{signer:?}");
    let held = locker
        .acquire(Wait::No)
        .expect("Azurite took the bearer token");
    held.release().expect("release");
    let asked = entra.asked();
    assert_eq!(asked.len(), 1, "one token for the whole run");
    assert_eq!(asked[0].method, "POST");
    assert_eq!(asked[0].target, "/tenant-1/oauth2/v2.0/token");
    for field in [
        "grant_type=client_credentials",
        "client_id=client-1",
        "scope=https%3A%2F%2Fstorage.azure.com%2F.default",
    ] {
        assert!(
            asked[0].body.contains(field),
            "{field} not in {}",
            asked[0].body
        );
    }
}

#[test]
fn azurite_refuses_an_expired_token_and_the_lock_says_so() {
    let Some(azurite) = azurite_oauth() else {
        return;
    };
    // A managed identity (IMDS, pointed at loopback) handing out a token that expired
    // (`expires_in` says an hour: only Azurite finds out).
    let imds = TokenService::start(|_, _| {
        let body = serde_json::json!({
            "access_token": entra_token(-120),
            "expires_in": "3600",
            "token_type": "Bearer",
        });
        (200, body.to_string())
    });
    let vars = no_metadata()
        .with("AZURE_IMDS_DISABLED", "false")
        .with("AZURE_POD_IDENTITY_AUTHORITY_HOST", &imds.url)
        .with("AZURE_STORAGE_ACCOUNT", "devstoreaccount1")
        .with("SETS3LOCK_CA_BUNDLE", &azurite.ca);
    let mut options = Options::from_vars(Scheme::Azure, vars.lookup()).expect("options");
    options.set_endpoint(
        Scheme::Azure,
        sets3lock::parse_endpoint(&azurite.endpoint).expect("endpoint"),
    );
    let url = format!("az://{}/{}", azurite.container, fresh_key("entra-expired"));
    let e = Locker::new(&url, options)
        .expect("locker")
        .acquire(Wait::No)
        .expect_err("refused");
    assert_eq!(e.kind(), sets3lock::ErrorKind::AccessDenied, "{e}");
    assert!(imds.asked()[0].header("metadata") == Some("true"));
}

#[test]
fn a_gcloud_user_s_refresh_token_signs_on_fake_gcs() {
    let Some(gcs) = support::fake_gcs() else {
        return;
    };
    let google = TokenService::start(|_, n| {
        let body = serde_json::json!({
            "access_token": format!("ya29.user-token-{n}"),
            "expires_in": 3599,
            "token_type": "Bearer",
        });
        (200, body.to_string())
    });
    let dir = std::env::temp_dir().join(format!("sets3lock-adc-{:016x}", support::rand_u64()));
    std::fs::create_dir_all(dir.join("gcloud")).expect("dir");
    std::fs::write(
        dir.join("gcloud/application_default_credentials.json"),
        serde_json::json!({
            "type": "authorized_user",
            "client_id": "764086051850-x.apps.googleusercontent.com",
            "client_secret": "client-secret-xyzzy",
            "refresh_token": "1//refresh-plugh",
            "token_uri": format!("{}/token", google.url),
        })
        .to_string(),
    )
    .expect("write");
    let vars = no_metadata().with(
        "CLOUDSDK_CONFIG",
        dir.join("gcloud").to_str().expect("utf-8"),
    );
    let mut options = Options::from_vars(Scheme::Gcs, vars.lookup()).expect("options");
    let shown = format!("{options:?}");
    assert!(
        !shown.contains("xyzzy") && !shown.contains("plugh"),
        "{shown}"
    );
    let proxy = support::proxy::LossyProxy::start(&gcs.endpoint);
    options.set_endpoint(
        Scheme::Gcs,
        sets3lock::parse_endpoint(&proxy.endpoint).expect("url"),
    );
    options.lock.fenced = true; // fake-gcs-server: fenced only
    let url = format!("gs://{}/{}", gcs.bucket, fresh_key("adc-user"));
    let held = Locker::new(&url, options)
        .expect("locker")
        .acquire(Wait::No)
        .expect("acquire");
    held.release().expect("release");
    let asked = google.asked();
    assert_eq!(asked.len(), 1);
    assert!(
        asked[0].body.contains("grant_type=refresh_token"),
        "{}",
        asked[0].body
    );
    let sent = proxy.requests();
    assert!(!sent.is_empty());
    assert!(
        sent.iter()
            .all(|m| m.header("authorization") == Some("Bearer ya29.user-token-0")),
        "{:?}",
        sent.iter()
            .map(|m| m.header("authorization"))
            .collect::<Vec<_>>()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
