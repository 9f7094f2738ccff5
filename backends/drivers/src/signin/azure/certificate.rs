//! A service principal's certificate (`AZURE_CLIENT_CERTIFICATE_PATH`): a PEM file holding the
//! certificate and its RSA private key, as Azure's SDKs take it. The application proves itself
//! with a client assertion it signs, as Entra ID documents it: a JWT signed PS256, naming the
//! certificate by its SHA-256 thumbprint (`x5t#S256`), for the tenant's token endpoint,
//! valid ten minutes; with `AZURE_CLIENT_SEND_CERTIFICATE_CHAIN`, the chain rides along
//! (`x5c`, for subject-name/issuer authentication).
//!
//! A PKCS#12 (`.pfx`) file, or a key under a password, is refused in one line that says how
//! to convert it: never a fall through to another identity.

use base64::Engine as _;
use sha2::Digest as _;
use std::path::Path;
use std::sync::Arc;

/// How long an assertion is valid.
const LIFETIME_SECS: u64 = 600;

/// The certificate, its chain and its key.
pub(crate) struct Certificate {
    key: Arc<aws_lc_rs::signature::RsaKeyPair>,
    /// The certificate first (DER), then the rest of the file's.
    chain: Vec<Vec<u8>>,
    send_chain: bool,
}

impl Clone for Certificate {
    fn clone(&self) -> Certificate {
        Certificate {
            key: self.key.clone(),
            chain: self.chain.clone(),
            send_chain: self.send_chain,
        }
    }
}

impl Certificate {
    /// The certificate and key in the PEM file at `path`; `send_chain`: whether assertions
    /// carry the chain.
    pub(crate) fn read(path: &Path, send_chain: bool) -> Result<Certificate, String> {
        let shown = path.display();
        let bytes = std::fs::read(path)
            .map_err(|e| format!("AZURE_CLIENT_CERTIFICATE_PATH {shown} cannot be read: {e}"))?;
        let text = String::from_utf8_lossy(&bytes);
        if !text.contains("-----BEGIN") {
            return Err(format!(
                "AZURE_CLIENT_CERTIFICATE_PATH {shown} is not PEM (a PKCS#12 .pfx file?): convert it with `openssl pkcs12 -in {shown} -out cert.pem -nodes`"
            ));
        }
        let blocks =
            pem_blocks(&text).map_err(|e| format!("AZURE_CLIENT_CERTIFICATE_PATH {shown}: {e}"))?;
        let chain: Vec<Vec<u8>> = blocks
            .iter()
            .filter(|(label, _)| label == "CERTIFICATE")
            .map(|(_, der)| der.clone())
            .collect();
        if chain.is_empty() {
            return Err(format!(
                "AZURE_CLIENT_CERTIFICATE_PATH {shown} holds no CERTIFICATE block: put the certificate and its key in one PEM file"
            ));
        }
        let key = blocks
            .iter()
            .find_map(|(label, der)| match label.as_str() {
                "PRIVATE KEY" => Some(
                    aws_lc_rs::signature::RsaKeyPair::from_pkcs8(der)
                        .map_err(|_| "its PRIVATE KEY is not an RSA key (Entra ID takes RSA)"),
                ),
                "RSA PRIVATE KEY" => Some(
                    aws_lc_rs::signature::RsaKeyPair::from_der(der)
                        .map_err(|_| "its RSA PRIVATE KEY cannot be read"),
                ),
                "ENCRYPTED PRIVATE KEY" => Some(Err(
                    "its key is under a password: write it without one (`openssl pkey -in key.pem -out plain.pem`)",
                )),
                _ => None,
            })
            .unwrap_or(Err(
                "it holds no PRIVATE KEY block: put the certificate and its key in one PEM file",
            ))
            .map_err(|e| format!("AZURE_CLIENT_CERTIFICATE_PATH {shown}: {e}"))?;
        Ok(Certificate {
            key: Arc::new(key),
            chain,
            send_chain,
        })
    }

    /// The certificate's SHA-256 thumbprint, base64url, as `x5t#S256` carries it.
    pub(crate) fn thumbprint(&self) -> String {
        let digest = sha2::Sha256::digest(self.chain.first().map_or(&[][..], Vec::as_slice));
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest)
    }

    /// A client assertion of application `client_id` for the token endpoint `audience`,
    /// issued at `now` (Unix seconds).
    pub(crate) fn assertion(
        &self,
        client_id: &str,
        audience: &str,
        now: u64,
    ) -> Result<String, String> {
        let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        let mut header = serde_json::json!({
            "alg": "PS256",
            "typ": "JWT",
            "x5t#S256": self.thumbprint(),
        });
        if self.send_chain {
            let chain: Vec<String> = self
                .chain
                .iter()
                .map(|der| base64::engine::general_purpose::STANDARD.encode(der))
                .collect();
            header["x5c"] = serde_json::json!(chain);
        }
        let mut id = [0u8; 16];
        getrandom::fill(&mut id).map_err(|e| format!("no randomness for the assertion: {e}"))?;
        let claims = serde_json::json!({
            "aud": audience,
            "iss": client_id,
            "sub": client_id,
            "jti": id.iter().map(|b| format!("{b:02x}")).collect::<String>(),
            "nbf": now,
            "iat": now,
            "exp": now + LIFETIME_SECS,
        });
        let message = format!(
            "{}.{}",
            b64(header.to_string().as_bytes()),
            b64(claims.to_string().as_bytes())
        );
        let mut signature = vec![0; self.key.public_modulus_len()];
        self.key
            .sign(
                &aws_lc_rs::signature::RSA_PSS_SHA256,
                &aws_lc_rs::rand::SystemRandom::new(),
                message.as_bytes(),
                &mut signature,
            )
            .map_err(|_| "signing the client assertion failed".to_owned())?;
        Ok(format!("{message}.{}", b64(&signature)))
    }
}

/// The blocks of a PEM text: each label (`CERTIFICATE`, `PRIVATE KEY`) with its bytes.
fn pem_blocks(text: &str) -> Result<Vec<(String, Vec<u8>)>, String> {
    let mut blocks = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in text.lines().map(str::trim) {
        if let Some(label) = line
            .strip_prefix("-----BEGIN ")
            .and_then(|l| l.strip_suffix("-----"))
        {
            open = Some((label.to_owned(), String::new()));
        } else if let Some(label) = line
            .strip_prefix("-----END ")
            .and_then(|l| l.strip_suffix("-----"))
        {
            let (opened, body) = open
                .take()
                .ok_or_else(|| format!("an END {label} with no BEGIN"))?;
            if opened != label {
                return Err(format!("BEGIN {opened} ends with END {label}"));
            }
            let der = base64::engine::general_purpose::STANDARD
                .decode(body)
                .map_err(|_| format!("its {label} block is not base64"))?;
            blocks.push((opened, der));
        } else if let Some((_, body)) = open.as_mut() {
            body.push_str(line);
        }
    }
    match open {
        Some((label, _)) => Err(format!("its {label} block has no END line")),
        None => Ok(blocks),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A throw-away certificate and its key (made for these tests with `openssl req -x509
    /// -newkey rsa:2048 -nodes`), as one PEM file.
    pub(crate) const TEST_PEM: &str = include_str!("../../../tests/support/entra-client.pem");

    fn write(name: &str, text: &[u8]) -> std::path::PathBuf {
        let path =
            std::env::temp_dir().join(format!("sets3lock-cert-{}-{name}", std::process::id()));
        std::fs::write(&path, text).expect("write");
        path
    }

    fn decode(part: &str) -> serde_json::Value {
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(part)
            .expect("base64url");
        serde_json::from_slice(&bytes).expect("json")
    }

    #[test]
    fn an_assertion_is_signed_ps256_with_the_key_and_names_the_certificate_and_endpoint() {
        use aws_lc_rs::signature::{KeyPair as _, UnparsedPublicKey, RSA_PSS_2048_8192_SHA256};
        let path = write("ok.pem", TEST_PEM.as_bytes());
        let cert = Certificate::read(&path, false).expect("read");
        let token = cert
            .assertion(
                "client-1",
                "https://login.example/t/oauth2/v2.0/token",
                1_800_000_000,
            )
            .expect("signed");
        let parts: Vec<&str> = token.split('.').collect();
        assert_eq!(parts.len(), 3);
        let header = decode(parts[0]);
        assert_eq!(header["alg"], "PS256");
        let der = &pem_blocks(TEST_PEM).expect("pem")[0].1;
        let thumbprint =
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(der));
        assert_eq!(header["x5t#S256"], thumbprint.as_str());
        assert!(header.get("x5c").is_none());
        let claims = decode(parts[1]);
        assert_eq!(claims["aud"], "https://login.example/t/oauth2/v2.0/token");
        assert_eq!(
            (claims["iss"].as_str(), claims["sub"].as_str()),
            (Some("client-1"), Some("client-1"))
        );
        assert_eq!(claims["nbf"], 1_800_000_000u64);
        assert_eq!(claims["exp"], 1_800_000_600u64);
        assert_eq!(claims["jti"].as_str().map(str::len), Some(32));
        let signature = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(parts[2])
            .expect("base64url");
        UnparsedPublicKey::new(&RSA_PSS_2048_8192_SHA256, cert.key.public_key().as_ref())
            .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature)
            .expect("the signature verifies with the certificate's key");
        // Each assertion is its own (jti).
        let again = cert
            .assertion("client-1", "aud", 1_800_000_000)
            .expect("signed");
        assert_ne!(
            decode(again.split('.').nth(1).expect("claims"))["jti"],
            claims["jti"]
        );
        // With the chain.
        let chained = Certificate::read(&path, true).expect("read");
        let token = chained.assertion("c", "a", 1).expect("signed");
        let header = decode(token.split('.').next().expect("header"));
        assert_eq!(
            header["x5c"][0].as_str(),
            Some(
                base64::engine::general_purpose::STANDARD
                    .encode(der)
                    .as_str()
            )
        );
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn a_pfx_a_key_under_a_password_or_a_half_file_is_refused_in_one_line() {
        let pfx = write("cert.pfx", &[0x30, 0x82, 0x0a, 0x00, 0x02, 0x01, 0x03]);
        let e = Certificate::read(&pfx, false).err().expect("pfx");
        assert!(e.contains("not PEM") && e.contains("openssl pkcs12"), "{e}");
        let encrypted = write(
            "enc.pem",
            format!(
                "{}-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB\n-----END ENCRYPTED PRIVATE KEY-----\n",
                TEST_PEM
                    .split("-----BEGIN PRIVATE KEY-----")
                    .next()
                    .expect("cert")
            )
            .as_bytes(),
        );
        let e = Certificate::read(&encrypted, false)
            .err()
            .expect("encrypted");
        assert!(e.contains("under a password"), "{e}");
        let key_only = write(
            "key.pem",
            TEST_PEM
                .split("-----END CERTIFICATE-----")
                .nth(1)
                .expect("key")
                .as_bytes(),
        );
        let e = Certificate::read(&key_only, false)
            .err()
            .expect("no certificate");
        assert!(e.contains("no CERTIFICATE block"), "{e}");
        for path in [pfx, encrypted, key_only] {
            let _ = std::fs::remove_file(path);
        }
        assert!(pem_blocks("-----BEGIN X-----\nAAAA\n").is_err());
        assert!(pem_blocks("-----BEGIN X-----\nAAAA\n-----END Y-----\n").is_err());
    }
}
