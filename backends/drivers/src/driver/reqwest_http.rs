//! The tokio face's HTTP client: reqwest's async client (feature `tokio`), no redirects, no
//! retries, each request within its own time limit.

use crate::driver::http::{roots, Roots, Settings, MAX_BODY};
use crate::driver::store::BoxFuture;
use crate::rt::{HttpClient, HttpFailure};
use crate::Error;
use bytes::Bytes;
use core::time::Duration;
use sets3lock_proto::{Ambiguity, Response};
use url::Url;

/// reqwest's async client (tokio's runtime): never retries or redirects.
#[derive(Debug)]
pub(crate) struct ReqwestAsync(reqwest::Client);

impl ReqwestAsync {
    /// A client for these settings.
    pub(crate) fn new(settings: &Settings) -> Result<ReqwestAsync, Error> {
        let connect = settings.request_timeout.min(Duration::from_secs(10));
        let builder = reqwest::Client::builder()
            .connect_timeout(connect)
            .redirect(reqwest::redirect::Policy::none())
            .retry(reqwest::retry::never());
        let builder = match settings.direct {
            true => builder.no_proxy(),
            false => builder,
        };
        let builder = match roots(settings)? {
            Roots::NotNeeded => builder.tls_certs_only([]),
            Roots::Bundle(certs) => {
                let certs = certs.iter().map(|der| reqwest::Certificate::from_der(der));
                let certs: Result<Vec<_>, _> = certs.collect();
                builder.tls_certs_only(certs.map_err(Error::http_client)?)
            }
            Roots::System => builder,
        };
        builder
            .build()
            .map(ReqwestAsync)
            .map_err(Error::http_client)
    }
}

impl HttpClient for ReqwestAsync {
    fn send(
        &self,
        request: http::Request<Bytes>,
        timeout: Duration,
    ) -> BoxFuture<'_, Result<http::Response<Bytes>, HttpFailure>> {
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let url = Url::parse(&parts.uri.to_string())
                .map_err(|e| HttpFailure::NotSent(format!("not a URL: {e}")))?;
            let mut builder = self
                .0
                .request(parts.method, url)
                .headers(parts.headers)
                .timeout(timeout);
            if !body.is_empty() {
                builder = builder.body(body);
            }
            let mut reply = builder.send().await.map_err(failure)?;
            let mut out = http::Response::builder().status(reply.status());
            if let Some(h) = out.headers_mut() {
                *h = reply.headers().clone();
            }
            let mut body = Vec::new();
            while let Some(chunk) = reply.chunk().await.map_err(failure)? {
                let room = MAX_BODY.saturating_sub(body.len());
                body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                if body.len() >= MAX_BODY {
                    break;
                }
            }
            out.body(Bytes::from(body))
                .map_err(|e| HttpFailure::Broken(e.to_string()))
        })
    }
}

/// What a reqwest error means for the request: not sent, timed out, or broken.
fn failure(e: reqwest::Error) -> HttpFailure {
    match no_reply(e) {
        Response::Ambiguous(Ambiguity::NotSent { detail }) => HttpFailure::NotSent(detail),
        Response::Ambiguous(Ambiguity::Connection { detail }) => HttpFailure::Broken(detail),
        _ => HttpFailure::Timeout,
    }
}

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
    // A refused server certificate ends the handshake before the request is written.
    if let Some(why) = super::certificate::refused(&detail) {
        return Response::Ambiguous(Ambiguity::NotSent { detail: why });
    }
    Response::Ambiguous(if sent {
        Ambiguity::Connection { detail }
    } else {
        Ambiguity::NotSent { detail }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_server_certificate_that_is_a_ca_is_named_in_one_line_and_nothing_was_sent() {
        let (endpoint, settings) =
            crate::driver::certificate::tests::server_with_a_ca_as_its_certificate(1);
        let client = ReqwestAsync::new(&settings).expect("client");
        let request = http::Request::get(format!("{endpoint}/b/k"))
            .body(Bytes::new())
            .expect("request");
        let got = client.send(request, Duration::from_secs(5)).await;
        crate::driver::certificate::tests::refused_as_a_ca(got);
    }
}
