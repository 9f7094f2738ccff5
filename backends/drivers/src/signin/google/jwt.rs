//! The self-signed JWT a service account's key makes (RS256): Google takes it as a bearer token
//! for the scope it names, with no token exchange, so no request to Google's token endpoint.

use super::SCOPE;
use base64::Engine as _;
use core::time::Duration;

/// How long a self-signed token is made for (Google's limit is an hour).
pub(crate) const LIFETIME: Duration = Duration::from_secs(3600);

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

/// How far in the past a self-signed token says it was issued: a server whose clock runs a
/// little behind ours would otherwise refuse a token issued "in the future" (Google's own
/// libraries date theirs 10 s back).
pub(crate) const BACKDATED: Duration = Duration::from_secs(10);

/// A JWT signed with the service account's key, issued at `now` (Unix seconds) less
/// [`BACKDATED`] and valid for [`LIFETIME`] from then: Google takes it as a bearer token for the
/// scope it names.
pub(crate) fn self_signed(
    email: &str,
    key_id: &str,
    key: &aws_lc_rs::signature::RsaKeyPair,
    now: u64,
) -> Result<String, String> {
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    let header = serde_json::json!({ "alg": "RS256", "typ": "JWT", "kid": key_id });
    let issued = now.saturating_sub(BACKDATED.as_secs());
    let claims = serde_json::json!({
        "iss": email,
        "sub": email,
        "scope": SCOPE,
        "iat": issued,
        "exp": issued + LIFETIME.as_secs(),
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
        // Dated 10 s back, for a server's clock a little behind ours; an hour, Google's most.
        assert_eq!(claims["iat"], 1_799_999_990u64);
        assert_eq!(claims["exp"], 1_800_003_590u64);
        assert_eq!(claims["scope"], SCOPE);
    }
}
