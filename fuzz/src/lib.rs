//! The fuzz targets' bodies, shared by the libFuzzer binaries (`cargo fuzz run NAME`) and by
//! the replay test that runs every corpus file on stable (`cargo test`).

#![forbid(unsafe_code)]

use arbitrary::{Arbitrary, Unstructured};
use bytes::Bytes;
use core::time::Duration;
use sets3lock_proto::reply::s3::classify as classify_reply;
use sets3lock_proto::{
    terraform_id, Ambiguity, Config, ETag, Event, Holder, Instant, IntentKind, Lock, LockUrl,
    OwnerId, Record, Response, TerraformInfo, Wait,
};
use std::collections::BTreeSet;

mod wire;
pub use wire::{wire_azure, wire_gcs, wire_s3};

/// Reply classification never panics, a success always carries a valid ETag, and every reply
/// fits its request (the reply table's cells: the core never has to treat a classified reply
/// as unexpected).
pub fn classify(data: &[u8]) {
    check_classifier(data, &[http::header::ETAG.as_str()], classify_reply);
}

/// Azure's reply table: never panics, every reply fits its request, a success carries a valid
/// ETag. The input names the ETag and the `x-ms-error-code` header.
pub fn classify_azure(data: &[u8]) {
    check_classifier(
        data,
        &[http::header::ETAG.as_str(), "x-ms-error-code"],
        sets3lock_proto::reply::azure::classify,
    );
}

/// GCS's reply table: never panics, every reply fits its request, a success carries a
/// decimal generation. The input names the `x-goog-generation` header; the body is also
/// where a write's generation is read from.
pub fn classify_gcs(data: &[u8]) {
    let Some(reply) = check_classifier(
        data,
        &["x-goog-generation"],
        sets3lock_proto::reply::gcs::classify,
    ) else {
        return;
    };
    if let Response::Written { etag } | Response::Object { etag, .. } = reply {
        assert!(
            etag.as_str().bytes().all(|b| b.is_ascii_digit()),
            "a generation is decimal: {etag}"
        );
    }
}

type Classifier = fn(IntentKind, http::StatusCode, &http::HeaderMap, &[u8]) -> Response;

/// The input: a request kind, a status, one value for each of `headers`, and the body (the
/// rest). Checks what every reply table promises, and returns the reply.
fn check_classifier(
    data: &[u8],
    headers: &[&'static str],
    classify: Classifier,
) -> Option<Response> {
    let mut u = Unstructured::new(data);
    let kind = u.choose_index(4).ok()?;
    let kind = [
        IntentKind::PutIfNoneMatch,
        IntentKind::PutIfMatch,
        IntentKind::DeleteIfMatch,
        IntentKind::Get,
    ][kind];
    let status = u.int_in_range(100u16..=999).unwrap_or(200);
    let status = http::StatusCode::from_u16(status).ok()?;
    let mut map = http::HeaderMap::new();
    for name in headers {
        if let Ok(value) = <&[u8]>::arbitrary(&mut u) {
            if let Ok(v) = http::HeaderValue::from_bytes(value) {
                map.insert(*name, v);
            }
        }
    }
    let body = u.take_rest();
    let reply = classify(kind, status, &map, body);
    assert!(
        reply.fits(kind),
        "{kind} answered {status} was classified as {reply:?}, which does not fit"
    );
    match &reply {
        Response::Written { etag } | Response::Object { etag, .. } => {
            assert!(status.is_success());
            assert!(ETag::parse(&etag.header_value()).is_ok());
        }
        Response::Deleted => assert!(status.is_success() && kind == IntentKind::DeleteIfMatch),
        _ => {}
    }
    Some(reply)
}

/// Record decoding accepts anything; our own records survive a round trip.
pub fn record(data: &[u8]) {
    let holder = Holder::decode(data);
    let _ = holder.to_string();
    if let Holder::Sets3lock(r) = holder {
        let again = Holder::decode(&r.encode());
        let Holder::Sets3lock(r2) = again else {
            panic!("our own encoding must decode as ours")
        };
        assert_eq!((r2.owner, r2.seq), (r.owner, r.seq));
    }
    let mut u = Unstructured::new(data);
    if let (Ok(owner), Ok(seq), Ok(host)) = (
        u128::arbitrary(&mut u),
        u64::arbitrary(&mut u),
        String::arbitrary(&mut u),
    ) {
        let r = Record {
            owner: OwnerId::from_u128(owner),
            seq,
            lease: Duration::from_millis(u64::arbitrary(&mut u).unwrap_or(0) % (1 << 40)),
            host,
            pid: 1,
            acquired_unix_ms: 0,
            written_unix_ms: 0,
            fence: None,
            value: None,
            writer: None,
            cooldown: false,
            parked: false,
            // Terraform's fields, with whatever text the embedding gives for the operation.
            terraform: bool::arbitrary(&mut u).unwrap_or(false).then(|| {
                Box::new(TerraformInfo {
                    id: terraform_id(OwnerId::from_u128(owner)),
                    operation: String::arbitrary(&mut u).unwrap_or_default(),
                    ..TerraformInfo::default()
                })
            }),
        };
        match Holder::decode(&r.encode()) {
            Holder::Sets3lock(d) => {
                assert_eq!((d.owner, d.seq, d.lease), (r.owner, r.seq, r.lease));
                assert_eq!(
                    d.terraform.map(|t| t.id),
                    r.terraform.map(|t| t.id),
                    "Terraform's ID must survive a round trip"
                );
            }
            other => panic!("round trip failed: {other:?}"),
        }
    }
}

/// URL and handle parsing never panic; what they accept prints back to itself, and a handle
/// prints on one line.
pub fn url(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    match LockUrl::parse(s) {
        Ok(url) => {
            let printed = url.to_string();
            assert_eq!(LockUrl::parse(&printed), Ok(url));
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
    match s.parse::<sets3lock_proto::Handle>() {
        Ok(handle) => {
            let printed = handle.to_string();
            assert!(!printed.contains('\n'), "{printed:?}");
            assert_eq!(printed.parse(), Ok(handle));
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
}

#[derive(Arbitrary, Debug)]
enum Step {
    Acquire {
        wait: u8,
        timeout_ms: u16,
    },
    Release,
    Advance {
        ms: u32,
    },
    Reply(Reply),
    /// Continue a hold named by a handle: one of our own owners so far (by index) or another.
    Adopt {
        which: u8,
        token: Option<u8>,
        release: bool,
    },
    /// Let go of the hold without releasing it.
    Detach,
}

#[derive(Arbitrary, Debug)]
enum Reply {
    Written {
        etag: u8,
    },
    Deleted,
    /// The object, with one of our own bodies (by index) or with arbitrary bytes.
    ObjectOurs {
        etag: u8,
        which: u8,
    },
    ObjectOther {
        etag: u8,
        body: Vec<u8>,
        /// The store-clock age, in seconds.
        age: Option<u16>,
    },
    NotModified,
    Exists,
    Mismatch,
    Absent,
    Conflict,
    Ambiguous,
    Refused,
    Http {
        status: u16,
        body: Vec<u8>,
        etag: Option<u8>,
    },
}

/// The state machine, driven by arbitrary replies and times: it never panics, and it never
/// reports "acquired" unless a write of its own was answered "written", or read back.
pub fn machine(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let mut config = Config {
        lease: Duration::from_millis(
            u64::from(u.int_in_range(0u16..=60_000).unwrap_or(30_000)).max(10),
        ),
        conditional_get: bool::arbitrary(&mut u).unwrap_or(true),
        foreign_lease: bool::arbitrary(&mut u)
            .unwrap_or(false)
            .then(|| Duration::from_secs(5)),
        ..Config::default()
    };
    let seed = u8::arbitrary(&mut u).unwrap_or(0);
    // Half the inputs in fenced mode, without shifting what the rest of an input means.
    config.fenced = seed & 1 == 1;
    let Ok(mut lock) = Lock::new(config, [seed; 32]) else {
        return;
    };
    let mut now = Instant::ZERO;
    let mut in_flight = None;
    let mut our_bodies: Vec<Bytes> = Vec::new();
    let mut our_owners = BTreeSet::new();
    // ETags a reply has given to a write of ours, or to a read of one of our bodies.
    let mut ours = BTreeSet::new();
    let etag = |n: u8| ETag::parse(&format!("e{n}")).expect("valid");
    let url: LockUrl = "s3://bucket/key".parse().expect("a valid URL");
    let mut steps = 0;
    while let Ok(step) = Step::arbitrary(&mut u) {
        steps += 1;
        if steps > 2000 {
            break;
        }
        match step {
            Step::Acquire { wait, timeout_ms } => {
                let wait = match wait % 3 {
                    0 => Wait::No,
                    1 => Wait::Forever,
                    _ => Wait::Timeout(Duration::from_millis(u64::from(timeout_ms))),
                };
                let _ = lock.acquire(now, 0, wait);
            }
            Step::Release => {
                let _ = lock.release(now);
            }
            Step::Adopt {
                which,
                token,
                release,
            } => {
                let known: Vec<OwnerId> = our_owners.iter().filter_map(|o| *o).collect();
                let owner = known
                    .get(usize::from(which))
                    .copied()
                    .unwrap_or(OwnerId::from_u128(u128::from(which)));
                let handle = sets3lock_proto::Handle {
                    url: url.clone(),
                    owner,
                    lease: Duration::from_secs(30),
                    token: token.map(|t| u64::from(t) + 1),
                };
                let then = if release {
                    sets3lock_proto::Resume::Release
                } else {
                    sets3lock_proto::Resume::Hold
                };
                let _ = lock.adopt(now, 0, &handle, then);
            }
            Step::Detach => {
                if let Ok(handle) = lock.detach(now, url.clone()) {
                    assert_eq!(handle.to_string().parse(), Ok(handle));
                }
            }
            Step::Advance { ms } => {
                now = now + Duration::from_millis(u64::from(ms % 120_000));
                lock.handle_timeout(now);
            }
            Step::Reply(reply) => {
                let Some(req) = in_flight.take() else {
                    continue;
                };
                let req: sets3lock_proto::Request = req;
                let is_write = matches!(
                    req.intent.kind(),
                    IntentKind::PutIfNoneMatch | IntentKind::PutIfMatch
                );
                let response = match reply {
                    Reply::Written { etag: e } => Response::Written { etag: etag(e) },
                    Reply::Deleted => Response::Deleted,
                    Reply::ObjectOurs { etag: e, which } => {
                        match our_bodies.get(usize::from(which) % our_bodies.len().max(1)) {
                            Some(body) => Response::Object {
                                etag: etag(e),
                                body: body.clone(),
                                age: None,
                            },
                            None => Response::Absent,
                        }
                    }
                    Reply::ObjectOther { etag: e, body, age } => Response::Object {
                        etag: etag(e.wrapping_add(128)),
                        body: body.into(),
                        age: age.map(|s| Duration::from_secs(u64::from(s))),
                    },
                    Reply::NotModified => Response::NotModified,
                    Reply::Exists => Response::Exists,
                    Reply::Mismatch => Response::Mismatch,
                    Reply::Absent => Response::Absent,
                    Reply::Conflict => Response::Conflict { code: None },
                    Reply::Ambiguous => Response::Ambiguous(Ambiguity::Timeout),
                    Reply::Refused => {
                        Response::Refused(sets3lock_proto::Error::NoSuchBucket { message: None })
                    }
                    Reply::Http {
                        status,
                        body,
                        etag: e,
                    } => {
                        let mut headers = http::HeaderMap::new();
                        if let Some(e) = e {
                            let e = etag(e.wrapping_add(128));
                            if let Ok(v) = http::HeaderValue::from_str(&e.header_value()) {
                                headers.insert(http::header::ETAG, v);
                            }
                        }
                        match http::StatusCode::from_u16(status % 1000) {
                            Ok(s) => classify_reply(req.intent.kind(), s, &headers, &body),
                            Err(_) => Response::Ambiguous(Ambiguity::Timeout),
                        }
                    }
                };
                // Whatever path made it, a "written" for a write of ours, or a read of a body
                // with one of our owner ids, is ours.
                match &response {
                    Response::Written { etag } if is_write => {
                        ours.insert(etag.clone());
                    }
                    Response::Object { etag, body, .. }
                        if our_owners.contains(&Holder::decode(body).owner()) =>
                    {
                        ours.insert(etag.clone());
                    }
                    _ => {}
                }
                lock.handle_response(req.id, response, now);
            }
        }
        if in_flight.is_none() {
            if let Some(req) = lock.poll_request() {
                if let Some(body) = req.intent.body() {
                    our_owners.insert(Holder::decode(body).owner());
                    our_bodies.push(body.clone());
                }
                in_flight = Some(req);
            }
        }
        while let Some(event) = lock.poll_event() {
            if let Event::Acquired { etag, .. } = &event {
                assert!(
                    ours.contains(etag),
                    "acquired {etag} that no write or read of ours produced"
                );
            }
        }
        let _ = lock.poll_timeout();
        let _ = lock.is_held(now);
    }
}

/// Seeds for the corpora: a few meaningful inputs per target.
pub fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let record = Record {
        owner: OwnerId::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef),
        seq: 3,
        lease: Duration::from_secs(60),
        host: "build-7".into(),
        pid: 4242,
        acquired_unix_ms: 1_764_500_000_000,
        written_unix_ms: 1_764_500_040_000,
        fence: None,
        value: None,
        writer: None,
        cooldown: false,
        parked: false,
        terraform: None,
    };
    vec![
        ("record", record.encode().to_vec()),
        (
            "record",
            br#"{"id":"6f9619ff-8b86-d011-b42d-00c04fc964ff","created_at":"2026-11-30T10:00:00Z"}"#
                .to_vec(),
        ),
        (
            "record",
            br#"{"sets3lock":2,"owner":"zz","seq":-1}"#.to_vec(),
        ),
        ("url", b"s3://my-bucket/locks/job".to_vec()),
        ("url", b"s3://b/".to_vec()),
        ("url", b"az://locks/job".to_vec()),
        ("url", b"GS://my_bucket.example/a b".to_vec()),
        ("url", b"az://a--b/k".to_vec()),
        (
            "url",
            "S3://bucket.with.dots/k\u{e9}y with spaces"
                .as_bytes()
                .to_vec(),
        ),
        (
            "classify",
            [
                &[3u8, 0x01, 0x94][..],
                b"\x00<Error><Code>PreconditionFailed</Code></Error>",
            ]
            .concat(),
        ),
        (
            "classify",
            [
                &[0u8, 0x00, 0x64, 34][..],
                b"\"d41d8cd98f00b204e9800998ecf8427e\"",
            ]
            .concat(),
        ),
        (
            "classify",
            [
                &[2u8, 0x01, 0x90, 0][..],
                b"<Error><Code>NoSuchBucket</Code><Message>x &amp; y</Message></Error>",
            ]
            .concat(),
        ),
        (
            "classify_azure",
            [
                &[0u8, 0x01, 0x35, 0, 17][..],
                b"BlobAlreadyExists<Error><Code>BlobAlreadyExists</Code></Error>",
            ]
            .concat(),
        ),
        (
            "classify_azure",
            [&[1u8, 0x01, 0x38, 0, 14][..], b"LeaseIdMissing"].concat(),
        ),
        (
            "classify_azure",
            [
                &[3u8, 0x00, 0x64, 19][..],
                b"\"0x8DCB2F1B4D3A2C1\"",
                &[0],
                b"record",
            ]
            .concat(),
        ),
        (
            "classify_gcs",
            [
                &[0u8, 0x00, 0x64, 0][..],
                br#"{"kind":"storage#object","generation":"1764500000000001"}"#,
            ]
            .concat(),
        ),
        (
            "classify_gcs",
            [
                &[1u8, 0x01, 0x38, 0][..],
                br#"{"error":{"code":412,"errors":[{"reason":"conditionNotMet"}]}}"#,
            ]
            .concat(),
        ),
        (
            "classify_gcs",
            [&[3u8, 0x00, 0x64, 16][..], b"1764500000000001", b"record"].concat(),
        ),
        (
            "classify_gcs",
            [
                &[2u8, 0x01, 0x2c, 0][..],
                br#"{"error":{"code":404,"message":"The specified bucket does not exist."}}"#,
            ]
            .concat(),
        ),
        ("machine", (0u8..=255).collect()),
        ("machine", (0u8..=255).rev().cycle().take(600).collect()),
        (
            "machine",
            [7u8, 0, 1, 0, 0, 3, 0, 0, 0, 0, 3, 0, 5, 3, 2, 3, 9].repeat(20),
        ),
    ]
}
