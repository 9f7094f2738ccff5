//! Intent → HTTP request: a rusty-s3 presigned URL plus exactly the headers it signed.
//!
//! Every header we send is signed (the conditions, the content type, and on PUTs the body's
//! `Content-MD5`), so a captured URL is good only for the very request it was made for, and
//! only for `Options::presign_expiry` after it was signed.

use crate::driver::http::{content_md5, HttpRequest};
use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use rusty_s3::actions::S3Action;
use sets3lock_proto::{Intent, CONTENT_TYPE};

/// Presigns `intent` on any key of `bucket`.
pub(crate) fn presign_key(
    bucket: &rusty_s3::Bucket,
    credentials: &rusty_s3::Credentials,
    expiry: std::time::Duration,
    key: &str,
    intent: &Intent,
    time: &jiff::Timestamp,
) -> HttpRequest {
    let creds = Some(credentials);
    let (method, url, signed, body) = match intent {
        Intent::PutIfNoneMatch { body } => {
            let mut a = bucket.put_object(creds, key);
            a.headers_mut().insert("content-type", CONTENT_TYPE);
            a.headers_mut().insert("content-md5", content_md5(body));
            a.headers_mut().insert("if-none-match", "*");
            let url = a.sign_with_time(expiry, time);
            (Method::PUT, url, headers_of(a.headers_mut()), body.clone())
        }
        Intent::PutIfMatch { etag, body } => {
            let mut a = bucket.put_object(creds, key);
            a.headers_mut().insert("content-type", CONTENT_TYPE);
            a.headers_mut().insert("content-md5", content_md5(body));
            a.headers_mut().insert("if-match", etag.header_value());
            let url = a.sign_with_time(expiry, time);
            (Method::PUT, url, headers_of(a.headers_mut()), body.clone())
        }
        Intent::DeleteIfMatch { etag } => {
            let mut a = bucket.delete_object(creds, key);
            a.headers_mut().insert("if-match", etag.header_value());
            let url = a.sign_with_time(expiry, time);
            (
                Method::DELETE,
                url,
                headers_of(a.headers_mut()),
                Bytes::new(),
            )
        }
        Intent::Get { if_none_match } => {
            let mut a = bucket.get_object(creds, key);
            if let Some(etag) = if_none_match {
                a.headers_mut().insert("if-none-match", etag.header_value());
            }
            let url = a.sign_with_time(expiry, time);
            (Method::GET, url, headers_of(a.headers_mut()), Bytes::new())
        }
    };
    let mut headers = signed;
    if method != Method::GET {
        // Explicit, even for an empty DELETE: AWS answers 411 to a PUT without it.
        headers.insert(http::header::CONTENT_LENGTH, HeaderValue::from(body.len()));
    }
    HttpRequest {
        method,
        url,
        headers,
        body,
    }
}

/// Presigns a plain `DELETE` (no condition) on any key of `bucket`: only for throw-away keys
/// of our own (the store check's probe), never for a lock.
pub(crate) fn presign_plain_delete(
    bucket: &rusty_s3::Bucket,
    credentials: &rusty_s3::Credentials,
    expiry: std::time::Duration,
    key: &str,
    time: &jiff::Timestamp,
) -> HttpRequest {
    let mut a = bucket.delete_object(Some(credentials), key);
    let url = a.sign_with_time(expiry, time);
    let mut headers = headers_of(a.headers_mut());
    headers.insert(http::header::CONTENT_LENGTH, HeaderValue::from(0));
    HttpRequest {
        method: Method::DELETE,
        url,
        headers,
        body: Bytes::new(),
    }
}

fn headers_of(map: &rusty_s3::Map<'_>) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for (name, value) in map.iter() {
        // Names and values are ours (content-type, if-match, if-none-match, ETags that parsed
        // as header-safe), so these conversions cannot fail.
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
    use url::Url;

    fn target() -> rusty_s3::Bucket {
        rusty_s3::Bucket::new(
            Url::parse("http://127.0.0.1:9000").expect("url"),
            rusty_s3::UrlStyle::Path,
            "bucket".to_owned(),
            "us-east-1".to_owned(),
        )
        .expect("bucket")
    }

    fn presign(
        bucket: &rusty_s3::Bucket,
        credentials: &rusty_s3::Credentials,
        intent: &Intent,
        time: &jiff::Timestamp,
    ) -> HttpRequest {
        presign_key(
            bucket,
            credentials,
            std::time::Duration::from_secs(15),
            "locks/job",
            intent,
            time,
        )
    }

    fn creds() -> rusty_s3::Credentials {
        rusty_s3::Credentials::new("AKID", "secret")
    }

    fn signed_headers(url: &Url) -> String {
        url.query_pairs()
            .find(|(k, _)| k == "X-Amz-SignedHeaders")
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default()
    }

    #[test]
    fn put_if_none_match_signs_the_condition_and_sends_it() {
        let t = target();
        let time = jiff::Timestamp::from_second(1_764_500_000).expect("time");
        let r = presign(
            &t,
            &creds(),
            &Intent::PutIfNoneMatch {
                body: Bytes::from_static(b"{}"),
            },
            &time,
        );
        assert_eq!(r.method, Method::PUT);
        assert_eq!(r.url.path(), "/bucket/locks/job");
        assert_eq!(
            signed_headers(&r.url),
            "content-md5;content-type;host;if-none-match"
        );
        // MD5("{}"), base64.
        assert_eq!(r.headers["content-md5"], "mZFLkyvTelC5g8XnyQrpOw==");
        assert_eq!(r.headers["if-none-match"], "*");
        assert_eq!(r.headers["content-type"], "application/json");
        assert_eq!(r.headers["content-length"], "2");
        assert!(r.url.as_str().contains("X-Amz-Date=20251130T"));
        assert!(r.url.as_str().contains("X-Amz-Expires=15"));
    }

    #[test]
    fn if_match_carries_the_quoted_etag_for_put_and_delete() {
        let t = target();
        let time = jiff::Timestamp::from_second(1_764_500_000).expect("time");
        let etag = ETag::parse("abc").expect("etag");
        let put = presign(
            &t,
            &creds(),
            &Intent::PutIfMatch {
                etag: etag.clone(),
                body: Bytes::new(),
            },
            &time,
        );
        assert_eq!(put.headers["if-match"], "\"abc\"");
        assert_eq!(
            signed_headers(&put.url),
            "content-md5;content-type;host;if-match"
        );
        let del = presign(&t, &creds(), &Intent::DeleteIfMatch { etag }, &time);
        assert_eq!(del.method, Method::DELETE);
        assert_eq!(del.headers["if-match"], "\"abc\"");
        assert_eq!(del.headers["content-length"], "0");
        assert_eq!(signed_headers(&del.url), "host;if-match");
    }

    #[test]
    fn get_is_conditional_only_when_asked() {
        let t = target();
        let time = jiff::Timestamp::from_second(1_764_500_000).expect("time");
        let plain = presign(
            &t,
            &creds(),
            &Intent::Get {
                if_none_match: None,
            },
            &time,
        );
        assert_eq!(signed_headers(&plain.url), "host");
        assert!(plain.headers.is_empty());
        let cond = presign(
            &t,
            &creds(),
            &Intent::Get {
                if_none_match: Some(ETag::parse("e").expect("etag")),
            },
            &time,
        );
        assert_eq!(cond.headers["if-none-match"], "\"e\"");
    }
}
