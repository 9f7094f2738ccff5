//! Intent → Azure Blob request: Put Blob, Delete Blob or Get Blob with the conditional
//! headers, `x-ms-date` at the server's time, `x-ms-version` pinned, signed with Shared Key,
//! carrying a SAS token in the query, or an Entra ID bearer token.

use crate::driver::http::{content_md5, HttpRequest};
use base64::Engine as _;
use bytes::Bytes;
use hmac::{Hmac, KeyInit as _, Mac as _};
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use sets3lock_proto::{Ambiguity, Intent, Response, CONTENT_TYPE};
use std::sync::Arc;
use url::Url;

/// The Blob service version every request asks for: one that Azure and Azurite (3.37 knows
/// versions up to 2026-06-06) both accept, so Azurite needs no `--skipApiVersionCheck`.
/// Bearer tokens need 2017-11-09 or later.
pub(crate) const VERSION: &str = "2023-11-03";

/// Who signs: Shared Key (the account and its key), a SAS token, or a bearer token.
#[derive(Clone)]
pub(crate) enum Auth {
    /// `Authorization: SharedKey account:signature`.
    SharedKey {
        /// The account.
        account: String,
        /// The decoded key.
        key: Vec<u8>,
    },
    /// The SAS token's query pairs, appended to every URL.
    Sas(String),
    /// `Authorization: Bearer <token>`, the token asked of the source for each request.
    Bearer(Arc<dyn crate::TokenSource>),
}

impl core::fmt::Debug for Auth {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Auth::SharedKey { .. } => "SharedKey",
            Auth::Sas(_) => "Sas",
            Auth::Bearer(_) => "Bearer",
        })
    }
}

/// The URL of `key` in `container` under the blob endpoint (each path segment encoded, `/`
/// kept: Azure names blobs with slashes as paths).
pub(crate) fn blob_url(endpoint: &Url, container: &str, key: &str) -> Url {
    let mut url = endpoint.clone();
    if let Ok(mut path) = url.path_segments_mut() {
        path.pop_if_empty().push(container);
        for segment in key.split('/') {
            path.push(segment);
        }
    }
    url
}

/// The request for `intent` on the blob at `url`, dated `time` and signed by `auth`; or, when
/// there is no token to sign with, the response that stands for it (not sent).
pub(crate) fn request(
    url: &Url,
    auth: &Auth,
    intent: &Intent,
    time: &jiff::Timestamp,
) -> Result<HttpRequest, Response> {
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
                insert(
                    &mut headers,
                    http::header::IF_NONE_MATCH,
                    &etag.header_value(),
                );
            }
            (Method::GET, Bytes::new())
        }
    };
    plain(method, url, auth, headers, body, time)
}

/// A request with these headers (and the date, version, length and authorization); not
/// sent if the token source has no token.
pub(crate) fn plain(
    method: Method,
    url: &Url,
    auth: &Auth,
    mut headers: HeaderMap,
    body: Bytes,
    time: &jiff::Timestamp,
) -> Result<HttpRequest, Response> {
    let date = jiff::fmt::rfc2822::DateTimePrinter::new()
        .timestamp_to_rfc9110_string(time)
        .unwrap_or_default();
    insert(&mut headers, HeaderName::from_static("x-ms-date"), &date);
    headers.insert("x-ms-version", HeaderValue::from_static(VERSION));
    if method != Method::GET {
        headers.insert(http::header::CONTENT_LENGTH, HeaderValue::from(body.len()));
    }
    let mut url = url.clone();
    match auth {
        Auth::SharedKey { account, key } => {
            let signature = shared_key(&method, &url, &headers, account, key);
            let value = format!("SharedKey {account}:{signature}");
            if let Ok(mut v) = HeaderValue::from_str(&value) {
                v.set_sensitive(true);
                headers.insert(http::header::AUTHORIZATION, v);
            }
        }
        Auth::Sas(query) => url.set_query(Some(query)),
        Auth::Bearer(source) => {
            let not_sent = |detail: String| Response::Ambiguous(Ambiguity::NotSent { detail });
            let token = source
                .token()
                .map_err(|why| not_sent(format!("no Azure token to sign with: {why}")))?;
            let mut v = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
                not_sent("the Azure token source gave a token that is not a header value".into())
            })?;
            v.set_sensitive(true);
            headers.insert(http::header::AUTHORIZATION, v);
        }
    }
    Ok(HttpRequest {
        method,
        url,
        headers,
        body,
    })
}

fn put_headers(headers: &mut HeaderMap, body: &[u8]) {
    headers.insert("x-ms-blob-type", HeaderValue::from_static("BlockBlob"));
    headers.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static(CONTENT_TYPE),
    );
    // Checked by the store against the body (400 Md5Mismatch): a damaged body is refused.
    insert(
        headers,
        HeaderName::from_static("content-md5"),
        &content_md5(body),
    );
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
pub(crate) fn shared_key(
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
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned()
    };
    // Since version 2015-02-21 a zero length is written as empty.
    let length = match get("content-length").as_str() {
        "0" => String::new(),
        other => other.to_owned(),
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
    let mut ms: Vec<(String, String)> = headers
        .iter()
        .filter(|(n, _)| n.as_str().starts_with("x-ms-"))
        .map(|(n, v)| {
            (
                n.as_str().to_owned(),
                v.to_str().unwrap_or("").trim().to_owned(),
            )
        })
        .collect();
    ms.sort();
    for (name, value) in ms {
        text.push_str(&format!("{name}:{value}\n"));
    }
    text.push_str(&format!("/{account}{}", url.path()));
    // Each parameter on a line of its own, in order; none of the lock's requests has a
    // repeated one (Azure would want their values joined by commas).
    let mut query: Vec<(String, String)> = url
        .query_pairs()
        .map(|(k, v)| (k.to_ascii_lowercase(), v.into_owned()))
        .collect();
    query.sort();
    for (k, v) in query {
        text.push_str(&format!("\n{k}:{v}"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use sets3lock_proto::ETag;

    fn dev() -> Auth {
        Auth::SharedKey {
            account: "devstoreaccount1".into(),
            key: base64::engine::general_purpose::STANDARD
                .decode(super::super::settings::DEV_KEY_FOR_TESTS)
                .expect("key"),
        }
    }

    #[test]
    fn a_blob_url_keeps_the_account_path_and_encodes_each_segment() {
        let e = Url::parse("http://127.0.0.1:10000/devstoreaccount1").expect("url");
        let u = blob_url(&e, "locks", "a b/c?d");
        assert_eq!(
            u.as_str(),
            "http://127.0.0.1:10000/devstoreaccount1/locks/a%20b/c%3Fd"
        );
        let e = Url::parse("https://acct.blob.core.windows.net/").expect("url");
        assert_eq!(
            blob_url(&e, "c", "k").as_str(),
            "https://acct.blob.core.windows.net/c/k"
        );
    }

    #[test]
    fn the_string_to_sign_covers_the_conditions_and_the_resource() {
        let url = Url::parse("http://127.0.0.1:10000/devstoreaccount1/locks/job").expect("url");
        let time = jiff::Timestamp::from_second(1_764_500_000).expect("time");
        let etag = ETag::parse("0x8D").expect("etag");
        let r = request(
            &url,
            &dev(),
            &Intent::PutIfMatch {
                etag,
                body: Bytes::from_static(b"{}"),
            },
            &time,
        )
        .expect("signed");
        let text = string_to_sign(&r.method, &r.url, &r.headers, "devstoreaccount1");
        assert_eq!(
            text,
            "PUT\n\n\n2\nmZFLkyvTelC5g8XnyQrpOw==\napplication/json\n\n\n\"0x8D\"\n\n\n\n\
             x-ms-blob-type:BlockBlob\nx-ms-date:Sun, 30 Nov 2025 10:53:20 GMT\nx-ms-version:2023-11-03\n\
             /devstoreaccount1/devstoreaccount1/locks/job"
        );
        let auth = r.headers["authorization"].to_str().expect("ascii");
        assert!(auth.starts_with("SharedKey devstoreaccount1:"), "{auth}");
        // A DELETE's zero length is empty in the string to sign, and a GET sends no length.
        let del = request(
            &url,
            &dev(),
            &Intent::DeleteIfMatch {
                etag: ETag::parse("e").expect("etag"),
            },
            &time,
        )
        .expect("signed");
        assert!(string_to_sign(&del.method, &del.url, &del.headers, "a")
            .starts_with("DELETE\n\n\n\n\n"));
        let get = request(
            &url,
            &dev(),
            &Intent::Get {
                if_none_match: None,
            },
            &time,
        )
        .expect("signed");
        assert!(get.headers.get("content-length").is_none());
    }

    #[test]
    fn a_sas_goes_in_the_query_and_no_authorization_is_sent() {
        let url = Url::parse("https://acct.blob.core.windows.net/c/k").expect("url");
        let time = jiff::Timestamp::from_second(1_764_500_000).expect("time");
        let r = request(
            &url,
            &Auth::Sas("sv=2023-11-03&sp=rwd&sig=abc".into()),
            &Intent::Get {
                if_none_match: None,
            },
            &time,
        )
        .expect("signed");
        assert_eq!(r.url.query(), Some("sv=2023-11-03&sp=rwd&sig=abc"));
        assert!(r.headers.get("authorization").is_none());
    }

    #[derive(Debug)]
    struct Given(Result<String, String>);

    impl crate::TokenSource for Given {
        fn token(&self) -> Result<String, String> {
            self.0.clone()
        }
    }

    #[test]
    fn a_bearer_token_goes_in_the_authorization_header_and_none_means_not_sent() {
        let url = Url::parse("https://acct.blob.core.windows.net/c/k").expect("url");
        let time = jiff::Timestamp::from_second(1_764_500_000).expect("time");
        let get = Intent::Get {
            if_none_match: None,
        };
        let auth = Auth::Bearer(Arc::new(Given(Ok("eyJ.tok".into()))));
        let r = request(&url, &auth, &get, &time).expect("signed");
        assert_eq!(r.headers["authorization"], "Bearer eyJ.tok");
        assert!(r.headers["authorization"].is_sensitive());
        assert_eq!(r.headers["x-ms-version"], VERSION);
        assert!(VERSION >= "2017-11-09");
        assert_eq!(r.url.query(), None);
        assert_eq!(format!("{auth:?}"), "Bearer");
        let none = Auth::Bearer(Arc::new(Given(Err("Entra ID is down".into()))));
        match request(&url, &none, &get, &time) {
            Err(Response::Ambiguous(Ambiguity::NotSent { detail })) => {
                assert!(detail.contains("Entra ID is down"), "{detail}")
            }
            other => panic!("{other:?}"),
        }
    }
}
