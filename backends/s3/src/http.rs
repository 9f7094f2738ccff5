//! Sending one request and turning whatever happens into the core's `Response`.
//!
//! Replies go through the core's `classify`; a timeout or a broken connection becomes
//! `Response::Ambiguous`: never a success, and never retried here.

use crate::request::HttpRequest;
use crate::Error;
use core::time::Duration;
use sets3lock::{classify, Ambiguity, IntentKind, Response};

/// The most body we read: a lock record is a few hundred bytes; anything larger is someone
/// else's object and is described, not parsed.
const MAX_BODY: usize = 64 * 1024;

fn no_reply(e: reqwest::Error) -> Response {
    if e.is_timeout() {
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
    Response::Ambiguous(Ambiguity::Connection { detail })
}

/// Async: one pooled client per driver, no redirects, no retries, a timeout per request.
pub(crate) fn async_client(timeout: Duration) -> Result<reqwest::Client, Error> {
    reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout.min(Duration::from_secs(10)))
        .redirect(reqwest::redirect::Policy::none())
        .retry(reqwest::retry::never())
        .build()
        .map_err(Error::HttpClient)
}

/// Blocking: the same settings.
pub(crate) fn blocking_client(timeout: Duration) -> Result<reqwest::blocking::Client, Error> {
    reqwest::blocking::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout.min(Duration::from_secs(10)))
        .redirect(reqwest::redirect::Policy::none())
        .retry(reqwest::retry::never())
        .build()
        .map_err(Error::HttpClient)
}

pub(crate) async fn send_async(
    http: &reqwest::Client,
    request: HttpRequest,
    kind: IntentKind,
) -> Response {
    let sent = http
        .request(request.method, request.url)
        .headers(request.headers)
        .body(request.body)
        .send()
        .await;
    let mut reply = match sent {
        Ok(r) => r,
        Err(e) => return no_reply(e),
    };
    let status = reply.status();
    let headers = reply.headers().clone();
    let mut body = Vec::new();
    loop {
        match reply.chunk().await {
            Ok(Some(chunk)) => {
                let room = MAX_BODY.saturating_sub(body.len());
                body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                if body.len() >= MAX_BODY {
                    break;
                }
            }
            Ok(None) => break,
            Err(e) => return no_reply(e),
        }
    }
    classify(kind, status, &headers, &body)
}

pub(crate) fn send_blocking(
    http: &reqwest::blocking::Client,
    request: HttpRequest,
    kind: IntentKind,
) -> Response {
    match exchange_blocking(http, request) {
        Ok((status, headers, body)) => classify(kind, status, &headers, &body),
        Err(no_reply) => no_reply,
    }
}

/// Sends one request and returns the raw reply (the body cut at `MAX_BODY`), or the response
/// that stands for no reply.
pub(crate) fn exchange_blocking(
    http: &reqwest::blocking::Client,
    request: HttpRequest,
) -> Result<(http::StatusCode, http::HeaderMap, Vec<u8>), Response> {
    use std::io::Read;
    let sent = http
        .request(request.method, request.url)
        .headers(request.headers)
        .body(request.body)
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
    Ok((status, headers, body))
}
