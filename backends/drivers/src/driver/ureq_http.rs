//! The blocking mode's HTTP client: ureq, which blocks the calling thread and starts none of
//! its own (reqwest's blocking client runs a tokio runtime on a thread behind it). Also the
//! client of the token services (`signin/fetch.rs`). No redirects, no retries, no headers of
//! its own but `Host`; TLS by rustls with the same crypto provider as the async client.

use crate::driver::http::{Roots, Settings, MAX_BODY};
use crate::driver::store::BoxFuture;
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
            false => ureq::Proxy::try_from_env(),
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
        Ok(Ureq(config.new_agent()))
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
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::TimedOut => HttpFailure::Timeout,
                _ => HttpFailure::Broken(e.to_string()),
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
        ureq::Error::BadUri(_) | ureq::Error::Http(_) | ureq::Error::InvalidProxyUrl => {
            HttpFailure::NotSent(e.to_string())
        }
        other => HttpFailure::Broken(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(url: &str) -> http::Request<Bytes> {
        http::Request::get(url).body(Bytes::new()).expect("request")
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
