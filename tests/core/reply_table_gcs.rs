//! Google Cloud Storage's reply table (`sets3lock_proto::reply::gcs::classify`), cell by cell: every status
//! from 100 to 599, every request kind, each JSON error reason the table names (and some it
//! does not), with the generation in the JSON object resource, in `x-goog-generation`, in both
//! or in neither; then the hints, and arbitrary replies, which must always fit their request.

use http::{HeaderMap, HeaderValue, StatusCode};
use proptest::prelude::*;
use sets3lock_proto::reply::gcs;
use sets3lock_proto::{Ambiguity, Error, IntentKind, Response, Scheme};

const KINDS: [IntentKind; 4] = [
    IntentKind::PutIfNoneMatch,
    IntentKind::PutIfMatch,
    IntentKind::DeleteIfMatch,
    IntentKind::Get,
];

/// Where a 2xx reply carries the generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Generation {
    None,
    /// `"generation":"N"` in the JSON body.
    BodyString,
    /// `"generation":N` in the JSON body.
    BodyNumber,
    Header,
    Both,
}

#[derive(Clone, Copy, Debug)]
struct Reply {
    status: u16,
    reason: Option<&'static str>,
    message: Option<&'static str>,
    generation: Generation,
}

const MISSING_BUCKET: &str = "The specified bucket does not exist.";

const REASONS: [(Option<&str>, Option<&str>); 11] = [
    (None, None),
    (Some("notFound"), Some(MISSING_BUCKET)),
    (Some("notFound"), Some("No such object: my-bucket/locks/job")),
    (
        Some("conditionNotMet"),
        Some("At least one of the pre-conditions you specified did not hold."),
    ),
    (
        Some("rateLimitExceeded"),
        Some("The object my-bucket/locks/job exceeded the rate limit for object mutation operations (create, update, and delete)."),
    ),
    (Some("required"), Some("Login Required.")),
    (
        Some("forbidden"),
        Some("sa@p.iam.gserviceaccount.com does not have storage.objects.create access."),
    ),
    (Some("invalid"), Some("invalid uploadType")),
    (Some("backendError"), Some("Backend Error")),
    (Some("RequestTimeout"), None),
    (Some("notImplemented"), None),
];

const GENERATIONS: [Generation; 5] = [
    Generation::None,
    Generation::BodyString,
    Generation::BodyNumber,
    Generation::Header,
    Generation::Both,
];

fn replies() -> Vec<Reply> {
    let mut out = Vec::new();
    for status in 100..=599u16 {
        for (reason, message) in REASONS {
            for generation in GENERATIONS {
                out.push(Reply {
                    status,
                    reason,
                    message,
                    generation,
                });
            }
        }
    }
    out
}

fn classify(kind: IntentKind, r: Reply) -> Response {
    let mut headers = HeaderMap::new();
    headers.insert(
        http::header::ETAG,
        HeaderValue::from_static("\"CKih16GjycICEAE=\""),
    );
    if matches!(r.generation, Generation::Header | Generation::Both) {
        headers.insert(
            "x-goog-generation",
            HeaderValue::from_static("1764500000000002"),
        );
    }
    let body = if (200..300).contains(&r.status) {
        match r.generation {
            Generation::BodyString | Generation::Both => {
                r#"{"kind":"storage#object","name":"k","generation":"1764500000000001"}"#
            }
            Generation::BodyNumber => r#"{"kind":"storage#object","generation":1764500000000001}"#,
            Generation::None | Generation::Header => r#"{"kind":"storage#object"}"#,
        }
        .to_owned()
    } else {
        match (r.reason, r.message) {
            (None, None) => String::new(),
            (reason, message) => serde_json::json!({
                "error": {
                    "code": r.status,
                    "message": message,
                    "errors": [{"reason": reason, "message": message, "domain": "global"}],
                }
            })
            .to_string(),
        }
    };
    gcs::classify(
        kind,
        StatusCode::from_u16(r.status).expect("a status"),
        &headers,
        body.as_bytes(),
    )
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cell {
    Written(&'static str),
    Deleted,
    Object,
    NotModified,
    Exists,
    Mismatch,
    Absent,
    Ambiguous,
    Refused,
    MissingBucket,
    MissingVersion,
    Unsupported,
}

/// The table of `src/reply/gcs.rs`, written out again.
fn cell(kind: IntentKind, r: &Reply) -> Cell {
    use IntentKind::*;
    let in_body = matches!(
        r.generation,
        Generation::BodyString | Generation::BodyNumber | Generation::Both
    );
    let in_header = matches!(r.generation, Generation::Header | Generation::Both);
    match r.status {
        200..=299 => match kind {
            DeleteIfMatch => Cell::Deleted,
            Get if in_header => Cell::Object,
            // The body's generation first: the object resource is the upload's own answer.
            PutIfNoneMatch | PutIfMatch if in_body => Cell::Written("1764500000000001"),
            PutIfNoneMatch | PutIfMatch if in_header => Cell::Written("1764500000000002"),
            _ => Cell::MissingVersion,
        },
        304 if kind == Get => Cell::NotModified,
        304 => Cell::Ambiguous,
        404 if r.message == Some(MISSING_BUCKET) => Cell::MissingBucket,
        // A create cannot miss its object: the bucket is missing.
        404 if kind == PutIfNoneMatch => Cell::MissingBucket,
        404 => Cell::Absent,
        412 => match kind {
            PutIfNoneMatch => Cell::Exists,
            PutIfMatch | DeleteIfMatch => Cell::Mismatch,
            Get => Cell::Ambiguous,
        },
        400 if r.reason == Some("RequestTimeout") => Cell::Ambiguous,
        403 if r.reason == Some("rateLimitExceeded") => Cell::Ambiguous,
        408 | 409 | 429 | 500 | 502..=599 => Cell::Ambiguous,
        501 => Cell::Unsupported,
        _ => Cell::Refused,
    }
}

fn cell_of(got: &Response) -> Cell {
    match got {
        Response::Written { etag } => match etag.as_str() {
            "1764500000000001" => Cell::Written("1764500000000001"),
            "1764500000000002" => Cell::Written("1764500000000002"),
            other => panic!("a generation that was not sent: {other}"),
        },
        Response::Deleted => Cell::Deleted,
        Response::Object { etag, .. } => {
            assert_eq!(etag.as_str(), "1764500000000002", "the header's generation");
            Cell::Object
        }
        Response::NotModified => Cell::NotModified,
        Response::Exists => Cell::Exists,
        Response::Mismatch => Cell::Mismatch,
        Response::Absent => Cell::Absent,
        Response::Ambiguous(_) => Cell::Ambiguous,
        Response::Refused(Error::MissingContainer {
            store: Scheme::Gcs, ..
        }) => Cell::MissingBucket,
        Response::Refused(Error::MissingVersion {
            store: Scheme::Gcs, ..
        }) => Cell::MissingVersion,
        Response::Refused(Error::ConditionalUnsupported { .. }) => Cell::Unsupported,
        Response::Refused(Error::Refused { .. }) => Cell::Refused,
        other => panic!("gcs::classify gave an answer no cell has: {other:?}"),
    }
}

#[test]
fn every_cell_of_gcss_table_is_what_classify_answers() {
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
                Response::Ambiguous(Ambiguity::Status { status, code }) => {
                    assert_eq!(*status, r.status);
                    if r.status != 304 {
                        assert_eq!(code.as_deref(), r.reason, "{kind} {r:?}");
                    }
                }
                Response::Refused(Error::Refused { status, code, .. }) => {
                    assert_eq!((*status, code.as_deref()), (r.status, r.reason));
                }
                _ => {}
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 500 * REASONS.len() * GENERATIONS.len() * 4);
}

fn refusal(kind: IntentKind, status: u16, reason: usize) -> Error {
    let (reason, message) = REASONS[reason];
    let r = Reply {
        status,
        reason,
        message,
        generation: Generation::None,
    };
    match classify(kind, r) {
        Response::Refused(e) => e,
        other => panic!("{kind} {status}: {other:?}"),
    }
}

#[test]
fn refusals_name_their_fix() {
    use IntentKind::*;
    let text = refusal(PutIfNoneMatch, 401, 5).to_string();
    assert!(text.contains("GOOGLE_APPLICATION_CREDENTIALS"), "{text}");
    assert!(text.contains("metadata server"), "{text}");
    let text = refusal(DeleteIfMatch, 403, 6).to_string();
    for word in [
        "storage.objects.create",
        "storage.objects.get",
        "storage.objects.delete",
        "roles/storage.objectUser",
    ] {
        assert!(text.contains(word), "{text}");
    }
    let text = refusal(Get, 404, 1).to_string();
    assert_eq!(
        text,
        "the Google Cloud Storage bucket does not exist (GCS said notFound: The specified bucket \
         does not exist.): create it (`gcloud storage buckets create gs://BUCKET`), or fix the \
         bucket name or the endpoint"
    );
    // A create that misses its object: the endpoint is wrong, not the object.
    let text = refusal(PutIfNoneMatch, 404, 2).to_string();
    assert!(text.contains("endpoint"), "{text}");
    let text = refusal(PutIfMatch, 400, 7).to_string();
    assert!(text.contains("multipart"), "{text}");
    let missing = Error::MissingVersion {
        store: Scheme::Gcs,
        op: Get,
        status: 200,
    };
    assert_eq!(
        missing.to_string(),
        "the endpoint answered GET with HTTP 200 but no generation (neither a \"generation\" in \
         the JSON body nor an x-goog-generation header): it is not GCS-compatible enough to \
         hold a lock"
    );
}

#[test]
fn the_rate_limit_is_never_a_refusal_nor_a_success() {
    for kind in KINDS {
        let r = Reply {
            status: 429,
            reason: REASONS[4].0,
            message: REASONS[4].1,
            generation: Generation::Both,
        };
        assert_eq!(
            classify(kind, r),
            Response::Ambiguous(Ambiguity::Status {
                status: 429,
                code: Some("rateLimitExceeded".into())
            })
        );
    }
}

#[test]
fn the_mocks_gcs_replies_mean_what_gcss_do() {
    use sets3lock_mock::{Dialect, MockS3, Semantics};
    use sets3lock_proto::{ConditionalDelete, Intent};
    let mut gs = MockS3::with_semantics(Semantics {
        dialect: Dialect::Gcs,
        ..Semantics::default()
    });
    let create = Intent::PutIfNoneMatch { body: "a".into() };
    assert!(matches!(
        gs.respond("b", "k", &create),
        Response::Refused(Error::MissingContainer {
            store: Scheme::Gcs,
            ..
        })
    ));
    gs.create_bucket("b");
    let r = gs.execute("b", "k", &create);
    assert_eq!(r.status, 200);
    let resource: serde_json::Value = serde_json::from_slice(&r.body).expect("JSON");
    let Some(serde_json::Value::String(generation)) = resource.get("generation") else {
        panic!("{resource}")
    };
    let Response::Written { etag: first } = r.classify(create.kind()) else {
        panic!("{r:?}")
    };
    assert_eq!(first.as_str(), generation);
    let again = gs.execute("b", "k", &create);
    assert_eq!(again.status, 412);
    assert_eq!(again.classify(create.kind()), Response::Exists);
    // Generations are unique and increasing, whatever the body.
    let renew = Intent::PutIfMatch {
        etag: first.clone(),
        body: "a".into(),
    };
    let Response::Written { etag: second } = gs.respond("b", "k", &renew) else {
        panic!("renewal")
    };
    let number = |e: &sets3lock_proto::ETag| e.as_str().parse::<u64>().expect("decimal");
    assert!(number(&second) > number(&first));
    assert_eq!(gs.respond("b", "k", &renew), Response::Mismatch);
    let read = Intent::Get {
        if_none_match: Some(second.clone()),
    };
    assert_eq!(gs.execute("b", "k", &read).status, 304);
    let plain = gs.execute(
        "b",
        "k",
        &Intent::Get {
            if_none_match: None,
        },
    );
    assert_eq!(plain.headers["x-goog-generation"], second.as_str());
    assert_ne!(plain.headers["etag"], second.header_value().as_str());
    assert!(
        matches!(plain.classify(IntentKind::Get), Response::Object { etag, .. } if etag == second)
    );
    assert_eq!(
        gs.respond("b", "k", &Intent::DeleteIfMatch { etag: first }),
        Response::Mismatch
    );
    let delete = Intent::DeleteIfMatch {
        etag: second.clone(),
    };
    assert_eq!(gs.execute("b", "k", &delete).status, 204);
    assert_eq!(gs.respond("b", "k", &delete), Response::Absent);

    // fake-gcs-server: DELETE ignores ifGenerationMatch, reads are never 304.
    let mut fake = MockS3::with_semantics(Semantics {
        dialect: Dialect::Gcs,
        conditional_delete: ConditionalDelete::IgnoresIfMatch,
        not_modified: false,
        ..Semantics::default()
    });
    fake.create_bucket("b");
    let Response::Written { etag } = fake.respond("b", "k", &create) else {
        panic!("create")
    };
    let read = Intent::Get {
        if_none_match: Some(etag.clone()),
    };
    assert_eq!(fake.execute("b", "k", &read).status, 200);
    assert_eq!(
        fake.respond("b", "k", &Intent::DeleteIfMatch { etag: second }),
        Response::Deleted
    );
    assert!(fake.object("b", "k").is_none());
}

fn kind() -> impl Strategy<Value = IntentKind> {
    prop::sample::select(KINDS.to_vec())
}

fn json_body() -> impl Strategy<Value = Vec<u8>> {
    let generation = prop_oneof![
        Just(serde_json::Value::Null),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<f64>().prop_map(serde_json::Value::from),
        "[0-9a-z-]{0,25}".prop_map(serde_json::Value::from),
    ];
    let reason = prop::option::of("[A-Za-z_.]{0,70}");
    (generation, reason, "\\PC{0,40}").prop_map(|(g, reason, message)| {
        serde_json::json!({
            "generation": g,
            "error": {"code": 1, "message": message, "errors": [{"reason": reason}]},
        })
        .to_string()
        .into_bytes()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Whatever GCS (or anything in its place) answers, the answer fits the request and a
    /// success is a 2xx with a decimal generation.
    #[test]
    fn every_reply_fits_its_request(
        kind in kind(),
        status in 100u16..=999,
        header in prop::option::of(prop::collection::vec(any::<u8>(), 0..30)),
        body in prop_oneof![prop::collection::vec(any::<u8>(), 0..200), json_body()],
    ) {
        let Ok(status) = StatusCode::from_u16(status) else { return Ok(()) };
        let mut headers = HeaderMap::new();
        if let Some(v) = header.and_then(|e| HeaderValue::from_bytes(&e).ok()) {
            headers.insert("x-goog-generation", v);
        }
        let got = gcs::classify(kind, status, &headers, &body);
        prop_assert!(got.fits(kind), "{kind} {status}: {got:?}");
        match &got {
            Response::Written { etag } | Response::Object { etag, .. } => {
                prop_assert!(status.is_success());
                prop_assert!(etag.as_str().bytes().all(|b| b.is_ascii_digit()));
            }
            Response::Deleted => prop_assert!(status.is_success()),
            _ => {}
        }
    }
}
