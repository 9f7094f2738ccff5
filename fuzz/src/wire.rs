//! The wire layer's builders and readers (`sets3lock-wire`): any intent, any key, any time,
//! any bucket name: a request or a named refusal, never a panic; a built request is the one
//! its intent asks for (method, condition, length, body); and the store's reader never turns
//! a reply that does not fit the request into a success.

use arbitrary::{Arbitrary, Unstructured};
use bytes::Bytes;
use core::time::Duration;
use sets3lock_proto::{ETag, Intent, IntentKind, Response};
use sets3lock_wire::{azure, gcs, s3, HttpRequest};
use std::time::SystemTime;

/// What every store's builder gets: an intent, a key, a bucket name, a time, an endpoint.
struct Case<'a> {
    intent: Intent,
    key: &'a str,
    bucket: &'a str,
    time: SystemTime,
    endpoint: &'a str,
}

const ENDPOINTS: [&str; 4] = [
    "http://127.0.0.1:8333",
    "https://s3.eu-west-1.amazonaws.com",
    "http://[::1]:10000/devstoreaccount1/",
    "https://storage.googleapis.com",
];

fn case<'a>(u: &mut Unstructured<'a>) -> Option<Case<'a>> {
    let etag = ETag::parse(<&str>::arbitrary(u).ok()?).ok();
    let body = Bytes::copy_from_slice(<&[u8]>::arbitrary(u).ok()?);
    let intent = match (u.choose_index(4).ok()?, etag) {
        (0, _) => Intent::PutIfNoneMatch { body },
        (1, Some(etag)) => Intent::PutIfMatch { etag, body },
        (2, Some(etag)) => Intent::DeleteIfMatch { etag },
        (_, if_none_match) => Intent::Get { if_none_match },
    };
    let key = <&str>::arbitrary(u).ok()?;
    let bucket = match bool::arbitrary(u).ok()? {
        true => <&str>::arbitrary(u).ok()?,
        false => "locks",
    };
    // Any second from 1970 on, and beyond what a clock can show.
    let time = SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(u64::arbitrary(u).ok()?))?;
    let endpoint = match u.choose_index(ENDPOINTS.len() + 1).ok()? {
        i if i < ENDPOINTS.len() => ENDPOINTS[i],
        _ => <&str>::arbitrary(u).ok()?,
    };
    Some(Case {
        intent,
        key,
        bucket,
        time,
        endpoint,
    })
}

/// A built request is what its intent asks for.
fn check_request(intent: &Intent, r: &HttpRequest, md5_and_type: bool) {
    let header = |name: &str| r.headers().get(name).map(|v| v.as_bytes().to_vec());
    let (method, condition) = match intent {
        Intent::PutIfNoneMatch { .. } => ("PUT", Some(("if-none-match", b"*".to_vec()))),
        Intent::PutIfMatch { etag, .. } => {
            ("PUT", Some(("if-match", etag.header_value().into_bytes())))
        }
        Intent::DeleteIfMatch { etag } => (
            "DELETE",
            Some(("if-match", etag.header_value().into_bytes())),
        ),
        Intent::Get { if_none_match } => (
            "GET",
            if_none_match
                .as_ref()
                .map(|e| ("if-none-match", e.header_value().into_bytes())),
        ),
    };
    assert_eq!(r.method().as_str(), method);
    if let Some((name, value)) = condition {
        assert_eq!(header(name), Some(value), "{name}");
    }
    match intent {
        Intent::PutIfNoneMatch { body } | Intent::PutIfMatch { body, .. } => {
            assert_eq!(r.body(), body, "the record is the body");
            if md5_and_type {
                let md5 = sets3lock_wire::content_md5(body).into_bytes();
                assert_eq!(header("content-md5"), Some(md5));
                assert_eq!(header("content-type"), Some(b"application/json".to_vec()));
            }
        }
        _ => assert!(r.body().is_empty()),
    }
    let length = header("content-length");
    match r.method().as_str() {
        "GET" => assert_eq!(length, None),
        _ => assert_eq!(length, Some(r.body().len().to_string().into_bytes())),
    }
}

/// An arbitrary reply to a request of `kind`, read by `read`: it fits the request.
fn check_reply(
    u: &mut Unstructured<'_>,
    kind: IntentKind,
    read: fn(IntentKind, &http::Response<Vec<u8>>) -> Response,
) {
    let status = u.int_in_range(100u16..=599).unwrap_or(200);
    let rest = u.bytes(u.len()).unwrap_or_default().to_vec();
    let mut reply = http::Response::new(rest);
    if let Ok(s) = http::StatusCode::from_u16(status) {
        *reply.status_mut() = s;
    }
    reply
        .headers_mut()
        .insert("etag", http::HeaderValue::from_static("\"0x8DC\""));
    reply
        .headers_mut()
        .insert("x-goog-generation", http::HeaderValue::from_static("17"));
    let read = read(kind, &reply);
    assert!(
        read.fits(kind),
        "{kind} answered {status}: {read:?} does not fit"
    );
}

/// S3: presigned, every header but the length signed.
pub fn wire_s3(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Some(c) = case(&mut u) else { return };
    let path_style = bool::arbitrary(&mut u).unwrap_or(true);
    let Ok(bucket) = s3::Bucket::new(c.endpoint, c.bucket, "us-east-1", path_style) else {
        return;
    };
    let keys = s3::Keys::new("AKIDEXAMPLE", "secret").with_token("session");
    let expiry = Duration::from_secs(u16::arbitrary(&mut u).unwrap_or(15).into());
    if let Ok(r) = s3::request(&bucket, &keys, c.key, &c.intent, c.time, expiry) {
        check_request(&c.intent, &r, true);
        let query = r.uri().query().unwrap_or_default();
        let signed = query
            .split('&')
            .find_map(|p| p.strip_prefix("X-Amz-SignedHeaders="))
            .unwrap_or_default()
            .replace("%3B", ";");
        for name in r.headers().keys() {
            assert!(
                name == "content-length" || signed.split(';').any(|s| s == name.as_str()),
                "{name} is sent unsigned ({signed})"
            );
        }
    }
    let _ = s3::delete(&bucket, &keys, c.key, c.time, expiry);
    check_reply(&mut u, c.intent.kind(), s3::read);
}

/// Azure: dated, versioned, signed with Shared Key, a SAS or a token.
pub fn wire_azure(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Some(c) = case(&mut u) else { return };
    let Ok(container) = azure::Container::new(c.endpoint, c.bucket) else {
        return;
    };
    let secret = <&str>::arbitrary(&mut u).unwrap_or_default();
    let auth = match u.choose_index(3).unwrap_or(0) {
        0 => azure::Auth::SharedKey {
            account: c.bucket.to_owned(),
            key: secret.as_bytes().to_vec(),
        },
        1 => azure::Auth::Sas(secret.to_owned()),
        _ => azure::Auth::Bearer(secret.to_owned()),
    };
    if let Ok(r) = azure::request(&container, &auth, c.key, &c.intent, c.time) {
        check_request(&c.intent, &r, true);
        assert_eq!(r.headers()["x-ms-version"], azure::VERSION);
        assert!(r.headers().contains_key("x-ms-date"));
        if let azure::Auth::Sas(_) = auth {
            assert!(!r.headers().contains_key("authorization"));
        } else {
            assert!(r.headers()["authorization"].is_sensitive());
        }
    }
    let _ = azure::delete(&container, &auth, c.key, c.time);
    check_reply(&mut u, c.intent.kind(), azure::read);
}

/// GCS: the JSON API with generation conditions and an optional token.
pub fn wire_gcs(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Some(c) = case(&mut u) else { return };
    let Ok(bucket) = gcs::Bucket::new(c.endpoint, c.bucket) else {
        return;
    };
    let token = <Option<&str>>::arbitrary(&mut u).unwrap_or(None);
    if let Ok(r) = gcs::request(&bucket, token, c.key, &c.intent) {
        let query = r.uri().query().unwrap_or_default().to_owned();
        let generation = |e: &ETag| e.as_str().to_owned();
        let (method, condition) = match &c.intent {
            Intent::PutIfNoneMatch { .. } => ("POST", Some("ifGenerationMatch=0".to_owned())),
            Intent::PutIfMatch { etag, .. } => (
                "POST",
                Some(format!("ifGenerationMatch={}", generation(etag))),
            ),
            Intent::DeleteIfMatch { etag } => (
                "DELETE",
                Some(format!("ifGenerationMatch={}", generation(etag))),
            ),
            Intent::Get { if_none_match } => (
                "GET",
                if_none_match
                    .as_ref()
                    .map(|e| format!("ifGenerationNotMatch={}", generation(e))),
            ),
        };
        assert_eq!(r.method().as_str(), method);
        if let Some(condition) = condition {
            let pairs: Vec<(String, String)> = url::form_urlencoded::parse(query.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect();
            let (name, value) = condition.split_once('=').unwrap_or_default();
            assert!(
                pairs.iter().any(|(k, v)| k == name && v == value),
                "{condition} not in {query}"
            );
        }
        if let Intent::PutIfNoneMatch { body } | Intent::PutIfMatch { body, .. } = &c.intent {
            let sent = r.body();
            assert!(
                sent.windows(body.len().max(1)).any(|w| w == &body[..]) || body.is_empty(),
                "the record is in the upload"
            );
        }
        assert_eq!(token.is_some(), r.headers().contains_key("authorization"));
    }
    let _ = gcs::delete(&bucket, token, c.key);
    check_reply(&mut u, c.intent.kind(), gcs::read);
}
