//! The HTTP transport every store sends through: the client its mode's runtime makes (reqwest's
//! async client for tokio, its blocking one for the blocking mode, yours for a runtime of
//! yours), no redirects, no retries, each request within its own time limit.
//!
//! Whatever happens becomes a [`Reply`] or the core's `Response` for no reply: a timeout or a
//! broken connection is `Response::Ambiguous` (never a success, never retried here), a
//! connection that could not be made `Ambiguity::NotSent`. What a reply *means* is the store's
//! business (its reply table), not this module's.

use crate::driver::store::BoxFuture;
use crate::rt::{HttpClient, HttpFailure};
use crate::Error;
use core::time::Duration;

use sets3lock_proto::{Ambiguity, Response};
use std::sync::Arc;

/// The request the wire layer built; or, when it could build none, the response that stands
/// for a request never sent.
pub(crate) fn built(
    built: Result<sets3lock_wire::HttpRequest, sets3lock_wire::WireError>,
) -> Result<sets3lock_wire::HttpRequest, Response> {
    built.map_err(|e| {
        Response::Ambiguous(Ambiguity::NotSent {
            detail: e.to_string(),
        })
    })
}

/// The most body we read: a lock record is a few hundred bytes; anything larger is someone
/// else's object and is described, not parsed.
pub(crate) const MAX_BODY: usize = 64 * 1024;

/// How a mode's stores send: the HTTP client its runtime makes for a store's settings, and how
/// it pauses (a store's own pacing, such as GCS's after a 429). (`pub` as the sealed `Waiting`
/// names it; unnameable outside the crate.)
#[derive(Clone, Copy)]
pub struct Io {
    /// Makes a store's client.
    pub(crate) http: fn(&Settings) -> Result<Arc<dyn HttpClient>, Error>,
    /// Pauses for a while, the way this mode's requests wait.
    pub(crate) pause: fn(Duration) -> BoxFuture<'static, ()>,
    /// Whether this mode's futures do their waiting inside `poll` (the blocking mode): a
    /// store opened in it may wait for its first credentials there and then. An async mode's
    /// never may (see `signin/ready.rs`).
    pub(crate) blocks: bool,
}

/// How the requests of one store go out: its client (no redirects, no retries, each request
/// within its own time limit), and the pause of its mode.
#[derive(Clone)]
pub(crate) struct Transport {
    http: Arc<dyn HttpClient>,
    pause: fn(Duration) -> BoxFuture<'static, ()>,
}

impl core::fmt::Debug for Transport {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Transport")
            .field("http", &self.http)
            .finish_non_exhaustive()
    }
}

/// The settings a store's client is made for (the runtime seam's name for them).
pub(crate) type Settings = crate::rt::HttpSettings;

impl Transport {
    /// The transport of a store with these settings, in the mode `io` stands for.
    pub(crate) fn new(io: Io, settings: &Settings) -> Result<Transport, Error> {
        Ok(Transport {
            http: (io.http)(settings)?,
            pause: io.pause,
        })
    }

    /// Pauses for `d` (a store's own pacing, such as GCS's after a 429), the way this
    /// transport's requests wait.
    pub(crate) async fn pause(&self, d: Duration) {
        (self.pause)(d).await
    }

    /// Sends one request, within `timeout`: the reply, or the response that stands for no
    /// reply.
    pub(crate) async fn exchange(
        &self,
        request: sets3lock_wire::HttpRequest,
        timeout: Duration,
    ) -> Result<Reply, Response> {
        match self.http.send(request, timeout).await {
            Ok(reply) => {
                let (parts, body) = reply.into_parts();
                let mut body = body.to_vec();
                body.truncate(MAX_BODY);
                Ok(Reply {
                    status: parts.status,
                    headers: parts.headers,
                    body,
                })
            }
            Err(HttpFailure::NotSent(detail)) => {
                Err(Response::Ambiguous(Ambiguity::NotSent { detail }))
            }
            Err(HttpFailure::Broken(detail)) => {
                Err(Response::Ambiguous(Ambiguity::Connection { detail }))
            }
            Err(_) => Err(Response::Ambiguous(Ambiguity::Timeout)),
        }
    }
}

/// The certificates a client trusts.
pub(crate) enum Roots {
    /// A plain-HTTP endpoint: no certificate is read or parsed (that costs more than the
    /// two requests of a lock on loopback).
    NotNeeded,
    /// Only these (DER): `AWS_CA_BUNDLE`, the AWS convention for a private CA.
    Bundle(Vec<Vec<u8>>),
    /// The system's store (which honours `SSL_CERT_FILE` and `SSL_CERT_DIR`).
    System,
}

pub(crate) fn roots(options: &Settings) -> Result<Roots, Error> {
    if options
        .endpoint
        .as_ref()
        .is_some_and(|e| e.scheme() == "http")
    {
        return Ok(Roots::NotNeeded);
    }
    let Some(path) = &options.ca_bundle else {
        return Ok(Roots::System);
    };
    let bad = |reason: String| {
        Error::Settings(crate::SettingsError::CaBundle {
            path: path.clone(),
            reason,
        })
    };
    let pem = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
    let mut certs = Vec::new();
    for item in ureq::tls::parse_pem(&pem) {
        if let ureq::tls::PemItem::Certificate(c) = item.map_err(|e| bad(e.to_string()))? {
            certs.push(c.der().to_vec());
        }
    }
    if certs.is_empty() {
        return Err(bad("no PEM certificate in it".into()));
    }
    Ok(Roots::Bundle(certs))
}

/// A reply as it came: status, headers and the body (cut at `MAX_BODY`).
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: http::StatusCode,
    pub(crate) headers: http::HeaderMap,
    pub(crate) body: Vec<u8>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_http_endpoint_reads_no_certificates_and_a_bad_bundle_is_named() {
        let http_endpoint = Settings {
            endpoint: Some(url::Url::parse("http://127.0.0.1:9000").expect("url")),
            ca_bundle: Some("/nonexistent/bundle.pem".into()),
            ..Settings::default()
        };
        assert!(matches!(roots(&http_endpoint), Ok(Roots::NotNeeded)));
        let aws = Settings::default();
        assert!(matches!(roots(&aws), Ok(Roots::System)));
        let missing = Settings {
            ca_bundle: Some("/nonexistent/bundle.pem".into()),
            ..Settings::default()
        };
        let e = roots(&missing).err().expect("refused").to_string();
        assert!(
            e.contains("/nonexistent/bundle.pem") && e.contains("AWS_CA_BUNDLE"),
            "{e}"
        );
        let dir = std::env::temp_dir().join(format!("sets3lock-ca-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").expect("write");
        let e = roots(&Settings {
            ca_bundle: Some(empty),
            ..Settings::default()
        })
        .err()
        .expect("refused")
        .to_string();
        assert!(e.contains("no PEM certificate"), "{e}");
        let good = dir.join("ca.pem");
        std::fs::write(&good, TEST_CA).expect("write");
        let r = roots(&Settings {
            ca_bundle: Some(good),
            ..Settings::default()
        });
        assert!(
            matches!(&r, Ok(Roots::Bundle(c)) if c.len() == 1),
            "{:?}",
            r.err()
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A self-signed CA certificate (`openssl req -x509 -newkey ec ...`), for the bundle test.
    const TEST_CA: &str = include_str!("../../tests/support/test-ca.pem");
}
