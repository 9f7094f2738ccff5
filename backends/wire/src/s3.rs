//! Amazon S3 and S3-compatible stores: each intent as a SigV4-presigned request.
//!
//! | intent | request |
//! |---|---|
//! | `PutIfNoneMatch` | `PUT` with `If-None-Match: *`, `Content-Type`, `Content-MD5` |
//! | `PutIfMatch` | `PUT` with `If-Match: "<etag>"`, `Content-Type`, `Content-MD5` |
//! | `DeleteIfMatch` | `DELETE` with `If-Match: "<etag>"` |
//! | `Get` | `GET`, with `If-None-Match: "<etag>"` when the intent names one |
//!
//! Every header sent but `Content-Length` is signed (its name is in the query's
//! `X-Amz-SignedHeaders`), so a URL captured from a log or a proxy is good only for the very
//! request it was made for, and only for `expiry` after the time it was signed at. Writes and
//! deletes carry `Content-Length` (AWS answers 411 to a PUT without it).
//!
//! The reply is read by the core's S3 table ([`sets3lock_proto::reply::s3`]).

use crate::{assemble, timestamp, HttpRequest, WireError};
use bytes::Bytes;
use core::fmt;
use core::time::Duration;
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use rusty_s3::actions::S3Action as _;
use sets3lock_proto::{Intent, IntentKind, Response, CONTENT_TYPE};
use std::time::SystemTime;

/// One bucket: where it is and how it is addressed.
///
/// ```
/// let b = sets3lock_wire::s3::Bucket::new("https://s3.eu-west-1.amazonaws.com", "locks", "eu-west-1", false)?;
/// assert_eq!(b.origin(), "https://locks.s3.eu-west-1.amazonaws.com");
/// # Ok::<(), sets3lock_wire::WireError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Bucket {
    inner: rusty_s3::Bucket,
}

impl Bucket {
    /// The bucket `name` in `region` at `endpoint` (`https://s3.<region>.amazonaws.com` for
    /// AWS), addressed by path (`<endpoint>/<name>/<key>`, what most S3-compatible servers
    /// want) or by virtual host (`<name>.<endpoint host>/<key>`, AWS's default).
    pub fn new(
        endpoint: &str,
        name: &str,
        region: &str,
        path_style: bool,
    ) -> Result<Bucket, WireError> {
        let url = crate::endpoint(endpoint)?;
        let style = match path_style {
            true => rusty_s3::UrlStyle::Path,
            false => rusty_s3::UrlStyle::VirtualHost,
        };
        rusty_s3::Bucket::new(url, style, name.to_owned(), region.to_owned())
            .map(|inner| Bucket { inner })
            .map_err(|e| WireError::Bucket {
                name: name.to_owned(),
                reason: e.to_string(),
            })
    }

    /// Where the requests go: scheme, host and port (with the bucket in the host when it is
    /// addressed by virtual host).
    pub fn origin(&self) -> String {
        self.inner.base_url().origin().ascii_serialization()
    }

    /// The bucket's name.
    pub fn name(&self) -> &str {
        self.inner.name()
    }
}

/// What a request is signed with: an access key, its secret, and the session token of
/// temporary credentials. Its `Debug` shows the key's id only.
///
/// ```
/// let keys = sets3lock_wire::s3::Keys::new("AKIDEXAMPLE", "secret").with_token("session");
/// assert_eq!(format!("{keys:?}"), "Keys { access_key: \"AKIDEXAMPLE\", .. }");
/// ```
#[derive(Clone)]
pub struct Keys {
    inner: rusty_s3::Credentials,
}

impl Keys {
    /// A long-term access key and its secret.
    pub fn new(access_key: &str, secret_key: &str) -> Keys {
        Keys {
            inner: rusty_s3::Credentials::new(access_key, secret_key),
        }
    }

    /// The same, as temporary credentials with their session token (sent signed, as
    /// `X-Amz-Security-Token`).
    pub fn with_token(self, session_token: &str) -> Keys {
        Keys {
            inner: rusty_s3::Credentials::new_with_token(
                self.inner.key(),
                self.inner.secret(),
                session_token,
            ),
        }
    }
}

impl fmt::Debug for Keys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keys")
            .field("access_key", &self.inner.key())
            .finish_non_exhaustive()
    }
}

/// The request for `intent` on `key` of `bucket`, presigned with `keys` at `time` (the
/// server's time: a request signed more than `expiry` before or after it reaches the server
/// is refused), valid for `expiry` (at least a second).
pub fn request(
    bucket: &Bucket,
    keys: &Keys,
    key: &str,
    intent: &Intent,
    time: SystemTime,
    expiry: Duration,
) -> Result<HttpRequest, WireError> {
    let time = timestamp(time)?;
    let expiry = expiry.max(Duration::from_secs(1));
    let b = &bucket.inner;
    let creds = Some(&keys.inner);
    let (method, url, mut headers, body) = match intent {
        Intent::PutIfNoneMatch { body } | Intent::PutIfMatch { body, .. } => {
            let mut a = b.put_object(creds, key);
            a.headers_mut().insert("content-type", CONTENT_TYPE);
            a.headers_mut()
                .insert("content-md5", crate::content_md5(body));
            match intent {
                Intent::PutIfMatch { etag, .. } => {
                    a.headers_mut().insert("if-match", etag.header_value())
                }
                _ => a.headers_mut().insert("if-none-match", "*"),
            }
            let url = a.sign_with_time(expiry, &time);
            (Method::PUT, url, headers_of(a.headers_mut()), body.clone())
        }
        Intent::DeleteIfMatch { etag } => {
            let mut a = b.delete_object(creds, key);
            a.headers_mut().insert("if-match", etag.header_value());
            let url = a.sign_with_time(expiry, &time);
            (
                Method::DELETE,
                url,
                headers_of(a.headers_mut()),
                Bytes::new(),
            )
        }
        Intent::Get { if_none_match } => {
            let mut a = b.get_object(creds, key);
            if let Some(etag) = if_none_match {
                a.headers_mut().insert("if-none-match", etag.header_value());
            }
            let url = a.sign_with_time(expiry, &time);
            (Method::GET, url, headers_of(a.headers_mut()), Bytes::new())
        }
    };
    if method != Method::GET {
        headers.insert(http::header::CONTENT_LENGTH, HeaderValue::from(body.len()));
    }
    assemble(method, &url, headers, body)
}

/// A plain `DELETE` of `key` (no condition), presigned like [`request`]'s: only for throw-away
/// keys of your own (a probe of whether the store honours conditions), never for a lock.
pub fn delete(
    bucket: &Bucket,
    keys: &Keys,
    key: &str,
    time: SystemTime,
    expiry: Duration,
) -> Result<HttpRequest, WireError> {
    let time = timestamp(time)?;
    let mut a = bucket.inner.delete_object(Some(&keys.inner), key);
    let url = a.sign_with_time(expiry.max(Duration::from_secs(1)), &time);
    let mut headers = headers_of(a.headers_mut());
    headers.insert(http::header::CONTENT_LENGTH, HeaderValue::from(0));
    assemble(Method::DELETE, &url, headers, Bytes::new())
}

/// What the reply to a request of kind `kind` means for the lock: the core's S3 reply table.
pub fn read<B: AsRef<[u8]>>(kind: IntentKind, reply: &http::Response<B>) -> Response {
    sets3lock_proto::reply::s3::classify(
        kind,
        reply.status(),
        reply.headers(),
        reply.body().as_ref(),
    )
}

/// The version a versioned bucket kept of a write (`x-amz-version-id`), if it keeps versions.
pub fn version_id(reply: &HeaderMap) -> Option<&str> {
    reply
        .get("x-amz-version-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && *v != "null")
}

fn headers_of(map: &rusty_s3::Map<'_>) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for (name, value) in map.iter() {
        // Names and values are ours (content-type, the conditions, ETags that parsed as
        // header-safe, base64), so these conversions cannot fail.
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            headers.insert(n, v);
        }
    }
    headers
}

#[cfg(test)]
mod tests {
    use super::*;
    use sets3lock_proto::ETag;

    fn bucket() -> Bucket {
        Bucket::new("http://127.0.0.1:9000", "bucket", "us-east-1", true).expect("bucket")
    }

    fn at() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_764_500_000)
    }

    fn presign(intent: &Intent) -> HttpRequest {
        let keys = Keys::new("AKID", "secret");
        request(
            &bucket(),
            &keys,
            "locks/job",
            intent,
            at(),
            Duration::from_secs(15),
        )
        .expect("request")
    }

    fn query(r: &HttpRequest, name: &str) -> String {
        let url = url::Url::parse(&r.uri().to_string()).expect("url");
        url.query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default()
    }

    #[test]
    fn put_if_none_match_signs_the_condition_and_sends_it() {
        let r = presign(&Intent::PutIfNoneMatch {
            body: Bytes::from_static(b"{}"),
        });
        assert_eq!(r.method(), Method::PUT);
        assert_eq!(r.uri().path(), "/bucket/locks/job");
        assert_eq!(
            query(&r, "X-Amz-SignedHeaders"),
            "content-md5;content-type;host;if-none-match"
        );
        // MD5("{}"), base64.
        assert_eq!(r.headers()["content-md5"], "mZFLkyvTelC5g8XnyQrpOw==");
        assert_eq!(r.headers()["if-none-match"], "*");
        assert_eq!(r.headers()["content-type"], "application/json");
        assert_eq!(r.headers()["content-length"], "2");
        assert_eq!(query(&r, "X-Amz-Date"), "20251130T105320Z");
        assert_eq!(query(&r, "X-Amz-Expires"), "15");
        assert_eq!(r.body().as_ref(), b"{}");
    }

    #[test]
    fn if_match_carries_the_quoted_etag_for_put_and_delete() {
        let etag = ETag::parse("abc").expect("etag");
        let put = presign(&Intent::PutIfMatch {
            etag: etag.clone(),
            body: Bytes::new(),
        });
        assert_eq!(put.headers()["if-match"], "\"abc\"");
        assert_eq!(
            query(&put, "X-Amz-SignedHeaders"),
            "content-md5;content-type;host;if-match"
        );
        let del = presign(&Intent::DeleteIfMatch { etag });
        assert_eq!(del.method(), Method::DELETE);
        assert_eq!(del.headers()["if-match"], "\"abc\"");
        assert_eq!(del.headers()["content-length"], "0");
        assert_eq!(query(&del, "X-Amz-SignedHeaders"), "host;if-match");
    }

    #[test]
    fn get_is_conditional_only_when_asked() {
        let plain = presign(&Intent::Get {
            if_none_match: None,
        });
        assert_eq!(query(&plain, "X-Amz-SignedHeaders"), "host");
        assert!(plain.headers().is_empty());
        let cond = presign(&Intent::Get {
            if_none_match: Some(ETag::parse("e").expect("etag")),
        });
        assert_eq!(cond.headers()["if-none-match"], "\"e\"");
    }

    #[test]
    fn a_session_token_is_signed_and_the_same_arguments_give_the_same_bytes() {
        let keys = Keys::new("AKID", "secret").with_token("tok");
        let get = Intent::Get {
            if_none_match: None,
        };
        let sign = || {
            request(&bucket(), &keys, "k", &get, at(), Duration::from_secs(15)).expect("request")
        };
        let r = sign();
        assert_eq!(query(&r, "X-Amz-Security-Token"), "tok");
        assert_eq!(r.uri(), sign().uri());
        let later = request(
            &bucket(),
            &keys,
            "k",
            &get,
            at() + Duration::from_secs(1),
            Duration::from_secs(15),
        )
        .expect("request");
        assert_ne!(r.uri(), later.uri(), "the time is signed");
    }

    #[test]
    fn virtual_host_addressing_puts_the_bucket_in_the_host_and_odd_keys_are_encoded() {
        let b = Bucket::new(
            "https://s3.eu-west-1.amazonaws.com",
            "locks",
            "eu-west-1",
            false,
        )
        .expect("bucket");
        let r = request(
            &b,
            &Keys::new("AKID", "secret"),
            "a b/c?d#e%f",
            &Intent::Get {
                if_none_match: None,
            },
            at(),
            Duration::from_secs(15),
        )
        .expect("request");
        assert_eq!(r.uri().host(), Some("locks.s3.eu-west-1.amazonaws.com"));
        assert_eq!(r.uri().path(), "/a%20b/c%3Fd%23e%25f");
    }

    #[test]
    fn bad_arguments_are_named_not_panicked_on() {
        assert!(matches!(
            Bucket::new("ftp://host", "b", "r", true),
            Err(WireError::Endpoint { .. })
        ));
        assert!(matches!(
            Bucket::new("not a url", "b", "r", true),
            Err(WireError::Endpoint { .. })
        ));
        let before_1970 = SystemTime::UNIX_EPOCH - Duration::from_secs(86_400 * 365 * 2000);
        let get = Intent::Get {
            if_none_match: None,
        };
        let keys = Keys::new("AKID", "secret");
        assert_eq!(
            request(&bucket(), &keys, "k", &get, before_1970, Duration::ZERO).err(),
            Some(WireError::Time)
        );
    }

    #[test]
    fn the_version_id_is_read_unless_the_bucket_keeps_none() {
        let mut h = HeaderMap::new();
        assert_eq!(version_id(&h), None);
        h.insert("x-amz-version-id", HeaderValue::from_static("null"));
        assert_eq!(version_id(&h), None);
        h.insert("x-amz-version-id", HeaderValue::from_static("3sL4kqtJ"));
        assert_eq!(version_id(&h), Some("3sL4kqtJ"));
    }
}
