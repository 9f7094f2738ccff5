//! Azure Blob Storage: each intent as a Put, Delete or Get Blob request.
//!
//! | intent | request |
//! |---|---|
//! | `PutIfNoneMatch` | `PUT` (Put Blob, `x-ms-blob-type: BlockBlob`) with `If-None-Match: *`, `Content-Type`, `Content-MD5` |
//! | `PutIfMatch` | the same with `If-Match: "<etag>"` |
//! | `DeleteIfMatch` | `DELETE` (Delete Blob) with `If-Match: "<etag>"` |
//! | `Get` | `GET` (Get Blob), with `If-None-Match: "<etag>"` when the intent names one |
//!
//! Every request carries `x-ms-date` (the time you pass: the service refuses one more than
//! 15 minutes from its own clock) and `x-ms-version` ([`VERSION`]); all but GETs carry
//! `Content-Length`. It is signed with Shared Key (which covers the conditions and the MD5),
//! carries a SAS in its query, or an Entra ID token as `Authorization: Bearer`.
//!
//! The reply is read by the core's Azure table ([`sets3lock_proto::reply::azure`]).

use crate::{assemble, header_value, timestamp, HttpRequest, WireError};
use base64::Engine as _;
use bytes::Bytes;
use core::fmt;
use hmac::{Hmac, KeyInit as _, Mac as _};
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use sets3lock_proto::{Intent, IntentKind, Response, CONTENT_TYPE};
use std::time::SystemTime;
use url::Url;

/// The Blob service version every request asks for: one that Azure and Azurite (3.37 knows
/// versions up to 2026-06-06) both accept. Bearer tokens need 2017-11-09 or later.
pub const VERSION: &str = "2023-11-03";

/// One container of one storage account.
///
/// ```
/// let c = sets3lock_wire::azure::Container::new("https://acct.blob.core.windows.net", "locks")?;
/// assert_eq!(c.blob_url("jobs/nightly"), "https://acct.blob.core.windows.net/locks/jobs/nightly");
/// # Ok::<(), sets3lock_wire::WireError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Container {
    endpoint: Url,
    name: String,
}

impl Container {
    /// The container `name` under the account's blob endpoint (`https://<account>.blob.core.
    /// windows.net`, or an emulator's `http://127.0.0.1:10000/<account>`).
    pub fn new(endpoint: &str, name: &str) -> Result<Container, WireError> {
        let endpoint = crate::endpoint(endpoint)?;
        crate::one_segment(name, "a container")?;
        Ok(Container {
            endpoint,
            name: name.to_owned(),
        })
    }

    /// The URL of the blob `key` (each of its `/`-separated segments encoded).
    pub fn blob_url(&self, key: &str) -> String {
        self.url(key).into()
    }

    fn url(&self, key: &str) -> Url {
        let mut url = self.endpoint.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().push(&self.name);
            for segment in key.split('/') {
                path.push(segment);
            }
        }
        url
    }
}

/// Who signs a request.
#[derive(Clone)]
#[non_exhaustive]
pub enum Auth {
    /// `Authorization: SharedKey <account>:<signature>`, with the account's key.
    SharedKey {
        /// The storage account's name.
        account: String,
        /// The account key, decoded from its base64.
        key: Vec<u8>,
    },
    /// A SAS token (its query string, without the `?`), put in every request's URL.
    Sas(String),
    /// An Entra ID access token, sent as `Authorization: Bearer <token>` (over https only).
    Bearer(String),
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Auth::SharedKey { account, .. } => f
                .debug_struct("SharedKey")
                .field("account", account)
                .finish_non_exhaustive(),
            Auth::Sas(_) => f.write_str("Sas(..)"),
            Auth::Bearer(_) => f.write_str("Bearer(..)"),
        }
    }
}

/// The request for `intent` on the blob `key` of `container`, dated `time` and signed by
/// `auth`.
///
/// ```
/// use sets3lock_proto::{ETag, Intent};
/// use sets3lock_wire::azure::{self, Auth, Container};
/// use std::time::{Duration, SystemTime};
///
/// let c = Container::new("http://127.0.0.1:10000/devstoreaccount1", "locks")?;
/// let auth = Auth::SharedKey { account: "devstoreaccount1".into(), key: b"key".to_vec() };
/// let release = Intent::DeleteIfMatch { etag: ETag::parse("0x8DC")? };
/// let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_764_500_000);
/// let r = azure::request(&c, &auth, "job", &release, at)?;
/// assert_eq!(r.headers()["if-match"], "\"0x8DC\"");
/// assert_eq!(r.headers()["x-ms-date"], "Sun, 30 Nov 2025 10:53:20 GMT");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn request(
    container: &Container,
    auth: &Auth,
    key: &str,
    intent: &Intent,
    time: SystemTime,
) -> Result<HttpRequest, WireError> {
    let mut headers = HeaderMap::new();
    let (method, body) = match intent {
        Intent::PutIfNoneMatch { body } => {
            put_headers(&mut headers, body);
            headers.insert(http::header::IF_NONE_MATCH, HeaderValue::from_static("*"));
            (Method::PUT, body.clone())
        }
        Intent::PutIfMatch { etag, body } => {
            put_headers(&mut headers, body);
            insert(&mut headers, http::header::IF_MATCH, &etag.header_value());
            (Method::PUT, body.clone())
        }
        Intent::DeleteIfMatch { etag } => {
            insert(&mut headers, http::header::IF_MATCH, &etag.header_value());
            (Method::DELETE, Bytes::new())
        }
        Intent::Get { if_none_match } => {
            if let Some(etag) = if_none_match {
                let value = etag.header_value();
                insert(&mut headers, http::header::IF_NONE_MATCH, &value);
            }
            (Method::GET, Bytes::new())
        }
    };
    signed(method, &container.url(key), auth, headers, body, time)
}

/// A plain `DELETE` of the blob `key` (no condition): only for throw-away keys of your own
/// (a probe of whether the store honours conditions), never for a lock.
pub fn delete(
    container: &Container,
    auth: &Auth,
    key: &str,
    time: SystemTime,
) -> Result<HttpRequest, WireError> {
    let url = container.url(key);
    signed(
        Method::DELETE,
        &url,
        auth,
        HeaderMap::new(),
        Bytes::new(),
        time,
    )
}

/// What the reply to a request of kind `kind` means for the lock: the core's Azure reply
/// table.
pub fn read<B: AsRef<[u8]>>(kind: IntentKind, reply: &http::Response<B>) -> Response {
    sets3lock_proto::reply::azure::classify(
        kind,
        reply.status(),
        reply.headers(),
        reply.body().as_ref(),
    )
}

/// A request with these headers, and the date, version, length and authorization.
fn signed(
    method: Method,
    url: &Url,
    auth: &Auth,
    mut headers: HeaderMap,
    body: Bytes,
    time: SystemTime,
) -> Result<HttpRequest, WireError> {
    let date = jiff::fmt::rfc2822::DateTimePrinter::new()
        .timestamp_to_rfc9110_string(&timestamp(time)?)
        .map_err(|_| WireError::Time)?;
    insert(&mut headers, HeaderName::from_static("x-ms-date"), &date);
    headers.insert("x-ms-version", HeaderValue::from_static(VERSION));
    if method != Method::GET {
        headers.insert(http::header::CONTENT_LENGTH, HeaderValue::from(body.len()));
    }
    let mut url = url.clone();
    let authorization = match auth {
        Auth::SharedKey { account, key } => {
            let signature = shared_key(&method, &url, &headers, account, key);
            Some(header_value(
                "Azure account name",
                &format!("SharedKey {account}:{signature}"),
            )?)
        }
        Auth::Sas(query) => {
            url.set_query(Some(query.trim_start_matches('?')));
            None
        }
        Auth::Bearer(token) => Some(header_value("Azure token", &format!("Bearer {token}"))?),
    };
    if let Some(mut value) = authorization {
        value.set_sensitive(true);
        headers.insert(http::header::AUTHORIZATION, value);
    }
    assemble(method, &url, headers, body)
}

fn put_headers(headers: &mut HeaderMap, body: &[u8]) {
    headers.insert("x-ms-blob-type", HeaderValue::from_static("BlockBlob"));
    headers.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static(CONTENT_TYPE),
    );
    // Checked by the store against the body (400 Md5Mismatch): a damaged body is refused.
    let md5 = crate::content_md5(body);
    insert(headers, HeaderName::from_static("content-md5"), &md5);
}

fn insert(headers: &mut HeaderMap, name: HeaderName, value: &str) {
    // Our own values (dates, base64, ETags that parsed as header-safe): they always convert.
    if let Ok(v) = HeaderValue::from_str(value) {
        headers.insert(name, v);
    }
}

/// The Shared Key signature: HMAC-SHA256 with the account key over the string to sign, which
/// covers the method, the standard headers (the conditions among them), every `x-ms-` header
/// and the resource.
fn shared_key(
    method: &Method,
    url: &Url,
    headers: &HeaderMap,
    account: &str,
    key: &[u8],
) -> String {
    let text = string_to_sign(method, url, headers, account);
    let Ok(mut mac) = Hmac::<sha2::Sha256>::new_from_slice(key) else {
        // HMAC takes a key of any length.
        return String::new();
    };
    mac.update(text.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

fn string_to_sign(method: &Method, url: &Url, headers: &HeaderMap, account: &str) -> String {
    use core::fmt::Write as _;
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    };
    // Since version 2015-02-21 a zero length is written as empty.
    let length = match get("content-length") {
        "0" => "",
        other => other,
    };
    let mut text = format!(
        "{method}\n{}\n{}\n{length}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n",
        get("content-encoding"),
        get("content-language"),
        get("content-md5"),
        get("content-type"),
        "", // Date: x-ms-date is sent instead
        get("if-modified-since"),
        get("if-match"),
        get("if-none-match"),
        get("if-unmodified-since"),
        get("range"),
    );
    let mut ms: Vec<(&str, &str)> = headers
        .iter()
        .filter(|(n, _)| n.as_str().starts_with("x-ms-"))
        .map(|(n, v)| (n.as_str(), v.to_str().unwrap_or("").trim()))
        .collect();
    ms.sort();
    for (name, value) in ms {
        let _ = writeln!(text, "{name}:{value}");
    }
    let _ = write!(text, "/{account}{}", url.path());
    // Each parameter on a line of its own, in order; none of the lock's requests has a
    // repeated one (Azure would want their values joined by commas).
    let mut query: Vec<(String, String)> = url
        .query_pairs()
        .map(|(k, v)| (k.to_ascii_lowercase(), v.into_owned()))
        .collect();
    query.sort();
    for (k, v) in query {
        let _ = write!(text, "\n{k}:{v}");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::time::Duration;
    use sets3lock_proto::ETag;

    /// Azurite's well-known development account key (public, in Microsoft's docs).
    const DEV_KEY: &str =
        "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

    fn dev() -> Auth {
        Auth::SharedKey {
            account: "devstoreaccount1".into(),
            key: base64::engine::general_purpose::STANDARD
                .decode(DEV_KEY)
                .expect("key"),
        }
    }

    fn at() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_764_500_000)
    }

    fn url_of(r: &HttpRequest) -> Url {
        Url::parse(&r.uri().to_string()).expect("url")
    }

    #[test]
    fn a_blob_url_keeps_the_account_path_and_encodes_each_segment() {
        let c = Container::new("http://127.0.0.1:10000/devstoreaccount1", "locks").expect("c");
        assert_eq!(
            c.blob_url("a b/c?d"),
            "http://127.0.0.1:10000/devstoreaccount1/locks/a%20b/c%3Fd"
        );
        let c = Container::new("https://acct.blob.core.windows.net/", "c").expect("c");
        assert_eq!(c.blob_url("k"), "https://acct.blob.core.windows.net/c/k");
        assert!(Container::new("https://acct.blob.core.windows.net", "a/b").is_err());
    }

    #[test]
    fn the_string_to_sign_covers_the_conditions_and_the_resource() {
        let c = Container::new("http://127.0.0.1:10000/devstoreaccount1", "locks").expect("c");
        let etag = ETag::parse("0x8D").expect("etag");
        let put = Intent::PutIfMatch {
            etag,
            body: Bytes::from_static(b"{}"),
        };
        let r = request(&c, &dev(), "job", &put, at()).expect("signed");
        let text = string_to_sign(r.method(), &url_of(&r), r.headers(), "devstoreaccount1");
        assert_eq!(
            text,
            "PUT\n\n\n2\nmZFLkyvTelC5g8XnyQrpOw==\napplication/json\n\n\n\"0x8D\"\n\n\n\n\
             x-ms-blob-type:BlockBlob\nx-ms-date:Sun, 30 Nov 2025 10:53:20 GMT\nx-ms-version:2023-11-03\n\
             /devstoreaccount1/devstoreaccount1/locks/job"
        );
        let auth = r.headers()["authorization"].to_str().expect("ascii");
        assert!(auth.starts_with("SharedKey devstoreaccount1:"), "{auth}");
        assert!(r.headers()["authorization"].is_sensitive());
        // A DELETE's zero length is empty in the string to sign, and a GET sends no length.
        let del = Intent::DeleteIfMatch {
            etag: ETag::parse("e").expect("etag"),
        };
        let del = request(&c, &dev(), "job", &del, at()).expect("signed");
        let text = string_to_sign(del.method(), &url_of(&del), del.headers(), "a");
        assert!(text.starts_with("DELETE\n\n\n\n\n"), "{text}");
        let get = Intent::Get {
            if_none_match: None,
        };
        let get = request(&c, &dev(), "job", &get, at()).expect("signed");
        assert!(get.headers().get("content-length").is_none());
    }

    #[test]
    fn a_sas_goes_in_the_query_and_no_authorization_is_sent() {
        let c = Container::new("https://acct.blob.core.windows.net", "c").expect("c");
        let get = Intent::Get {
            if_none_match: None,
        };
        let sas = Auth::Sas("?sv=2023-11-03&sp=rwd&sig=abc".into());
        let r = request(&c, &sas, "k", &get, at()).expect("signed");
        assert_eq!(r.uri().query(), Some("sv=2023-11-03&sp=rwd&sig=abc"));
        assert!(r.headers().get("authorization").is_none());
        assert_eq!(format!("{sas:?}"), "Sas(..)");
    }

    #[test]
    fn a_bearer_token_goes_in_the_authorization_header_and_a_broken_one_is_refused() {
        let c = Container::new("https://acct.blob.core.windows.net", "c").expect("c");
        let get = Intent::Get {
            if_none_match: None,
        };
        let auth = Auth::Bearer("eyJ.tok".into());
        let r = request(&c, &auth, "k", &get, at()).expect("signed");
        assert_eq!(r.headers()["authorization"], "Bearer eyJ.tok");
        assert!(r.headers()["authorization"].is_sensitive());
        assert_eq!(r.headers()["x-ms-version"], VERSION);
        assert!(VERSION >= "2017-11-09");
        assert_eq!(r.uri().query(), None);
        assert_eq!(format!("{auth:?}"), "Bearer(..)");
        let broken = Auth::Bearer("eyJ\ntok".into());
        assert_eq!(
            request(&c, &broken, "k", &get, at()).err(),
            Some(WireError::Header {
                name: "Azure token"
            })
        );
    }
}
