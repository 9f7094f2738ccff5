//! A server certificate the client refused, said as what is wrong with it and how to mend it.
//! rustls names some of its reasons only by their Rust names (a server certificate that is
//! itself a CA fails with `invalid peer certificate: Other(OtherError(CaUsedAsEndEntity))`),
//! which tells a user nothing they can act on.
//!
//! Both HTTP clients pass their failure's text through [`refused`]. A refused certificate ends
//! the TLS handshake, before a byte of the request is written: such a request was not sent.

/// Where the CA to trust is named, for every store.
const TRUST: &str =
    "name that CA's PEM file in SETS3LOCK_CA_BUNDLE (AWS_CA_BUNDLE works for s3:// too)";

/// The one-line explanation when `detail` (an HTTP client's error, its sources included) is a
/// refused server certificate; `None` for any other failure.
pub(crate) fn refused(detail: &str) -> Option<String> {
    if !detail.contains("certificate") && !detail.contains("UnknownIssuer") {
        return None;
    }
    let (what, fix, reason) = if detail.contains("CaUsedAsEndEntity") {
        (
            "the server's TLS certificate is a CA certificate (CA:TRUE, as `openssl req -x509` makes by default), which TLS refuses as a server's own",
            format!("give the server a leaf certificate signed by a CA (`mkcert 127.0.0.1` makes one) and {TRUST}"),
            "CaUsedAsEndEntity",
        )
    } else if detail.contains("UnknownIssuer") {
        (
            "the server's TLS certificate is not signed by a CA this client trusts",
            format!("{TRUST}, or add the CA to this machine's store"),
            "UnknownIssuer",
        )
    } else if detail.contains("not valid for name") || detail.contains("NotValidForName") {
        (
            "the server's TLS certificate is not made out to the endpoint's host",
            "name the host the certificate names in the endpoint, or give the server a certificate whose subjectAltName has the endpoint's host (an IP address needs an IP entry)".to_owned(),
            last_source(detail),
        )
    } else if detail.contains("certificate expired") || detail.contains("not valid yet") {
        (
            "the server's TLS certificate is outside its validity period",
            "renew the server's certificate, or set this machine's clock right".to_owned(),
            last_source(detail),
        )
    } else if detail.contains("invalid peer certificate") {
        (
            "the client refused the server's TLS certificate",
            format!(
                "check the certificate the endpoint presents; if a private CA signed it, {TRUST}"
            ),
            last_source(detail),
        )
    } else {
        return None;
    };
    Some(format!("{what}: {fix} (rustls: {reason})"))
}

/// rustls's own words: the end of the chain of causes the clients join with `": "`.
fn last_source(detail: &str) -> &str {
    let start = detail
        .find("invalid peer certificate: ")
        .map_or(0, |at| at + 26);
    &detail[start..]
}

#[cfg(test)]
pub(crate) mod tests {
    use super::refused;
    use crate::driver::http::Settings;
    use rustls::pki_types::pem::PemObject as _;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    use std::path::PathBuf;
    use std::sync::Arc;

    /// A certificate that is itself a CA, and its key, as `openssl req -x509` makes them.
    fn ca_as_server() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/support/ca-as-server.pem")
    }

    /// A TLS server on loopback presenting that certificate to each of up to `connections`
    /// clients; and the settings of a client that trusts it as its CA, as a user who made it
    /// with openssl and named it in SETS3LOCK_CA_BUNDLE does.
    pub(crate) fn server_with_a_ca_as_its_certificate(connections: usize) -> (String, Settings) {
        let pem = std::fs::read(ca_as_server()).expect("the fixture");
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&pem)
            .collect::<Result<_, _>>()
            .expect("its certificate");
        let key = PrivateKeyDer::from_pem_slice(&pem).expect("its key");
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .expect("a server config");
        let config = Arc::new(config);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let endpoint = format!("https://{}", listener.local_addr().expect("addr"));
        std::thread::spawn(move || {
            for stream in listener.incoming().take(connections) {
                let (Ok(mut stream), Ok(mut tls)) =
                    (stream, rustls::ServerConnection::new(config.clone()))
                else {
                    continue;
                };
                // The handshake fails on the client's side; the server just sees it end.
                let _ = tls.complete_io(&mut stream);
            }
        });
        let settings = Settings {
            endpoint: Some(url::Url::parse(&endpoint).expect("url")),
            ca_bundle: Some(ca_as_server()),
            request_timeout: std::time::Duration::from_secs(5),
            ..Settings::default()
        };
        (endpoint, settings)
    }

    /// What both HTTP clients must answer when that server presents its certificate: not
    /// sent, with the one line that names a CA used as a server's certificate.
    pub(crate) fn refused_as_a_ca<T: core::fmt::Debug>(got: Result<T, crate::rt::HttpFailure>) {
        let Err(crate::rt::HttpFailure::NotSent(why)) = got else {
            panic!("not sent, with the reason: {got:?}");
        };
        assert!(
            why.starts_with("the server's TLS certificate is a CA certificate"),
            "{why}"
        );
        assert!(
            why.contains("mkcert") && why.contains("CaUsedAsEndEntity"),
            "{why}"
        );
    }

    #[test]
    fn a_ca_used_as_the_server_s_certificate_is_named_with_how_to_make_a_leaf() {
        let e = refused("error sending request: client error (Connect): invalid peer certificate: Other(OtherError(CaUsedAsEndEntity))")
            .expect("a certificate failure");
        assert!(
            e.starts_with("the server's TLS certificate is a CA certificate"),
            "{e}"
        );
        assert!(
            e.contains("mkcert") && e.contains("SETS3LOCK_CA_BUNDLE"),
            "{e}"
        );
        assert!(!e.contains("error sending request"), "{e}");
        assert!(!e.contains('\n'), "one line: {e}");
    }

    #[test]
    fn other_refusals_are_named_and_anything_else_is_left_alone() {
        let unknown = refused("io: invalid peer certificate: UnknownIssuer").expect("refused");
        assert!(
            unknown.contains("not signed by a CA this client trusts"),
            "{unknown}"
        );
        let name = refused("invalid peer certificate: certificate not valid for name \"h\"; certificate is only valid for 127.0.0.1").expect("refused");
        assert!(name.contains("subjectAltName"), "{name}");
        let expired = refused("invalid peer certificate: certificate expired: verification time 2 (UNIX), but certificate is not valid after 1 (1 seconds ago)").expect("refused");
        assert!(expired.contains("clock"), "{expired}");
        for other in [
            "io: Connection refused (os error 111)",
            "dns error: failed to lookup address information",
            "HTTP 503 SlowDown",
        ] {
            assert_eq!(refused(other), None, "{other}");
        }
    }
}
