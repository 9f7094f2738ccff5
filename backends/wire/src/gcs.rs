//! Google Cloud Storage's JSON API: each intent as an upload, a delete or a download, with a
//! generation condition.
//!
//! | intent | request |
//! |---|---|
//! | `PutIfNoneMatch` | `POST …/upload/storage/v1/b/<bucket>/o?uploadType=multipart&name=<key>&ifGenerationMatch=0` |
//! | `PutIfMatch` | the same with `ifGenerationMatch=<generation>` |
//! | `DeleteIfMatch` | `DELETE …/storage/v1/b/<bucket>/o/<key>?ifGenerationMatch=<generation>` |
//! | `Get` | `GET …/storage/v1/b/<bucket>/o/<key>?alt=media`, with `ifGenerationNotMatch=<generation>` when the intent names one |
//!
//! On GCS the core's ETag is the object's generation. Writes are multipart uploads (the
//! object's metadata and the record in one body), the only upload whose `ifGenerationMatch`
//! every GCS server honours; reads are `alt=media` downloads, which carry the generation in
//! `x-goog-generation`. Requests carry `Authorization: Bearer <token>` when given a token
//! (an emulator takes none). Nothing is dated: no time is needed.
//!
//! GCS takes about one write per second on an object name and answers more with 429, which
//! the reply table reads as an unknown outcome: a driver should hold its next write of that
//! key a second (the `sets3lock` drivers do).
//!
//! The reply is read by the core's GCS table ([`sets3lock_proto::reply::gcs`]).

use crate::{assemble, header_value, HttpRequest, WireError};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method};
use sets3lock_proto::{Intent, IntentKind, Response, CONTENT_TYPE};
use url::Url;

/// One bucket at one endpoint (`https://storage.googleapis.com`, or an emulator's).
///
/// ```
/// let b = sets3lock_wire::gcs::Bucket::new("https://storage.googleapis.com", "locks")?;
/// assert_eq!(b.name(), "locks");
/// # Ok::<(), sets3lock_wire::WireError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Bucket {
    base: Url,
    name: String,
}

impl Bucket {
    /// The bucket `name` at `endpoint`.
    pub fn new(endpoint: &str, name: &str) -> Result<Bucket, WireError> {
        let base = crate::endpoint(endpoint)?;
        crate::one_segment(name, "a bucket")?;
        Ok(Bucket {
            base,
            name: name.to_owned(),
        })
    }

    /// The bucket's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `…/storage/v1/b/BUCKET/o/KEY`, the key one segment (its `/` encoded, as GCS requires).
    fn object_url(&self, key: &str) -> Url {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty()
                .extend(["storage", "v1", "b", &self.name, "o"])
                .push(key);
        }
        url
    }
}

/// The request for `intent` on `key` of `bucket`, with the bearer `token` (none for an
/// emulator that takes none).
///
/// ```
/// use sets3lock_proto::{ETag, Intent};
/// use sets3lock_wire::gcs;
///
/// let b = gcs::Bucket::new("http://127.0.0.1:4443", "locks")?;
/// let read = Intent::Get { if_none_match: Some(ETag::parse("1733100000000000")?) };
/// let r = gcs::request(&b, None, "jobs/nightly", &read)?;
/// assert_eq!(
///     r.uri(),
///     "http://127.0.0.1:4443/storage/v1/b/locks/o/jobs%2Fnightly?alt=media&ifGenerationNotMatch=1733100000000000"
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn request(
    bucket: &Bucket,
    token: Option<&str>,
    key: &str,
    intent: &Intent,
) -> Result<HttpRequest, WireError> {
    let (method, url, body, content_type) = match intent {
        Intent::PutIfNoneMatch { body } => upload(bucket, key, "0", body),
        Intent::PutIfMatch { etag, body } => upload(bucket, key, etag.as_str(), body),
        Intent::DeleteIfMatch { etag } => {
            let mut url = bucket.object_url(key);
            url.query_pairs_mut()
                .append_pair("ifGenerationMatch", etag.as_str());
            (Method::DELETE, url, Bytes::new(), None)
        }
        Intent::Get { if_none_match } => {
            let mut url = bucket.object_url(key);
            url.query_pairs_mut().append_pair("alt", "media");
            if let Some(g) = if_none_match {
                url.query_pairs_mut()
                    .append_pair("ifGenerationNotMatch", g.as_str());
            }
            (Method::GET, url, Bytes::new(), None)
        }
    };
    finish(method, &url, body, content_type, token)
}

/// A plain `DELETE` of `key` (no condition): only for throw-away keys of your own (a probe
/// of whether the store honours conditions), never for a lock.
pub fn delete(bucket: &Bucket, token: Option<&str>, key: &str) -> Result<HttpRequest, WireError> {
    let url = bucket.object_url(key);
    finish(Method::DELETE, &url, Bytes::new(), None, token)
}

/// What the reply to a request of kind `kind` means for the lock: the core's GCS reply table.
pub fn read<B: AsRef<[u8]>>(kind: IntentKind, reply: &http::Response<B>) -> Response {
    sets3lock_proto::reply::gcs::classify(
        kind,
        reply.status(),
        reply.headers(),
        reply.body().as_ref(),
    )
}

fn finish(
    method: Method,
    url: &Url,
    body: Bytes,
    content_type: Option<String>,
    token: Option<&str>,
) -> Result<HttpRequest, WireError> {
    let mut headers = HeaderMap::new();
    if let Some(token) = token {
        let mut value = header_value("Google token", &format!("Bearer {token}"))?;
        value.set_sensitive(true);
        headers.insert(http::header::AUTHORIZATION, value);
    }
    if let Some(c) = content_type.and_then(|c| HeaderValue::from_str(&c).ok()) {
        headers.insert(http::header::CONTENT_TYPE, c);
    }
    if method != Method::GET {
        headers.insert(http::header::CONTENT_LENGTH, HeaderValue::from(body.len()));
    }
    assemble(method, url, headers, body)
}

fn upload(
    bucket: &Bucket,
    key: &str,
    generation: &str,
    record: &Bytes,
) -> (Method, Url, Bytes, Option<String>) {
    let mut url = bucket.base.clone();
    if let Ok(mut path) = url.path_segments_mut() {
        path.pop_if_empty()
            .extend(["upload", "storage", "v1", "b", &bucket.name, "o"]);
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

    fn bucket() -> Bucket {
        Bucket::new("http://127.0.0.1:4443", "b").expect("bucket")
    }

    #[test]
    fn a_create_is_a_multipart_upload_on_generation_zero() {
        let create = Intent::PutIfNoneMatch {
            body: Bytes::from_static(b"{\"v\":1}"),
        };
        let r = request(&bucket(), Some("tok"), "locks/job", &create).expect("request");
        assert_eq!(r.method(), Method::POST);
        assert_eq!(
            r.uri(),
            "http://127.0.0.1:4443/upload/storage/v1/b/b/o?uploadType=multipart&name=locks%2Fjob&ifGenerationMatch=0"
        );
        assert_eq!(r.headers()["authorization"], "Bearer tok");
        assert!(r.headers()["authorization"].is_sensitive());
        let ct = r.headers()["content-type"].to_str().expect("ascii");
        let boundary = ct
            .strip_prefix("multipart/related; boundary=")
            .expect("multipart");
        let body = String::from_utf8(r.body().to_vec()).expect("utf-8");
        assert!(body.starts_with(&format!("--{boundary}\r\n")), "{body}");
        assert!(body.contains("\r\n\r\n{\"v\":1}\r\n"), "{body}");
        assert!(body.ends_with(&format!("\r\n--{boundary}--\r\n")), "{body}");
        assert!(body.contains("\"name\":\"locks/job\""), "{body}");
        assert_eq!(r.headers()["content-length"], body.len().to_string());
    }

    #[test]
    fn replace_delete_and_read_name_the_generation() {
        let g = ETag::parse("1733100000000000").expect("generation");
        let put = Intent::PutIfMatch {
            etag: g.clone(),
            body: Bytes::new(),
        };
        let put = request(&bucket(), None, "k", &put).expect("request");
        assert!(put
            .uri()
            .to_string()
            .ends_with("ifGenerationMatch=1733100000000000"));
        assert!(put.headers().get("authorization").is_none());
        let del = Intent::DeleteIfMatch { etag: g.clone() };
        let del = request(&bucket(), None, "a/b", &del).expect("request");
        assert_eq!(
            del.uri(),
            "http://127.0.0.1:4443/storage/v1/b/b/o/a%2Fb?ifGenerationMatch=1733100000000000"
        );
        let get = Intent::Get {
            if_none_match: Some(g),
        };
        let get = request(&bucket(), None, "k", &get).expect("request");
        assert_eq!(
            get.uri(),
            "http://127.0.0.1:4443/storage/v1/b/b/o/k?alt=media&ifGenerationNotMatch=1733100000000000"
        );
        assert!(get.headers().get("content-length").is_none());
    }

    #[test]
    fn a_token_that_is_no_header_value_is_refused() {
        let get = Intent::Get {
            if_none_match: None,
        };
        assert_eq!(
            request(&bucket(), Some("a\r\nb"), "k", &get).err(),
            Some(WireError::Header {
                name: "Google token"
            })
        );
        assert!(Bucket::new("http://127.0.0.1:4443", "").is_err());
    }
}
