//! The lock's requests and replies on the wire, as pure functions: for each store, the HTTP
//! request one of the core's [`Intent`]s becomes (addressed, conditioned, signed), and the
//! core's reading of the reply.
//!
//! This is the layer between the sans-IO core ([`sets3lock_proto`]) and a transport. The
//! drivers of the `sets3lock` crate send exactly these requests; an embedder with a runtime
//! of their own (another executor, an event loop, a WASM host whose only HTTP is `fetch`)
//! sends them with whatever HTTP it has:
//!
//! 1. the core's [`Lock`](sets3lock_proto::Lock) hands out a request (an intent on its key);
//! 2. the store's `request` function here turns it into an [`http::Request`], signed with the
//!    material you pass (keys, a SAS, a token) at the time you pass (the server's, if you
//!    track it);
//! 3. you send it, within the time the core allows (`Lock::request_limit`);
//! 4. the store's `read` function turns the reply into the core's [`Response`], which you
//!    hand back to the core. No reply at all (a timeout, a reset) is
//!    [`Response::Ambiguous`], which you build yourself.
//!
//! Nothing here does I/O, reads a clock, or keeps state: the same arguments give the same
//! bytes. The stores: [`s3`] (Amazon S3 and S3-compatible stores, SigV4 presigned), [`azure`]
//! (feature `azure`: Shared Key, SAS or bearer token) and [`gcs`] (feature `gcs`: the JSON
//! API with a bearer token). An S3-only build (`default-features = false`) compiles no Azure
//! or GCS code.
//!
//! ```
//! use bytes::Bytes;
//! use std::time::{Duration, SystemTime};
//! use sets3lock_proto::{Intent, Response};
//! use sets3lock_wire::s3;
//!
//! let bucket = s3::Bucket::new("http://127.0.0.1:8333", "locks", "us-east-1", true)?;
//! let keys = s3::Keys::new("AKIDEXAMPLE", "secret");
//! let create = Intent::PutIfNoneMatch { body: Bytes::from_static(b"{}") };
//! let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_764_500_000);
//! let request = s3::request(&bucket, &keys, "jobs/nightly", &create, at, Duration::from_secs(15))?;
//! assert_eq!(request.method(), http::Method::PUT);
//! assert_eq!(request.headers()["if-none-match"], "*");
//!
//! // The store's answer, read by the table the core keeps for S3.
//! let reply = http::Response::builder()
//!     .status(200)
//!     .header("etag", "\"9a0364b9e99bb480dd25e1f0284c8555\"")
//!     .body(Bytes::new())?;
//! let read = s3::read(create.kind(), &reply);
//! assert!(matches!(read, Response::Written { .. }));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The requests carry credentials (a presigned URL's signature, an `Authorization` header
//! marked sensitive): log them with care.

#![forbid(unsafe_code)]

pub mod s3;

#[cfg(feature = "azure")]
pub mod azure;

#[cfg(feature = "gcs")]
pub mod gcs;

mod digest;
mod error;

pub use digest::content_md5;
pub use error::WireError;
pub use sets3lock_proto::{Intent, IntentKind, Response};

use bytes::Bytes;
use http::{HeaderMap, Method};
use std::time::SystemTime;

/// An HTTP request as this layer builds it: method, URI, headers (every one to send, with
/// `Content-Length` on all but GETs), and the body. The `Host` header is the URI's.
pub type HttpRequest = http::Request<Bytes>;

/// The time `at` as the signers want it: a time before 1970 or past year 9999 is refused.
fn timestamp(at: SystemTime) -> Result<jiff::Timestamp, WireError> {
    if at < SystemTime::UNIX_EPOCH {
        return Err(WireError::Time);
    }
    jiff::Timestamp::try_from(at).map_err(|_| WireError::Time)
}

/// The request these parts make. A URL that is not a URI `http` accepts (it cannot happen
/// with the URLs built here, whose every unusual byte is percent-encoded) is refused, not
/// sent changed.
fn assemble(
    method: Method,
    url: &url::Url,
    headers: HeaderMap,
    body: Bytes,
) -> Result<HttpRequest, WireError> {
    let uri = http::Uri::try_from(url.as_str()).map_err(|_| WireError::Uri)?;
    let mut request = http::Request::new(body);
    *request.method_mut() = method;
    *request.uri_mut() = uri;
    *request.headers_mut() = headers;
    Ok(request)
}

/// The endpoint `endpoint`, parsed: `http` or `https`, with a host.
fn endpoint(endpoint: &str) -> Result<url::Url, WireError> {
    let bad = |reason: &str| WireError::Endpoint {
        endpoint: endpoint.to_owned(),
        reason: reason.to_owned(),
    };
    let url = url::Url::parse(endpoint).map_err(|e| bad(&e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad("not http or https"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad("no host"));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(bad("a query or a fragment has no place in an endpoint"));
    }
    Ok(url)
}

/// `name` (of `what`, a container or a bucket) as one non-empty path segment of a URL.
#[cfg(any(feature = "azure", feature = "gcs"))]
fn one_segment(name: &str, what: &str) -> Result<(), WireError> {
    match name.is_empty() || name.contains('/') {
        true => Err(WireError::Bucket {
            name: name.to_owned(),
            reason: format!("{what} is one non-empty path segment"),
        }),
        false => Ok(()),
    }
}

/// `value` as a header value (our own values always are; a token or SAS given to us may not
/// be).
#[cfg(any(feature = "azure", feature = "gcs"))]
fn header_value(name: &'static str, value: &str) -> Result<http::HeaderValue, WireError> {
    http::HeaderValue::from_str(value).map_err(|_| WireError::Header { name })
}
