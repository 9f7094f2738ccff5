//! Sending one request and turning whatever happens into the core's `Response`.
//!
//! Replies go through the core's `classify`; a timeout or a broken connection becomes
//! `Response::Ambiguous`: never a success, and never retried here.

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
    pub(crate) http: &'a M::Http,
    pub(crate) time: &'a ServerTime,
    pub(crate) timeout: Duration,
    pub(crate) deadline: Option<Stamp>,
    pub(crate) observer: Option<&'a Observer>,
}

impl<M: Mode> Link<'_, M> {
    /// Signs a request with `sign` at the server's time, sends it and classifies the reply.
    pub(crate) async fn send(
        &self,
        kind: IntentKind,
        sign: impl Fn(&jiff::Timestamp) -> Result<HttpRequest, Response>,
    ) -> Response {
        match self.exchange(kind, sign).await {
            Ok(reply) => classify(kind, reply.status, &reply.headers, &reply.body),
            Err(no_reply) => no_reply,
        }
    }

    /// Like [`send`](Link::send), but returns the reply itself. Every reply's `Date` teaches
    /// the server's time (see `server_time`); a refusal of the request's time that taught a
    /// new offset is signed again and sent once more (a refused request was not applied).
    pub(crate) async fn exchange(
        &self,
        kind: IntentKind,
        sign: impl Fn(&jiff::Timestamp) -> Result<HttpRequest, Response>,
    ) -> Result<Reply, Response> {
        let mut resent = false;
        loop {
            let request = sign(&self.time.now())?;
            let sent = SystemTime::now();
            let limit = time_limit(self.timeout, self.deadline);
            let reply = M::exchange(self.http, request, limit).await?;
            let about_time = matches!(
                classify(kind, reply.status, &reply.headers, &reply.body),
                Response::Refused(sets3lock::Error::Clock { .. })
            );
            let learned = self
                .time
                .learn(&reply.headers, sent, SystemTime::now(), about_time);
            if let (Some(offset_ms), Some(o)) = (learned, self.observer) {
                o.see(Observation::ServerClock { offset_ms });
            }
            if about_time && learned.is_some() && !resent {
                resent = true;
                continue;
            }
            return Ok(reply);
        }
    }
}
