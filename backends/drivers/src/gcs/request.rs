//! Intent → GCS JSON API request. Writes are multipart uploads (the object's metadata and the
//! record in one request), the only upload whose `ifGenerationMatch` every GCS server honours;
//! reads are `alt=media` downloads, which carry the generation in `x-goog-generation`.

use crate::driver::http::HttpRequest;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method};
use sets3lock_proto::{Intent, CONTENT_TYPE};
use url::Url;

/// The request for `intent` on `key` of `bucket`, at the endpoint `base`, with the bearer
/// `token` (none for an emulator).
pub(crate) fn request(
    base: &Url,
    bucket: &str,
    key: &str,
    intent: &Intent,
    token: Option<&str>,
) -> HttpRequest {
    let (method, url, body, content_type) = match intent {
        Intent::PutIfNoneMatch { body } => upload(base, bucket, key, "0", body),
        Intent::PutIfMatch { etag, body } => upload(base, bucket, key, etag.as_str(), body),
        Intent::DeleteIfMatch { etag } => {
            let mut url = object_url(base, bucket, key);
            url.query_pairs_mut()
                .append_pair("ifGenerationMatch", etag.as_str());
            (Method::DELETE, url, Bytes::new(), None)
        }
        Intent::Get { if_none_match } => {
            let mut url = object_url(base, bucket, key);
            url.query_pairs_mut().append_pair("alt", "media");
            if let Some(g) = if_none_match {
                url.query_pairs_mut()
                    .append_pair("ifGenerationNotMatch", g.as_str());
            }
            (Method::GET, url, Bytes::new(), None)
        }
    };
    finish(method, url, body, content_type, token)
}

/// A plain DELETE of `key` (no condition): only for throw-away keys of our own.
pub(crate) fn plain_delete(
    base: &Url,
    bucket: &str,
    key: &str,
    token: Option<&str>,
) -> HttpRequest {
    finish(
        Method::DELETE,
        object_url(base, bucket, key),
        Bytes::new(),
        None,
        token,
    )
}

fn finish(
    method: Method,
    url: Url,
    body: Bytes,
    content_type: Option<String>,
    token: Option<&str>,
) -> HttpRequest {
    let mut headers = HeaderMap::new();
    if let Some(mut t) = token.and_then(|t| HeaderValue::from_str(&format!("Bearer {t}")).ok()) {
        t.set_sensitive(true);
        headers.insert(http::header::AUTHORIZATION, t);
    }
    if let Some(c) = content_type.and_then(|c| HeaderValue::from_str(&c).ok()) {
        headers.insert(http::header::CONTENT_TYPE, c);
    }
    if method != Method::GET {
        headers.insert(http::header::CONTENT_LENGTH, HeaderValue::from(body.len()));
    }
    HttpRequest {
        method,
        url,
        headers,
        body,
    }
}

/// `…/storage/v1/b/BUCKET/o/KEY`, the key one segment (its `/` encoded, as GCS requires).
fn object_url(base: &Url, bucket: &str, key: &str) -> Url {
    let mut url = base.clone();
    if let Ok(mut path) = url.path_segments_mut() {
        path.pop_if_empty()
            .extend(["storage", "v1", "b", bucket, "o"])
            .push(key);
    }
    url
}

fn upload(
    base: &Url,
    bucket: &str,
    key: &str,
    generation: &str,
    record: &Bytes,
) -> (Method, Url, Bytes, Option<String>) {
    let mut url = base.clone();
    if let Ok(mut path) = url.path_segments_mut() {
        path.pop_if_empty()
            .extend(["upload", "storage", "v1", "b", bucket, "o"]);
    }
    url.query_pairs_mut()
        .append_pair("uploadType", "multipart")
        .append_pair("name", key)
        .append_pair("ifGenerationMatch", generation);
    // A boundary the record cannot contain: it is named after the record's own digest.
    let boundary = {
        use md5::Digest as _;
        let digest = md5::Md5::digest(record);
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        format!("sets3lock-{hex}")
    };
    let metadata = serde_json::json!({ "name": key, "contentType": CONTENT_TYPE });
    let mut body = Vec::with_capacity(record.len() + 256);
    body.extend_from_slice(
        format!("--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n{metadata}\r\n--{boundary}\r\nContent-Type: {CONTENT_TYPE}\r\n\r\n")
            .as_bytes(),
    );
    body.extend_from_slice(record);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    let content_type = format!("multipart/related; boundary={boundary}");
    (Method::POST, url, Bytes::from(body), Some(content_type))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sets3lock_proto::ETag;

    fn base() -> Url {
        Url::parse("http://127.0.0.1:4443").expect("url")
    }

    #[test]
    fn a_create_is_a_multipart_upload_on_generation_zero() {
        let r = request(
            &base(),
            "b",
            "locks/job",
            &Intent::PutIfNoneMatch {
                body: Bytes::from_static(b"{\"v\":1}"),
            },
            Some("tok"),
        );
        assert_eq!(r.method, Method::POST);
        assert_eq!(
            r.url.as_str(),
            "http://127.0.0.1:4443/upload/storage/v1/b/b/o?uploadType=multipart&name=locks%2Fjob&ifGenerationMatch=0"
        );
        assert_eq!(r.headers["authorization"], "Bearer tok");
        let ct = r.headers["content-type"].to_str().expect("ascii");
        let boundary = ct
            .strip_prefix("multipart/related; boundary=")
            .expect("multipart");
        let body = String::from_utf8(r.body.to_vec()).expect("utf-8");
        assert!(body.starts_with(&format!("--{boundary}\r\n")), "{body}");
        assert!(body.contains("\r\n\r\n{\"v\":1}\r\n"), "{body}");
        assert!(body.ends_with(&format!("\r\n--{boundary}--\r\n")), "{body}");
        assert!(body.contains("\"name\":\"locks/job\""), "{body}");
    }

    #[test]
    fn replace_delete_and_read_name_the_generation() {
        let g = ETag::parse("1733100000000000").expect("generation");
        let put = request(
            &base(),
            "b",
            "k",
            &Intent::PutIfMatch {
                etag: g.clone(),
                body: Bytes::new(),
            },
            None,
        );
        assert!(put
            .url
            .as_str()
            .ends_with("ifGenerationMatch=1733100000000000"));
        assert!(put.headers.get("authorization").is_none());
        let del = request(
            &base(),
            "b",
            "a/b",
            &Intent::DeleteIfMatch { etag: g.clone() },
            None,
        );
        assert_eq!(
            del.url.as_str(),
            "http://127.0.0.1:4443/storage/v1/b/b/o/a%2Fb?ifGenerationMatch=1733100000000000"
        );
        let get = request(
            &base(),
            "b",
            "k",
            &Intent::Get {
                if_none_match: Some(g),
            },
            None,
        );
        assert_eq!(
            get.url.as_str(),
            "http://127.0.0.1:4443/storage/v1/b/b/o/k?alt=media&ifGenerationNotMatch=1733100000000000"
        );
        assert!(get.headers.get("content-length").is_none());
    }
}
