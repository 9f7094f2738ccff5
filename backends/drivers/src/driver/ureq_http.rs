//! The blocking mode's HTTP client: ureq, which blocks the calling thread and keeps no thread
//! of its own (reqwest's blocking client runs a tokio runtime on a thread behind it; ureq's
//! host lookups are on a thread each, but for addresses: see `ureq_resolve.rs`). Also the
//! client of the token services (`signin/fetch.rs`). No redirects, no retries, no headers of
//! its own but `Host`; TLS by rustls with the same crypto provider as the async client.

use crate::driver::http::{Roots, Settings, MAX_BODY};
use crate::driver::store::BoxFuture;
use crate::driver::ureq_resolve::Resolve;
use crate::rt::{HttpClient, HttpFailure};
use crate::Error;
use bytes::Bytes;
use core::time::Duration;
use std::io::Read as _;
use std::sync::Arc;

/// ureq's agent for one store or service.
#[derive(Debug)]
pub(crate) struct Ureq(ureq::Agent);

impl Ureq {
    /// An agent for these settings.
    pub(crate) fn new(settings: &Settings) -> Result<Ureq, Error> {
        let connect = settings.request_timeout.min(Duration::from_secs(10));
        let roots = match super::http::roots(settings)? {
            Roots::NotNeeded => ureq::tls::RootCerts::Specific(Arc::new(Vec::new())),
            Roots::Bundle(certs) => {
                let certs = certs.iter();
                let certs = certs.map(|der| ureq::tls::Certificate::from_der(der).to_owned());
                let certs = certs.collect();
                ureq::tls::RootCerts::Specific(Arc::new(certs))
            }
            Roots::System => ureq::tls::RootCerts::PlatformVerifier,
        };
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let tls = ureq::tls::TlsConfig::builder()
            .provider(ureq::tls::TlsProvider::Rustls)
            .unversioned_rustls_crypto_provider(provider)
            .root_certs(roots)
            .build();
        let proxy = match settings.direct {
            true => None,
            false => proxy_from_env(settings, |name| std::env::var(name).ok())?,
        };
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_connect(Some(connect))
            .user_agent(ureq::config::AutoHeaderValue::None)
            .accept(ureq::config::AutoHeaderValue::None)
            .accept_encoding(ureq::config::AutoHeaderValue::None)
            .tls_config(tls)
            .proxy(proxy)
            .build();
        let connect = ureq::unversioned::transport::DefaultConnector::default();
        let agent = ureq::Agent::with_parts(config, connect, Resolve::default());
        Ok(Ureq(agent))
    }

    /// Sends `request` on this thread, ending within `timeout`.
    pub(crate) fn exchange(
        &self,
        request: http::Request<Bytes>,
        timeout: Duration,
    ) -> Result<http::Response<Bytes>, HttpFailure> {
        let agent = &self.0;
        let sent = if request.body().is_empty() {
            let request = agent
                .configure_request(request.map(|_| ()))
                .timeout_global(Some(timeout))
                .build();
            agent.run(request)
        } else {
            let request = agent
                .configure_request(request.map(|b| b.to_vec()))
                .timeout_global(Some(timeout))
                .build();
            agent.run(request)
        };
        let reply = sent.map_err(failure)?;
        let (parts, body) = reply.into_parts();
        let mut kept = Vec::new();
        body.into_reader()
            .take(MAX_BODY as u64)
            .read_to_end(&mut kept)
            // ureq wraps its own errors (its timeouts) in the reader's: unwrapped here.
            .map_err(|e| match failure(ureq::Error::from(e)) {
                HttpFailure::NotSent(why) => HttpFailure::Broken(why),
                other => other,
            })?;
        Ok(http::Response::from_parts(parts, Bytes::from(kept)))
    }
}

impl HttpClient for Ureq {
    fn send(
        &self,
        request: http::Request<Bytes>,
        timeout: Duration,
    ) -> BoxFuture<'_, Result<http::Response<Bytes>, HttpFailure>> {
        // The blocking mode's futures do their waiting inside `poll`.
        Box::pin(async move { self.exchange(request, timeout) })
    }
}

/// What a ureq error means for the request: not sent (nothing written: no address, no
/// connection), timed out, or broken.
fn failure(e: ureq::Error) -> HttpFailure {
    use ureq::Timeout as T;
    // A refused server certificate ends the handshake before the request is written.
    if let Some(why) = super::certificate::refused(&e.to_string()) {
        return HttpFailure::NotSent(why);
    }
    match e {
        ureq::Error::HostNotFound | ureq::Error::ConnectionFailed => {
            HttpFailure::NotSent(e.to_string())
        }
        ureq::Error::Timeout(T::Resolve | T::Connect) => HttpFailure::NotSent(e.to_string()),
        ureq::Error::Timeout(_) => HttpFailure::Timeout,
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
            HttpFailure::NotSent(io.to_string())
        }
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => HttpFailure::Timeout,
        // Refused before anything was written; the URI is not quoted (a presigned one carries
        // its signature).
        ureq::Error::BadUri(_) => HttpFailure::NotSent("the request's URI was refused".into()),
        ureq::Error::Http(_) | ureq::Error::InvalidProxyUrl => HttpFailure::NotSent(e.to_string()),
        // TLS set up for the connection (its configuration, the server's name) comes before a
        // byte of the request. (A failed handshake comes back as an I/O error: Broken, which
        // is safe, if less precise.)
        ureq::Error::Rustls(_) | ureq::Error::Tls(_) => HttpFailure::NotSent(e.to_string()),
        other => HttpFailure::Broken(other.to_string()),
    }
}

/// The proxy the environment names for the endpoint's scheme, as curl and reqwest read it:
/// `HTTPS_PROXY` for https, `HTTP_PROXY` for plain http, `ALL_PROXY` for either (upper or
/// lower case), with `NO_PROXY`'s exceptions. (ureq's own reading takes the first of any of
/// them for every scheme.)
fn proxy_from_env(
    settings: &Settings,
    var: impl Fn(&str) -> Option<String>,
) -> Result<Option<ureq::Proxy>, Error> {
    let https = settings
        .endpoint
        .as_ref()
        .is_none_or(|e| e.scheme() == "https");
    let names: [&str; 4] = match https {
        true => ["HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"],
        false => ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"],
    };
    let Some((name, value)) = names
        .iter()
        .find_map(|n| var(n).filter(|v| !v.trim().is_empty()).map(|v| (*n, v)))
    else {
        return Ok(None);
    };
    let bad =
        |why: &str| Error::HttpClient(format!("{name}={value:?} is not a proxy URL: {why}").into());
    let value = match value.contains("://") {
        true => value.clone(),
        false => format!("http://{value}"),
    };
    let url = url::Url::parse(&value).map_err(|e| bad(&e.to_string()))?;
    let protocol = match url.scheme() {
        "http" => ureq::ProxyProtocol::Http,
        "https" => ureq::ProxyProtocol::Https,
        "socks4" => ureq::ProxyProtocol::Socks4,
        "socks4a" => ureq::ProxyProtocol::Socks4A,
        "socks5" => ureq::ProxyProtocol::Socks5,
        "socks5h" => ureq::ProxyProtocol::Socks5h,
        other => return Err(bad(&format!("no proxy protocol {other}"))),
    };
    let mut proxy = ureq::Proxy::builder(protocol).host(url.host_str().unwrap_or("localhost"));
    if let Some(port) = url.port() {
        proxy = proxy.port(port);
    }
    if !url.username().is_empty() {
        proxy = proxy.username(url.username());
    }
    if let Some(password) = url.password() {
        proxy = proxy.password(password);
    }
    for entry in var("NO_PROXY")
        .or_else(|| var("no_proxy"))
        .unwrap_or_default()
        .split(',')
    {
        proxy = proxy.no_proxy(entry.trim());
    }
    proxy.build().map(Some).map_err(|e| bad(&e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(url: &str) -> http::Request<Bytes> {
        http::Request::get(url).body(Bytes::new()).expect("request")
    }

    #[test]
    fn the_proxy_is_the_one_named_for_the_endpoints_scheme() {
        let settings = |endpoint: &str| Settings {
            endpoint: Some(url::Url::parse(endpoint).expect("url")),
            ..Settings::default()
        };
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        let only_https = env(&[("HTTPS_PROXY", "http://proxy.example:3128")]);
        let plain = settings("http://127.0.0.1:8333");
        let tls = settings("https://s3.eu-west-1.amazonaws.com");
        assert!(proxy_from_env(&plain, only_https).expect("read").is_none());
        assert!(proxy_from_env(&tls, only_https).expect("read").is_some());
        let both = env(&[("ALL_PROXY", "socks5://127.0.0.1:1080")]);
        assert!(proxy_from_env(&plain, both).expect("read").is_some());
        assert!(proxy_from_env(&tls, env(&[])).expect("read").is_none());
        let garbled = env(&[("HTTPS_PROXY", "ftp://nowhere")]);
        let e = proxy_from_env(&tls, garbled)
            .expect_err("refused")
            .to_string();
        assert!(e.contains("HTTPS_PROXY"), "{e}");
    }

    #[test]
    fn a_connection_that_cannot_be_made_sent_nothing() {
        // A port with nobody listening: connection refused, before a byte is written.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let client = Ureq::new(&Settings::default()).expect("client");
        let got = client.exchange(
            get(&format!("http://127.0.0.1:{port}/b/k")),
            Duration::from_secs(5),
        );
        assert!(matches!(&got, Err(HttpFailure::NotSent(_))), "{got:?}");
        let text = format!("{got:?}");
        assert!(!text.contains("/b/k"), "no URL in the detail: {text}");
    }

    #[test]
    fn a_server_certificate_that_is_a_ca_is_named_in_one_line_and_nothing_was_sent() {
        let (endpoint, settings) =
            crate::driver::certificate::tests::server_with_a_ca_as_its_certificate(1);
        let client = Ureq::new(&settings).expect("client");
        let got = client.exchange(get(&format!("{endpoint}/b/k")), Duration::from_secs(5));
        crate::driver::certificate::tests::refused_as_a_ca(got);
    }

    #[test]
    fn a_server_that_never_answers_is_a_timeout_within_the_limit() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}/b/k", listener.local_addr().expect("addr"));
        let held = std::thread::spawn(move || listener.accept().map(|(s, _)| s));
        let client = Ureq::new(&Settings::default()).expect("client");
        let started = std::time::Instant::now();
        let got = client.exchange(get(&url), Duration::from_millis(300));
        assert_eq!(got.err(), Some(HttpFailure::Timeout));
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
        drop(held.join());
    }
}
