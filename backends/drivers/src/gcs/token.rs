//! Bearer tokens for GCS: none (an emulator), one given, a self-signed JWT from a service
//! account's key (RS256; no token exchange, so no request to Google's token endpoint), or one
//! from the metadata server (GCE, GKE, Cloud Run). Cached, and renewed five minutes before it
//! expires.

use crate::driver::clock::Stamp;
use crate::driver::http::{HttpRequest, Transport};
use crate::Error;
use base64::Engine as _;
use core::time::Duration;
use sets3lock_proto::{Ambiguity, Response};
use std::sync::Mutex;

/// How long a self-signed token is made for (Google's limit is an hour).
const LIFETIME: Duration = Duration::from_secs(3600);
/// A token is renewed this long before it expires.
const EARLY: Duration = Duration::from_secs(300);
/// The scope a self-signed token carries (GCS does not take an audience).
const SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";

/// Where tokens come from.
pub(crate) enum Source {
    /// No token (an emulator).
    Anonymous,
    /// A token given, sent as it is.
    Fixed(String),
    /// A service account's key: tokens are JWTs it signs.
    ServiceAccount {
        email: String,
        key_id: String,
        key: aws_lc_rs::signature::RsaKeyPair,
    },
    /// The metadata server at this address (`metadata.google.internal`, or `GCE_METADATA_HOST`).
    Metadata(String),
}

impl core::fmt::Debug for Source {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Source::Anonymous => f.write_str("Anonymous"),
            Source::Fixed(_) => f.write_str("Fixed"),
            Source::ServiceAccount { email, .. } => write!(f, "ServiceAccount({email})"),
            Source::Metadata(host) => write!(f, "Metadata({host})"),
        }
    }
}

/// A token source with its cached token (never shown: it is a credential).
pub(crate) struct Tokens {
    source: Source,
    cached: Mutex<Option<(String, Stamp)>>,
}

impl core::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Tokens")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl Tokens {
    pub(crate) fn new(source: Source) -> Tokens {
        Tokens {
            source,
            cached: Mutex::new(None),
        }
    }

    /// The token for the next request (`None`: send none), or the reply that stands for the
    /// request when there is none to be had (not sent: a setback the core retries). A token
    /// fetched from the metadata server takes at most `limit`; a signed one is dated `now`
    /// (Unix seconds, by the server's clock).
    pub(crate) async fn current(
        &self,
        transport: &Transport,
        limit: Duration,
        now: u64,
    ) -> Result<Option<String>, Response> {
        match &self.source {
            Source::Anonymous => return Ok(None),
            Source::Fixed(t) => return Ok(Some(t.clone())),
            _ => {}
        }
        if let Some((token, until)) = self.cached().as_ref() {
            if Stamp::now() < *until {
                return Ok(Some(token.clone()));
            }
        }
        let (token, lifetime) = match &self.source {
            Source::ServiceAccount { email, key_id, key } => (
                self_signed(email, key_id, key, now).map_err(not_sent)?,
                LIFETIME,
            ),
            Source::Metadata(host) => from_metadata(host, transport, limit).await?,
            Source::Anonymous | Source::Fixed(_) => return Ok(None),
        };
        let until = Stamp::now().plus(lifetime.saturating_sub(EARLY));
        *self.cached() = Some((token.clone(), until));
        Ok(Some(token))
    }

    /// Drops the cached token (the store refused it): the next request gets a new one.
    pub(crate) fn forget(&self) {
        *self.cached() = None;
    }

    fn cached(&self) -> std::sync::MutexGuard<'_, Option<(String, Stamp)>> {
        // Poisoned only by a panic while storing a token: the value is still whole.
        self.cached.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn not_sent(detail: String) -> Response {
    Response::Ambiguous(Ambiguity::NotSent { detail })
}

/// The source `GOOGLE_APPLICATION_CREDENTIALS` names: a service account's JSON key file.
pub(crate) fn service_account(path: &std::path::Path) -> Result<Source, Error> {
    let bad = |reason: String| Error::GcsCredentials {
        path: path.to_owned(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    let json: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
    let field = |name: &str| json.get(name).and_then(|v| v.as_str()).map(str::to_owned);
    match field("type").as_deref() {
        Some("service_account") => {}
        Some(other) => {
            return Err(bad(format!(
                "its type is {other:?}; only service_account keys are supported (create one with `gcloud iam service-accounts keys create`)"
            )))
        }
        None => return Err(bad("it has no \"type\": it is not a credentials file".into())),
    }
    let email = field("client_email").ok_or_else(|| bad("it has no client_email".into()))?;
    let pem = field("private_key").ok_or_else(|| bad("it has no private_key".into()))?;
    let key = rsa_key(&pem).map_err(bad)?;
    Ok(Source::ServiceAccount {
        email,
        key_id: field("private_key_id").unwrap_or_default(),
        key,
    })
}

/// The key of a PKCS#8 PEM block (`-----BEGIN PRIVATE KEY-----`).
pub(crate) fn rsa_key(pem: &str) -> Result<aws_lc_rs::signature::RsaKeyPair, String> {
    let body: String = pem
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("-----"))
        .collect();
    let der = base64::engine::general_purpose::STANDARD
        .decode(body)
        .map_err(|_| "its private_key is not a PEM block".to_owned())?;
    aws_lc_rs::signature::RsaKeyPair::from_pkcs8(&der)
        .map_err(|_| "its private_key is not a PKCS#8 RSA key".to_owned())
}

/// A JWT signed with the service account's key, valid for [`LIFETIME`] from `now` (seconds):
/// Google takes it as a bearer token for the scope it names.
pub(crate) fn self_signed(
    email: &str,
    key_id: &str,
    key: &aws_lc_rs::signature::RsaKeyPair,
    now: u64,
) -> Result<String, String> {
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    let header = serde_json::json!({ "alg": "RS256", "typ": "JWT", "kid": key_id });
    let claims = serde_json::json!({
        "iss": email,
        "sub": email,
        "scope": SCOPE,
        "iat": now,
        "exp": now + LIFETIME.as_secs(),
    });
    let message = format!(
        "{}.{}",
        b64(header.to_string().as_bytes()),
        b64(claims.to_string().as_bytes())
    );
    let mut signature = vec![0; key.public_modulus_len()];
    key.sign(
        &aws_lc_rs::signature::RSA_PKCS1_SHA256,
        &aws_lc_rs::rand::SystemRandom::new(),
        message.as_bytes(),
        &mut signature,
    )
    .map_err(|_| "signing the token failed".to_owned())?;
    Ok(format!("{message}.{}", b64(&signature)))
}

/// A token from the metadata server, and how long it lasts.
async fn from_metadata(
    host: &str,
    transport: &Transport,
    limit: Duration,
) -> Result<(String, Duration), Response> {
    let url = format!("http://{host}/computeMetadata/v1/instance/service-accounts/default/token");
    let url = url::Url::parse(&url)
        .map_err(|e| not_sent(format!("metadata server address {host:?}: {e}")))?;
    let mut headers = http::HeaderMap::new();
    headers.insert("metadata-flavor", http::HeaderValue::from_static("Google"));
    let request = HttpRequest {
        method: http::Method::GET,
        url,
        headers,
        body: bytes::Bytes::new(),
    };
    let none = |why: String| {
        not_sent(format!(
            "no Google credentials: the metadata server {why}; outside Google Cloud set GOOGLE_APPLICATION_CREDENTIALS to a service account's key file"
        ))
    };
    let reply = match transport
        .exchange(request, limit.min(Duration::from_secs(5)))
        .await
    {
        Ok(r) => r,
        Err(Response::Ambiguous(a)) => return Err(none(format!("did not answer ({a})"))),
        Err(other) => return Err(other),
    };
    if !reply.status.is_success() {
        return Err(none(format!("answered HTTP {}", reply.status.as_u16())));
    }
    let json: serde_json::Value = serde_json::from_slice(&reply.body)
        .map_err(|_| none("answered something that is not a token".into()))?;
    let token = json
        .get("access_token")
        .and_then(|t| t.as_str())
        .ok_or_else(|| none("answered without an access_token".into()))?;
    let lasts = json
        .get("expires_in")
        .and_then(|e| e.as_u64())
        .unwrap_or(300);
    Ok((token.to_owned(), Duration::from_secs(lasts)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_self_signed_token_verifies_with_the_accounts_public_key_and_says_who_and_when() {
        use aws_lc_rs::signature::{KeyPair as _, UnparsedPublicKey, RSA_PKCS1_2048_8192_SHA256};
        let key = aws_lc_rs::signature::RsaKeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048)
            .expect("a key");
        let token = self_signed(
            "lock@p.iam.gserviceaccount.com",
            "kid1",
            &key,
            1_800_000_000,
        )
        .expect("signed");
        let parts: Vec<&str> = token.split('.').collect();
        assert_eq!(parts.len(), 3);
        let sig = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(parts[2])
            .expect("base64");
        let public = UnparsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA256, key.public_key().as_ref());
        public
            .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &sig)
            .expect("the signature verifies");
        let claims: serde_json::Value = serde_json::from_slice(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(parts[1])
                .expect("base64"),
        )
        .expect("json");
        assert_eq!(claims["iss"], "lock@p.iam.gserviceaccount.com");
        assert_eq!(claims["exp"], 1_800_003_600u64);
        assert_eq!(claims["scope"], SCOPE);
    }

    #[test]
    fn a_key_file_that_is_not_a_service_account_is_named() {
        let dir = std::env::temp_dir().join(format!("sets3lock-gcs-key-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("user.json");
        std::fs::write(&file, r#"{"type":"authorized_user","client_id":"x"}"#).expect("write");
        let e = service_account(&file).expect_err("refused").to_string();
        assert!(
            e.contains("authorized_user") && e.contains("service_account"),
            "{e}"
        );
        std::fs::write(&file, r#"{"type":"service_account","client_email":"a@b","private_key":"-----BEGIN PRIVATE KEY-----\nnot base64!\n-----END PRIVATE KEY-----\n"}"#).expect("write");
        let e = service_account(&file).expect_err("refused").to_string();
        assert!(e.contains("PEM"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
