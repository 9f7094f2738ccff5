//! Sending one request and turning whatever happens into the core's `Response`.
//!
//! Replies go through the core's `classify`; a timeout or a broken connection becomes
//! `Response::Ambiguous` (never a success, never retried here), a connection that could not
//! be made `Ambiguity::NotSent`. The one request sent twice is one the server refused for its
//! time, after its `Date` taught a new offset (see [`Link::exchange`]).

use crate::clock::Stamp;
use crate::mode::Mode;
use crate::request::HttpRequest;
use crate::server_time::ServerTime;
use crate::{Error, Observation, Observer, S3Options};
use core::time::Duration;
use sets3lock::{classify, Ambiguity, IntentKind, Response};
use std::time::SystemTime;

/// The most body we read: a lock record is a few hundred bytes; anything larger is someone
/// else's object and is described, not parsed.
const MAX_BODY: usize = 64 * 1024;

fn no_reply(e: reqwest::Error) -> Response {
    // A connection that could not be made (refused, unreachable, timed out, a failed TLS
    // handshake) sent nothing: the write it carried is certainly not applied.
    let sent = !e.is_connect();
    if sent && e.is_timeout() {
        return Response::Ambiguous(Ambiguity::Timeout);
    }
    // Include the sources: reqwest's own message is often just "error sending request".
    // Without the URL: its query is the presigned signature, a credential until it expires.
    let e = e.without_url();
    let mut detail = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        detail.push_str(": ");
        detail.push_str(&s.to_string());
        source = s.source();
    }
    Response::Ambiguous(if sent {
        Ambiguity::Connection { detail }
    } else {
        Ambiguity::NotSent { detail }
    })
}

/// Async: one pooled client per driver, no redirects, no retries (each request gets its own
/// time limit when it is sent).
pub(crate) fn async_client(options: &S3Options) -> Result<reqwest::Client, Error> {
    let builder = reqwest::Client::builder()
        .connect_timeout(options.request_timeout.min(Duration::from_secs(10)))
        .redirect(reqwest::redirect::Policy::none())
        .retry(reqwest::retry::never());
    let builder = match roots(options)? {
        Roots::NotNeeded => builder.tls_certs_only([]),
        Roots::Bundle(certs) => builder.tls_certs_only(certs),
        Roots::System => builder,
    };
    builder.build().map_err(Error::HttpClient)
}

/// Blocking: the same settings.
pub(crate) fn blocking_client(options: &S3Options) -> Result<reqwest::blocking::Client, Error> {
    let builder = reqwest::blocking::Client::builder()
        .timeout(None) // each request sets its own
        .connect_timeout(options.request_timeout.min(Duration::from_secs(10)))
        .redirect(reqwest::redirect::Policy::none())
        .retry(reqwest::retry::never());
    let builder = match roots(options)? {
        Roots::NotNeeded => builder.tls_certs_only([]),
        Roots::Bundle(certs) => builder.tls_certs_only(certs),
        Roots::System => builder,
    };
    builder.build().map_err(Error::HttpClient)
}

/// The certificates a client trusts.
enum Roots {
    /// A plain-HTTP endpoint: no certificate is read or parsed (that costs more than the
    /// two requests of a lock on loopback).
    NotNeeded,
    /// Only these: `AWS_CA_BUNDLE`, the AWS convention for a private CA.
    Bundle(Vec<reqwest::Certificate>),
    /// The system's store (which honours `SSL_CERT_FILE` and `SSL_CERT_DIR`).
    System,
}

fn roots(options: &S3Options) -> Result<Roots, Error> {
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
    let bad = |reason: String| Error::CaBundle {
        path: path.clone(),
        reason,
    };
    let pem = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
    let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| bad(e.to_string()))?;
    if certs.is_empty() {
        return Err(bad("no PEM certificate in it".into()));
    }
    Ok(Roots::Bundle(certs))
}

/// A reply as it came: status, headers and the body (cut at `MAX_BODY`). (Public only for
/// the sealed `Mode` trait to name it: the module is private.)
#[derive(Debug)]
pub struct Reply {
    pub(crate) status: http::StatusCode,
    pub(crate) headers: http::HeaderMap,
    pub(crate) body: Vec<u8>,
}

/// Async: sends one request, within `timeout`; the reply, or the response that stands for
/// no reply.
pub(crate) async fn exchange_async(
    http: &reqwest::Client,
    request: HttpRequest,
    timeout: Duration,
) -> Result<Reply, Response> {
    let sent = http
        .request(request.method, request.url)
        .headers(request.headers)
        .body(request.body)
        .timeout(timeout)
        .send()
        .await;
    let mut reply = sent.map_err(no_reply)?;
    let status = reply.status();
    let headers = reply.headers().clone();
    let mut body = Vec::new();
    while let Some(chunk) = reply.chunk().await.map_err(no_reply)? {
        let room = MAX_BODY.saturating_sub(body.len());
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() >= MAX_BODY {
            break;
        }
    }
    Ok(Reply {
        status,
        headers,
        body,
    })
}

/// Blocking: the same.
pub(crate) fn exchange_blocking(
    http: &reqwest::blocking::Client,
    request: HttpRequest,
    timeout: Duration,
) -> Result<Reply, Response> {
    use std::io::Read;
    let sent = http
        .request(request.method, request.url)
        .headers(request.headers)
        .body(request.body)
        .timeout(timeout)
        .send();
    let reply = sent.map_err(no_reply)?;
    let status = reply.status();
    let headers = reply.headers().clone();
    let mut body = Vec::new();
    reply
        .take(MAX_BODY as u64)
        .read_to_end(&mut body)
        .map_err(|e| {
            Response::Ambiguous(Ambiguity::Connection {
                detail: e.to_string(),
            })
        })?;
    Ok(Reply {
        status,
        headers,
        body,
    })
}

/// The least time a request is given, even at the deadline: a write sent then may land, and
/// its reply says whether we hold the lock.
pub(crate) const LAST_REQUEST: Duration = Duration::from_secs(1);

/// How long a request may take: `timeout`, but ending at `deadline` (if any), though never
/// less than [`LAST_REQUEST`].
pub(crate) fn time_limit(timeout: Duration, deadline: Option<Stamp>) -> Duration {
    match deadline {
        Some(d) => d
            .since(Stamp::now())
            .clamp(LAST_REQUEST.min(timeout), timeout),
        None => timeout,
    }
}

/// How one request goes out: the mode's HTTP client, the server's time to sign at, how long
/// a request may take and the deadline it must end by, and who watches.
pub(crate) struct Link<'a, M: Mode> {
    http: &'a M::Http,
    time: &'a ServerTime,
    timeout: Duration,
    deadline: Option<Stamp>,
    observer: Option<&'a Observer>,
}

/// A resend after a time refusal is not worth less than this.
const MIN_RESEND: Duration = Duration::from_millis(100);

impl<'a, M: Mode> Link<'a, M> {
    /// Requests through `http`, signed at `time`, each within `timeout`.
    pub(crate) fn new(
        http: &'a M::Http,
        time: &'a ServerTime,
        timeout: Duration,
        observer: Option<&'a Observer>,
    ) -> Self {
        Link {
            http,
            time,
            timeout,
            deadline: None,
            observer,
        }
    }

    /// The same, with every request ending by `deadline` (see [`time_limit`]).
    pub(crate) fn until(self, deadline: Option<Stamp>) -> Self {
        Link { deadline, ..self }
    }

    /// Whether the deadline has passed.
    pub(crate) fn past_deadline(&self) -> bool {
        self.deadline.is_some_and(|d| Stamp::now() >= d)
    }

    /// Who watches.
    pub(crate) fn observer(&self) -> Option<&'a Observer> {
        self.observer
    }

    /// Signs a request with `sign` at the server's time, sends it and classifies the reply.
    pub(crate) async fn send(
        &self,
        kind: IntentKind,
        sign: impl Fn(&jiff::Timestamp) -> Result<HttpRequest, Response>,
    ) -> Response {
        match self.exchange(kind, sign).await {
            Ok((_, response)) => response,
            Err(no_reply) => no_reply,
        }
    }

    /// Like [`send`](Link::send), but also returns the reply itself. Every quick reply's
    /// `Date` teaches the server's time (see `server_time`); a refusal of the request's time
    /// that taught a new offset is signed again and sent once more (a refused request was not
    /// applied), within the same time limit as the first.
    pub(crate) async fn exchange(
        &self,
        kind: IntentKind,
        sign: impl Fn(&jiff::Timestamp) -> Result<HttpRequest, Response>,
    ) -> Result<(Reply, Response), Response> {
        let limit = time_limit(self.timeout, self.deadline);
        let started = Stamp::now();
        let mut resent = false;
        loop {
            let request = sign(&self.time.now())?;
            let sent = SystemTime::now();
            let left = limit.saturating_sub(Stamp::now().since(started));
            let reply = M::exchange(self.http, request, left).await?;
            let response = classify(kind, reply.status, &reply.headers, &reply.body);
            let about_time = matches!(response, Response::Refused(sets3lock::Error::Clock { .. }));
            let learned = self
                .time
                .learn(&reply.headers, sent, SystemTime::now(), about_time);
            let resend = about_time
                && learned.is_some()
                && !resent
                && limit.saturating_sub(Stamp::now().since(started)) >= MIN_RESEND;
            if let (Some(offset_ms), Some(o)) = (learned, self.observer) {
                o.see(Observation::ServerClock {
                    offset_ms,
                    resending: resend,
                });
            }
            if resend {
                resent = true;
                continue;
            }
            return Ok((reply, response));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_ends_at_the_deadline_but_gets_a_second_at_least() {
        let t = Duration::from_secs(20);
        assert_eq!(time_limit(t, None), t);
        let soon = Stamp::now().plus(Duration::from_secs(5));
        let limit = time_limit(t, Some(soon));
        assert!(
            limit <= Duration::from_secs(5) && limit > Duration::from_secs(4),
            "{limit:?}"
        );
        assert_eq!(time_limit(t, Some(Stamp::now())), LAST_REQUEST);
        // Never more than the request timeout, even if that is under a second.
        let short = Duration::from_millis(300);
        assert_eq!(time_limit(short, Some(Stamp::now())), short);
        assert_eq!(time_limit(short, Some(soon)), short);
    }

    #[test]
    fn a_connection_that_cannot_be_made_sent_nothing() {
        // A port with nobody listening: connection refused, before a byte is written.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let http = reqwest::blocking::Client::builder()
            .tls_certs_only([])
            .build()
            .expect("client");
        let request = HttpRequest {
            method: http::Method::PUT,
            url: url::Url::parse(&format!("http://127.0.0.1:{port}/b/k")).expect("url"),
            headers: http::HeaderMap::new(),
            body: bytes::Bytes::from_static(b"{}"),
        };
        let got = exchange_blocking(&http, request, Duration::from_secs(5));
        assert!(
            matches!(&got, Err(Response::Ambiguous(a)) if !a.may_have_landed()),
            "{got:?}"
        );
        let text = format!("{got:?}");
        assert!(!text.contains("127.0.0.1"), "no URL in the detail: {text}");
    }

    #[test]
    fn a_plain_http_endpoint_reads_no_certificates_and_a_bad_bundle_is_named() {
        let http_endpoint = S3Options {
            endpoint: Some(url::Url::parse("http://127.0.0.1:9000").expect("url")),
            ca_bundle: Some("/nonexistent/bundle.pem".into()),
            ..S3Options::default()
        };
        assert!(matches!(roots(&http_endpoint), Ok(Roots::NotNeeded)));
        let aws = S3Options::default();
        assert!(matches!(roots(&aws), Ok(Roots::System)));
        let missing = S3Options {
            ca_bundle: Some("/nonexistent/bundle.pem".into()),
            ..S3Options::default()
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
        let e = roots(&S3Options {
            ca_bundle: Some(empty),
            ..S3Options::default()
        })
        .err()
        .expect("refused")
        .to_string();
        assert!(e.contains("no PEM certificate"), "{e}");
        let good = dir.join("ca.pem");
        std::fs::write(&good, TEST_CA).expect("write");
        let r = roots(&S3Options {
            ca_bundle: Some(good),
            ..S3Options::default()
        });
        assert!(
            matches!(&r, Ok(Roots::Bundle(c)) if c.len() == 1),
            "{:?}",
            r.err()
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A self-signed CA certificate (`openssl req -x509 -newkey ec ...`), for the bundle test.
    const TEST_CA: &str = include_str!("../tests/support/test-ca.pem");
}
