//! Azure Blob Storage's reply table (`sets3lock_proto::reply::azure::classify`), cell by cell: every status
//! from 100 to 599, every request kind, each error code the table names (and some it does not),
//! the code in `x-ms-error-code`, in the XML body or in both, with and without an `ETag`; then
//! the hints, and arbitrary replies, which must always fit their request.

use http::{HeaderMap, HeaderValue, StatusCode};
use proptest::prelude::*;
use sets3lock_proto::reply::azure;
use sets3lock_proto::{Ambiguity, Error, IntentKind, Response, Scheme};

const KINDS: [IntentKind; 4] = [
    IntentKind::PutIfNoneMatch,
    IntentKind::PutIfMatch,
    IntentKind::DeleteIfMatch,
    IntentKind::Get,
];

/// Where the reply carries its error code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Carried {
    Header,
    Body,
    Both,
}

#[derive(Clone, Copy, Debug)]
struct Reply {
    status: u16,
    code: Option<&'static str>,
    message: Option<&'static str>,
    carried: Carried,
    etag: bool,
}

const LEASE: [&str; 3] = [
    "LeaseIdMissing",
    "LeaseIdMismatchWithBlobOperation",
    "LeaseNotPresentWithBlobOperation",
];

const CODES: [(Option<&str>, Option<&str>); 20] = [
    (None, None),
    (
        Some("ContainerNotFound"),
        Some("The specified container does not exist."),
    ),
    (
        Some("BlobNotFound"),
        Some("The specified blob does not exist."),
    ),
    (
        Some("BlobAlreadyExists"),
        Some("The specified blob already exists."),
    ),
    (
        Some("ConditionNotMet"),
        Some("The condition specified using HTTP conditional header(s) is not met."),
    ),
    (Some("LeaseIdMissing"), None),
    (Some("LeaseIdMismatchWithBlobOperation"), None),
    (Some("LeaseNotPresentWithBlobOperation"), None),
    (Some("LeaseAlreadyPresent"), None),
    (
        Some("AuthenticationFailed"),
        Some("Server failed to authenticate the request."),
    ),
    (
        Some("AuthenticationFailed"),
        Some("Request date header too old: 'Fri, 01 Jan 2026 00:00:00 GMT'"),
    ),
    (Some("AuthorizationPermissionMismatch"), None),
    (Some("AuthorizationFailure"), None),
    (
        Some("InvalidHeaderValue"),
        Some("The API version 2099-01-01 is not supported by Azurite."),
    ),
    (
        Some("InvalidHeaderValue"),
        Some("The value for one of the HTTP headers is not in the correct format."),
    ),
    (Some("UnsupportedHeader"), None),
    (Some("OperationTimedOut"), None),
    (Some("ServerBusy"), None),
    (Some("InternalError"), None),
    (Some("SnapshotsPresent"), None),
];

fn replies() -> Vec<Reply> {
    let mut out = Vec::new();
    for status in 100..=599u16 {
        for (code, message) in CODES {
            for carried in [Carried::Header, Carried::Body, Carried::Both] {
                if code.is_none() && carried != Carried::Both {
                    continue;
                }
                for etag in [false, true] {
                    out.push(Reply {
                        status,
                        code,
                        message,
                        carried,
                        etag,
                    });
                }
            }
        }
    }
    out
}

fn classify(kind: IntentKind, r: Reply) -> Response {
    let mut headers = HeaderMap::new();
    if r.etag {
        headers.insert(
            http::header::ETAG,
            HeaderValue::from_static("\"0x8DCB2F1B4D3A2C1\""),
        );
    }
    if let (Some(c), Carried::Header | Carried::Both) = (r.code, r.carried) {
        headers.insert("x-ms-error-code", HeaderValue::from_static(c));
    }
    let body_code = match r.carried {
        Carried::Body | Carried::Both => r.code,
        Carried::Header => None,
    };
    let body = if r.code.is_none() && r.message.is_none() {
        String::new()
    } else {
        format!(
            "\u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?><Error>{}{}</Error>",
            body_code
                .map(|c| format!("<Code>{c}</Code>"))
                .unwrap_or_default(),
            r.message
                .map(|m| format!("<Message>{m}\nRequestId:1\nTime:2026-01-01T00:00:00Z</Message>"))
                .unwrap_or_default()
        )
    };
    azure::classify(
        kind,
        StatusCode::from_u16(r.status).expect("a status"),
        &headers,
        body.as_bytes(),
    )
}

/// What the table says, in words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cell {
    Written,
    Deleted,
    Object,
    NotModified,
    Exists,
    Mismatch,
    Absent,
    Ambiguous,
    Refused,
    Clock,
    MissingContainer,
    MissingVersion,
    Unsupported,
}

/// The table of `src/reply/azure.rs`, written out again.
fn cell(kind: IntentKind, r: &Reply) -> Cell {
    use IntentKind::*;
    let code = r.code;
    let write = matches!(kind, PutIfMatch | DeleteIfMatch);
    match r.status {
        200..=299 if kind == DeleteIfMatch => Cell::Deleted,
        200..=299 if !r.etag => Cell::MissingVersion,
        200..=299 if kind == Get => Cell::Object,
        200..=299 => Cell::Written,
        304 if kind == Get => Cell::NotModified,
        304 => Cell::Ambiguous,
        404 if code == Some("ContainerNotFound") => Cell::MissingContainer,
        404 if kind != PutIfNoneMatch && matches!(code, None | Some("BlobNotFound")) => {
            Cell::Absent
        }
        409 if kind == PutIfNoneMatch && code == Some("BlobAlreadyExists") => Cell::Exists,
        409 if kind == Get || matches!(code, None | Some("BlobAlreadyExists")) => Cell::Ambiguous,
        412 if matches!(code, None | Some("ConditionNotMet")) => match kind {
            PutIfNoneMatch => Cell::Exists,
            _ if write => Cell::Mismatch,
            _ => Cell::Ambiguous,
        },
        400 if code == Some("OperationTimedOut") => Cell::Ambiguous,
        408 | 429 | 500 | 502..=599 => Cell::Ambiguous,
        501 => Cell::Unsupported,
        // A refusal of the request's date, whatever the status, names the clock.
        _ if code == Some("AuthenticationFailed")
            && r.message.is_some_and(|m| m.contains("too old")) =>
        {
            Cell::Clock
        }
        _ => Cell::Refused,
    }
}

fn cell_of(got: &Response) -> Cell {
    match got {
        Response::Written { .. } => Cell::Written,
        Response::Deleted => Cell::Deleted,
        Response::Object { .. } => Cell::Object,
        Response::NotModified => Cell::NotModified,
        Response::Exists => Cell::Exists,
        Response::Mismatch => Cell::Mismatch,
        Response::Absent => Cell::Absent,
        Response::Ambiguous(_) => Cell::Ambiguous,
        Response::Refused(Error::Clock { .. }) => Cell::Clock,
        Response::Refused(Error::MissingContainer {
            store: Scheme::Azure,
            ..
        }) => Cell::MissingContainer,
        Response::Refused(Error::MissingVersion {
            store: Scheme::Azure,
            ..
        }) => Cell::MissingVersion,
        Response::Refused(Error::ConditionalUnsupported { .. }) => Cell::Unsupported,
        Response::Refused(Error::Refused { .. }) => Cell::Refused,
        other => panic!("azure::classify gave an answer no cell has: {other:?}"),
    }
}

#[test]
fn every_cell_of_azures_table_is_what_classify_answers() {
    let mut checked = 0;
    for r in replies() {
        for kind in KINDS {
            let got = classify(kind, r);
            assert_eq!(
                cell_of(&got),
                cell(kind, &r),
                "{kind} answered {r:?}: {got:?}"
            );
            assert!(got.fits(kind), "{kind} {r:?}: {got:?} does not fit");
            match &got {
                // The status, and the code wherever it was carried.
                Response::Ambiguous(Ambiguity::Status { status, code }) => {
                    assert_eq!(*status, r.status);
                    if r.status != 304 {
                        assert_eq!(code.as_deref(), r.code, "{kind} {r:?}");
                    }
                }
                Response::Refused(Error::Refused { status, code, .. }) => {
                    assert_eq!((*status, code.as_deref()), (r.status, r.code));
                }
                _ => {}
            }
            checked += 1;
        }
    }
    assert!(checked > 100_000, "{checked}");
}

fn hint(kind: IntentKind, status: u16, code: &'static str, message: &'static str) -> String {
    let r = Reply {
        status,
        code: Some(code),
        message: Some(message),
        carried: Carried::Both,
        etag: false,
    };
    match classify(kind, r) {
        Response::Refused(Error::Refused { hint, .. }) => hint.to_owned(),
        other => panic!("{kind} {status} {code}: {other:?}"),
    }
}

#[test]
fn refusals_name_their_fix() {
    use IntentKind::*;
    for code in LEASE {
        for kind in [PutIfNoneMatch, PutIfMatch, DeleteIfMatch] {
            let h = hint(kind, 412, code, "There is currently a lease on the blob.");
            assert!(h.contains("native Azure lease"), "{h}");
            assert!(h.contains("az storage blob lease break"), "{h}");
        }
    }
    let h = hint(PutIfMatch, 409, "LeaseAlreadyPresent", "x");
    assert!(h.contains("az storage blob lease break"), "{h}");
    let h = hint(PutIfMatch, 403, "AuthenticationFailed", "Server failed");
    for word in ["AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN", "account"] {
        assert!(h.contains(word), "{h}");
    }
    assert_eq!(
        hint(
            Get,
            403,
            "AuthorizationPermissionMismatch",
            "not authorized"
        ),
        "the SAS or role lacks permission: a SAS needs sp=rwd (read, write, delete) on the \
         container; a role needs Storage Blob Data Contributor"
    );
    let h = hint(
        Get,
        403,
        "AuthorizationFailure",
        "Server failed to authenticate",
    );
    for word in ["AZURE_STORAGE_KEY", "sp=rwd", "network rules"] {
        assert!(h.contains(word), "{h}");
    }
    let h = hint(
        Get,
        400,
        "InvalidHeaderValue",
        "The API version 2099 is not supported by Azurite.",
    );
    assert!(h.contains("--skipApiVersionCheck"), "{h}");
    let h = hint(Get, 400, "UnsupportedHeader", "x");
    assert!(h.contains("--loose"), "{h}");
    let h = hint(PutIfNoneMatch, 404, "BlobNotFound", "x");
    assert!(h.contains("endpoint"), "{h}");
}

#[test]
fn a_missing_container_says_how_to_create_it() {
    let r = Reply {
        status: 404,
        code: Some("ContainerNotFound"),
        message: Some("The specified container does not exist."),
        carried: Carried::Both,
        etag: false,
    };
    let Response::Refused(e) = classify(IntentKind::Get, r) else {
        panic!("refused")
    };
    assert_eq!(
        e.to_string(),
        "the Azure Blob Storage container does not exist (Azure said ContainerNotFound: The \
         specified container does not exist.): create it (`az storage container create --name \
         CONTAINER`), or fix the container name or the storage account"
    );
    let e = Error::MissingVersion {
        store: Scheme::Azure,
        op: IntentKind::PutIfMatch,
        status: 201,
    };
    assert_eq!(
        e.to_string(),
        "the endpoint answered PUT If-Match with HTTP 201 but no ETag header: it is not \
         Azure-compatible enough to hold a lock"
    );
}

#[test]
fn the_mocks_azure_replies_mean_what_azures_do() {
    use sets3lock_mock::{Dialect, MissingKeyIfMatch, MockS3, Semantics};
    use sets3lock_proto::Intent;
    for missing_key_if_match in [
        MissingKeyIfMatch::NotFound,
        MissingKeyIfMatch::PreconditionFailed,
    ] {
        let mut az = MockS3::with_semantics(Semantics {
            dialect: Dialect::Azure,
            missing_key_if_match,
            ..Semantics::default()
        });
        let create = Intent::PutIfNoneMatch { body: "a".into() };
        let r = az.execute("c", "k", &create);
        assert_eq!(r.status, 404);
        assert_eq!(r.headers["x-ms-error-code"], "ContainerNotFound");
        az.create_bucket("c");
        let r = az.execute("c", "k", &create);
        assert_eq!(r.status, 201);
        let Response::Written { etag: first } = r.classify(create.kind()) else {
            panic!("{r:?}")
        };
        assert!(first.as_str().starts_with("0x8D"), "{first}");
        let r = az.execute("c", "k", &create);
        assert_eq!(
            (
                r.status.as_u16(),
                r.headers["x-ms-error-code"].to_str().ok()
            ),
            (409, Some("BlobAlreadyExists"))
        );
        assert_eq!(r.classify(create.kind()), Response::Exists);
        // The same body again gets a new ETag: Azure's are not content hashes.
        let renew = Intent::PutIfMatch {
            etag: first.clone(),
            body: "a".into(),
        };
        let Response::Written { etag: second } = az.respond("c", "k", &renew) else {
            panic!("renewal")
        };
        assert_ne!(first, second);
        assert_eq!(az.respond("c", "k", &renew), Response::Mismatch);
        let read = Intent::Get {
            if_none_match: Some(second.clone()),
        };
        assert_eq!(az.execute("c", "k", &read).status, 304);
        assert_eq!(az.respond("c", "k", &read), Response::NotModified);
        let stale = Intent::DeleteIfMatch { etag: first };
        assert_eq!(az.respond("c", "k", &stale), Response::Mismatch);
        let delete = Intent::DeleteIfMatch { etag: second };
        let r = az.execute("c", "k", &delete);
        assert_eq!(r.status, 202);
        assert_eq!(r.classify(delete.kind()), Response::Deleted);
        // If-Match on the missing blob: Azure 404, Azurite 412; both end in a read.
        let missing = az.execute("c", "k", &delete);
        let expected = match missing_key_if_match {
            MissingKeyIfMatch::NotFound => (404, "BlobNotFound", Response::Absent),
            MissingKeyIfMatch::PreconditionFailed => (412, "ConditionNotMet", Response::Mismatch),
        };
        assert_eq!(
            (
                missing.status.as_u16(),
                missing.headers["x-ms-error-code"].to_str().expect("ascii"),
                missing.classify(delete.kind())
            ),
            expected
        );
        let get = Intent::Get {
            if_none_match: None,
        };
        assert_eq!(az.respond("c", "k", &get), Response::Absent);
    }
}

fn kind() -> impl Strategy<Value = IntentKind> {
    prop::sample::select(KINDS.to_vec())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Whatever Azure (or anything in its place) answers, the answer fits the request and a
    /// success is a 2xx with a version.
    #[test]
    fn every_reply_fits_its_request(
        kind in kind(),
        status in 100u16..=999,
        code in prop::option::of("[A-Za-z.]{0,70}"),
        etag in prop::option::of(prop::collection::vec(any::<u8>(), 0..40)),
        body in prop::collection::vec(any::<u8>(), 0..200),
    ) {
        let Ok(status) = StatusCode::from_u16(status) else { return Ok(()) };
        let mut headers = HeaderMap::new();
        if let Some(v) = code.and_then(|c| HeaderValue::from_str(&c).ok()) {
            headers.insert("x-ms-error-code", v);
        }
        if let Some(v) = etag.and_then(|e| HeaderValue::from_bytes(&e).ok()) {
            headers.insert(http::header::ETAG, v);
        }
        let got = azure::classify(kind, status, &headers, &body);
        prop_assert!(got.fits(kind), "{kind} {status}: {got:?}");
        if matches!(got, Response::Written { .. } | Response::Object { .. } | Response::Deleted) {
            prop_assert!(status.is_success());
        }
    }
}
