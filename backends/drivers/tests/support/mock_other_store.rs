//! The mock behind HTTP in Azure's and GCS's own request formats: each request is read back
//! into the core's intent and answered by the mock in that store's dialect. Azure requests
//! must carry a valid Shared Key signature for the mock account (checked here by a second,
//! independent signer); GCS requests, as on an emulator, carry no credentials.

use super::http1;
use base64::Engine as _;
use hmac::{KeyInit as _, Mac as _};
use sets3lock::proto::{ETag, Intent};
use sets3lock_mock::{MockS3, Reply};
use std::sync::Mutex;

/// The mock's Azure account and its key.
pub const ACCOUNT: &str = "mockaccount";
pub const KEY: &[u8] = b"mock-azure-account-key";

fn status(code: u16) -> http::StatusCode {
    http::StatusCode::from_u16(code).unwrap_or(http::StatusCode::BAD_REQUEST)
}

fn url_of(req: &http1::Message, endpoint: &str) -> Option<(String, url::Url)> {
    let mut parts = req.start.split(' ');
    let method = parts.next()?.to_owned();
    let url = url::Url::parse(&format!("{endpoint}{}", parts.next()?)).ok()?;
    Some((method, url))
}

fn segments(url: &url::Url) -> Vec<String> {
    url.path_segments()
        .map(|s| s.map(super::percent_encoding_decode).collect())
        .unwrap_or_default()
}

/// Azure's Shared Key, as the documentation lays out its string to sign.
fn azure_signature(method: &str, url: &url::Url, req: &http1::Message) -> String {
    let h = |n: &str| req.header(n).unwrap_or("").to_owned();
    let length = Some(h("content-length"))
        .filter(|l| l != "0")
        .unwrap_or_default();
    let standard = [
        h("content-encoding"),
        h("content-language"),
        length,
        h("content-md5"),
        h("content-type"),
        h("date"),
        h("if-modified-since"),
        h("if-match"),
        h("if-none-match"),
        h("if-unmodified-since"),
        h("range"),
    ];
    let mut ms: Vec<String> = req
        .headers
        .iter()
        .filter(|(n, _)| n.to_ascii_lowercase().starts_with("x-ms-"))
        .map(|(n, v)| format!("{}:{}", n.to_ascii_lowercase(), v.trim()))
        .collect();
    ms.sort();
    let text = format!(
        "{method}\n{}\n{}\n/{ACCOUNT}{}",
        standard.join("\n"),
        ms.join("\n"),
        url.path()
    );
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(KEY).expect("any key length");
    mac.update(text.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

/// Azure refuses a Shared Key request whose `x-ms-date` is more than 15 minutes from its clock.
fn azure_date_refused(req: &http1::Message, now: jiff::Timestamp) -> Option<Reply> {
    let date = req.header("x-ms-date")?;
    let sent = jiff::fmt::rfc2822::parse(date).ok()?.timestamp();
    let off = now.duration_since(sent).abs();
    if off <= jiff::SignedDuration::from_mins(15) {
        return None;
    }
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>AuthenticationFailed</Code><Message>Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature.\nRequestId:0</Message><AuthenticationErrorDetail>Request date header too old: '{date}'</AuthenticationErrorDetail></Error>"
    );
    let mut reply = Reply::azure_error(status(403), "AuthenticationFailed");
    reply.body = bytes::Bytes::from(body);
    Some(reply)
}

pub fn azure(
    req: &http1::Message,
    store: &Mutex<MockS3>,
    endpoint: &str,
    now: jiff::Timestamp,
) -> Reply {
    let Some((method, url)) = url_of(req, endpoint) else {
        return Reply::azure_error(status(400), "InvalidUri");
    };
    let expected = format!(
        "SharedKey {ACCOUNT}:{}",
        azure_signature(&method, &url, req)
    );
    if req.header("authorization") != Some(expected.as_str()) {
        return Reply::azure_error(status(403), "AuthenticationFailed");
    }
    if let Some(refused) = azure_date_refused(req, now) {
        return refused;
    }
    if req.header("x-ms-version").is_none() {
        return Reply::azure_error(status(400), "MissingRequiredHeader");
    }
    let path = segments(&url);
    // /ACCOUNT/CONTAINER/BLOB…
    let (container, blob) = match path.as_slice() {
        [_, container, blob @ ..] if !blob.is_empty() => (container.clone(), blob.join("/")),
        _ => return Reply::azure_error(status(400), "InvalidUri"),
    };
    let etag = |n: &str| req.header(n).and_then(|v| ETag::parse(v).ok());
    let body = bytes::Bytes::from(req.body.clone());
    let mut mock = store.lock().unwrap_or_else(|e| e.into_inner());
    let intent = match (
        method.as_str(),
        req.header("if-none-match"),
        etag("if-match"),
    ) {
        ("PUT", Some("*"), _) => Intent::PutIfNoneMatch { body },
        ("PUT", None, Some(etag)) => Intent::PutIfMatch { etag, body },
        ("DELETE", _, Some(etag)) => Intent::DeleteIfMatch { etag },
        ("DELETE", _, None) => {
            // Unconditional: the store check's clean-up.
            let found = mock.object(&container, &blob).is_some();
            mock.force(&container, &blob, None);
            return if found {
                Reply::ok(status(202), None, bytes::Bytes::new())
            } else {
                Reply::azure_error(status(404), "BlobNotFound")
            };
        }
        ("GET", inm, _) => Intent::Get {
            if_none_match: inm.and_then(|v| ETag::parse(v).ok()),
        },
        _ => return Reply::azure_error(status(501), "NotImplemented"),
    };
    mock.execute(&container, &blob, &intent)
}

/// The record part of a multipart/related upload (the part after the metadata).
fn media_part(req: &http1::Message) -> Option<bytes::Bytes> {
    let boundary = req
        .header("content-type")?
        .split("boundary=")
        .nth(1)?
        .trim_matches('"')
        .to_owned();
    let text = &req.body;
    let delimiter = format!("--{boundary}");
    let starts: Vec<usize> = text
        .windows(delimiter.len())
        .enumerate()
        .filter(|(_, w)| *w == delimiter.as_bytes())
        .map(|(i, _)| i)
        .collect();
    // metadata, media, closing delimiter
    let (&from, &to) = (starts.get(1)?, starts.get(2)?);
    let part = &text[from + delimiter.len()..to];
    let head_end = part.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let media = part[head_end..].strip_suffix(b"\r\n")?;
    Some(bytes::Bytes::copy_from_slice(media))
}

pub fn gcs(req: &http1::Message, store: &Mutex<MockS3>, endpoint: &str) -> Reply {
    let Some((method, url)) = url_of(req, endpoint) else {
        return Reply::gcs_error(status(400), "invalid");
    };
    let query = |name: &str| {
        url.query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    };
    let generation = |name: &str| query(name).and_then(|g| ETag::parse(&g).ok());
    let path = segments(&url);
    let path: Vec<&str> = path.iter().map(String::as_str).collect();
    let mut mock = store.lock().unwrap_or_else(|e| e.into_inner());
    match (method.as_str(), path.as_slice()) {
        ("POST", ["upload", "storage", "v1", "b", bucket, "o"]) => {
            let (Some(name), Some("multipart")) = (query("name"), query("uploadType").as_deref())
            else {
                return Reply::gcs_error(status(400), "invalid");
            };
            let Some(body) = media_part(req) else {
                return Reply::gcs_error(status(400), "invalid");
            };
            let intent = match query("ifGenerationMatch").as_deref() {
                Some("0") => Intent::PutIfNoneMatch { body },
                Some(_) => match generation("ifGenerationMatch") {
                    Some(etag) => Intent::PutIfMatch { etag, body },
                    None => return Reply::gcs_error(status(400), "invalid"),
                },
                None => return Reply::gcs_error(status(400), "required"),
            };
            mock.execute(bucket, &name, &intent)
        }
        ("DELETE", ["storage", "v1", "b", bucket, "o", object]) => {
            match generation("ifGenerationMatch") {
                Some(etag) => mock.execute(bucket, object, &Intent::DeleteIfMatch { etag }),
                None => {
                    let found = mock.object(bucket, object).is_some();
                    mock.force(bucket, object, None);
                    if found {
                        Reply::ok(status(204), None, bytes::Bytes::new())
                    } else {
                        Reply::gcs_error(status(404), "notFound")
                    }
                }
            }
        }
        ("GET", ["storage", "v1", "b", bucket, "o", object])
            if query("alt").as_deref() == Some("media") =>
        {
            let if_none_match = generation("ifGenerationNotMatch");
            mock.execute(bucket, object, &Intent::Get { if_none_match })
        }
        _ => Reply::gcs_error(status(400), "invalid"),
    }
}
