//! The protocol's executable knowledge as language-neutral test vectors, in `docs/vectors/`:
//! each store's reply table, the record format's encode and decode cases, and scenarios
//! recorded from the simulation (inputs with their times, and the requests and events that
//! came out). One test checks that the files are what the code makes today (regenerate them
//! with `SETS3LOCK_WRITE_VECTORS=1`); another replays every vector through the core from the
//! files alone, as another implementation would.

mod json;

use core::time::Duration;
use http::{HeaderMap, HeaderValue, StatusCode};
use serde_json::{json, Value};
use sets3lock_mock::{Exit, Fault, Input, ProcessPlan, Round, Sim, SimConfig, Start, Step, Tape};
use sets3lock_proto::reply::{azure, gcs, s3};
use sets3lock_proto::{
    CommandError, Config, Fence, Holder, Instant, IntentKind, Lock, LockState, OwnerId, Record,
    RequestId, Response, TerraformInfo, Wait,
};
use std::path::PathBuf;

const KINDS: [IntentKind; 4] = [
    IntentKind::PutIfNoneMatch,
    IntentKind::PutIfMatch,
    IntentKind::DeleteIfMatch,
    IntentKind::Get,
];

type Classifier = fn(IntentKind, StatusCode, &HeaderMap, &[u8]) -> Response;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/vectors")
}

// ---- the reply tables --------------------------------------------------------------------

/// One reply as it comes off the wire.
struct Reply {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: String,
}

/// Every store's replies: the statuses and error codes its table names, with and without
/// the header that carries a version, for every request kind.
fn replies(store: &str) -> Vec<Reply> {
    let s3_error =
        |code: &str| format!("<?xml version=\"1.0\"?><Error><Code>{code}</Code></Error>");
    let azure_error = |code: &str| {
        format!("<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>{code}</Code></Error>")
    };
    let gcs_error = |status: u16, reason: &str| {
        json!({ "error": { "code": status, "message": reason, "errors": [{ "reason": reason }] } })
            .to_string()
    };
    let record = Record {
        owner: OwnerId::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef),
        seq: 1,
        lease: Duration::from_secs(60),
        host: "build-7".into(),
        pid: 4242,
        acquired_unix_ms: 1_764_500_000_000,
        written_unix_ms: 1_764_500_000_000,
        fence: None,
        value: None,
        writer: None,
        cooldown: false,
        parked: false,
        terraform: None,
    }
    .encode();
    let record = String::from_utf8(record.to_vec()).expect("JSON");
    let mut out = Vec::new();
    let mut add = |status: u16, headers: Vec<(&'static str, String)>, body: String| {
        out.push(Reply {
            status,
            headers,
            body,
        })
    };
    match store {
        "s3" => {
            for etag in [None, Some("\"9a0364b9e99bb480dd25e1f0284c8555\"")] {
                let h = || {
                    etag.map(|e| ("etag", e.to_owned()))
                        .into_iter()
                        .collect::<Vec<_>>()
                };
                add(200, h(), String::new());
                add(200, h(), record.clone());
                add(204, h(), String::new());
                add(304, h(), String::new());
                for (status, code) in [
                    (400, "BadDigest"),
                    (400, "RequestTimeout"),
                    (403, "AccessDenied"),
                    (403, "RequestTimeTooSkewed"),
                    (403, "SignatureDoesNotMatch"),
                    (403, "ExpiredToken"),
                    (404, "NoSuchKey"),
                    (404, "NoSuchBucket"),
                    (409, "ConditionalRequestConflict"),
                    (409, "OperationAborted"),
                    (411, "MissingContentLength"),
                    (412, "PreconditionFailed"),
                    (429, "SlowDown"),
                    (500, "InternalError"),
                    (501, "NotImplemented"),
                    (503, "SlowDown"),
                ] {
                    add(status, h(), s3_error(code));
                }
                add(301, h(), s3_error("PermanentRedirect"));
                add(404, h(), String::new());
                add(412, h(), String::new());
                add(502, h(), String::new());
            }
        }
        "azure" => {
            for etag in [None, Some("\"0x8DCB2F1B4D3A2C1\"")] {
                let h = |code: Option<&str>| {
                    let mut v: Vec<(&'static str, String)> =
                        etag.map(|e| ("etag", e.to_owned())).into_iter().collect();
                    v.extend(code.map(|c| ("x-ms-error-code", c.to_owned())));
                    v
                };
                add(200, h(None), record.clone());
                add(201, h(None), String::new());
                add(202, h(None), String::new());
                add(304, h(None), String::new());
                for (status, code) in [
                    (400, "Md5Mismatch"),
                    (403, "AuthenticationFailed"),
                    (403, "AuthorizationPermissionMismatch"),
                    (404, "BlobNotFound"),
                    (404, "ContainerNotFound"),
                    (409, "BlobAlreadyExists"),
                    (409, "LeaseIdMissing"),
                    (412, "ConditionNotMet"),
                    (500, "InternalError"),
                    (503, "ServerBusy"),
                ] {
                    add(status, h(Some(code)), azure_error(code));
                }
                add(404, h(None), String::new());
            }
        }
        _ => {
            for generation in [None, Some("1764500000000002")] {
                let h = || {
                    generation
                        .map(|g| ("x-goog-generation", g.to_owned()))
                        .into_iter()
                        .collect::<Vec<_>>()
                };
                let metadata = json!({ "name": "k", "generation": "1764500000000003" }).to_string();
                add(200, h(), record.clone());
                add(200, h(), metadata);
                add(204, h(), String::new());
                add(304, h(), String::new());
                for (status, reason) in [
                    (400, "invalid"),
                    (401, "required"),
                    (403, "forbidden"),
                    (404, "notFound"),
                    (409, "conflict"),
                    (412, "conditionNotMet"),
                    (429, "rateLimitExceeded"),
                    (500, "backendError"),
                    (503, "backendError"),
                ] {
                    add(status, h(), gcs_error(status, reason));
                }
            }
        }
    }
    out
}

fn classifier(store: &str) -> Classifier {
    match store {
        "s3" => s3::classify,
        "azure" => azure::classify,
        _ => gcs::classify,
    }
}

fn headers_of(pairs: impl IntoIterator<Item = (String, String)>) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for (name, value) in pairs {
        let name = http::HeaderName::from_bytes(name.as_bytes()).expect("a header name");
        headers.insert(name, HeaderValue::from_str(&value).expect("a header value"));
    }
    headers
}

fn reply_vectors() -> Value {
    let mut all = serde_json::Map::new();
    for store in ["s3", "azure", "gcs"] {
        let classify = classifier(store);
        let mut cases = Vec::new();
        for reply in replies(store) {
            for kind in KINDS {
                let headers = headers_of(
                    reply
                        .headers
                        .iter()
                        .map(|(n, v)| ((*n).to_owned(), v.clone())),
                );
                let status = StatusCode::from_u16(reply.status).expect("a status");
                let response = classify(kind, status, &headers, reply.body.as_bytes());
                let headers: serde_json::Map<String, Value> = reply
                    .headers
                    .iter()
                    .map(|(n, v)| ((*n).to_owned(), Value::from(v.clone())))
                    .collect();
                cases.push(json!({
                    "request": json::kind(kind),
                    "status": reply.status,
                    "headers": headers,
                    "body": reply.body,
                    "response": json::response(&response),
                }));
            }
        }
        all.insert(store.into(), Value::Array(cases));
    }
    Value::Object(all)
}

// ---- the record format -------------------------------------------------------------------

fn records() -> Vec<Record> {
    let base = Record {
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
        base.clone(),
        Record {
            fence: Some(Fence {
                state: LockState::Held,
                token: 17,
            }),
            value: Some("10.0.0.7:8080".into()),
            ..base.clone()
        },
        Record {
            fence: Some(Fence {
                state: LockState::Free,
                token: 17,
            }),
            seq: 4,
            ..base.clone()
        },
        Record {
            lease: Duration::ZERO,
            writer: Some(2),
            ..base.clone()
        },
        Record {
            cooldown: true,
            lease: Duration::from_secs(300),
            ..base.clone()
        },
        Record {
            parked: true,
            host: "naïve \"host\"\n".into(),
            ..base.clone()
        },
        Record {
            owner: OwnerId::from_u128(0x0123_4567_89ab_4def_8123_4567_89ab_cdef),
            terraform: Some(Box::new(TerraformInfo {
                id: "01234567-89ab-4def-8123-456789abcdef".into(),
                operation: "sets3lock deploy.sh".into(),
                info: "held by sets3lock with a lease of 60 s: renewed while it runs, taken over by sets3lock waiters if it stops renewing".into(),
                who: "alice@build-7".into(),
                version: "sets3lock 0.1.0".into(),
                created: "2025-11-30T10:53:20.000Z".into(),
                path: "state/prod.tfstate.tflock".into(),
            })),
            ..base
        },
    ]
}

fn foreign_bodies() -> Vec<Vec<u8>> {
    vec![
        br#"{"id":"6f9619ff-8b86-d011-b42d-00c04fc964ff","created_at":"2026-11-30T10:00:00Z"}"#
            .to_vec(),
        br#"{"sets3lock":2,"owner":"zz","seq":-1}"#.to_vec(),
        br#"{"sets3lock":1,"owner":"0123456789abcdef0123456789abcdef","seq":1,"lease_ms":1000,"extra":true}"#.to_vec(),
        // Terraform 1.15's own lock, and OpenTofu's (the same seven fields).
        br#"{"ID":"2b6c3a1e-8a5e-7c1d-2f0b-3c4d5e6f7a8b","Operation":"OperationTypeApply","Info":"","Who":"alice@ci-7","Version":"1.15.5","Created":"2026-12-07T10:00:00.123456789Z","Path":"state/prod.tfstate"}"#.to_vec(),
        // An ID that is not a string: Go cannot decode it either.
        br#"{"ID":7,"Operation":"OperationTypeApply"}"#.to_vec(),
        // Another tool's body with an ID: Terraform's has all seven keys.
        br#"{"ID":"job-42","Who":"ci"}"#.to_vec(),
        b"deploy in progress".to_vec(),
        Vec::new(),
        vec![0xff, 0xfe, 0x00, 0x7b],
    ]
}

fn record_vectors() -> Value {
    let encode: Vec<Value> = records()
        .iter()
        .map(|r| {
            let mut m = serde_json::Map::new();
            m.insert("record".into(), json::record(r));
            json::body(&mut m, &r.encode());
            Value::Object(m)
        })
        .collect();
    let decode: Vec<Value> = records()
        .iter()
        .map(|r| r.encode().to_vec())
        .chain(foreign_bodies())
        .map(|bytes| {
            let mut m = serde_json::Map::new();
            json::body(&mut m, &bytes);
            m.insert("holder".into(), json::holder(&Holder::decode(&bytes)));
            Value::Object(m)
        })
        .collect();
    json!({ "encode": encode, "decode": decode })
}

// ---- recorded scenarios ------------------------------------------------------------------

/// The simulations the scenarios are recorded from: contention, a takeover after a crash,
/// lost replies, server errors and conflicts; presence and fenced.
fn simulations() -> Vec<(&'static str, Vec<Tape>)> {
    let round = |start_ms: u64, hold_s: u64, wait: Wait, exit: Exit| Round {
        start_after: Duration::from_millis(start_ms),
        start: Start::Acquire,
        wait,
        hold: Duration::from_secs(hold_s),
        pause: None,
        exit,
    };
    let plan = |fenced: bool, rounds: Vec<Round>| ProcessPlan {
        drift_ppm: 0,
        clock_offset: Duration::ZERO,
        rounds,
        fenced: Some(fenced),
    };
    let ms = Duration::from_millis;
    let quick = Fault::Deliver {
        to_server: ms(5),
        to_client: ms(5),
    };
    let run = |fenced: bool, plans: Vec<ProcessPlan>, faults: Vec<Fault>| {
        let cfg = SimConfig {
            record: true,
            horizon: Duration::from_secs(120),
            ..SimConfig::default()
        };
        let plans = plans
            .into_iter()
            .map(|p| ProcessPlan {
                fenced: Some(fenced),
                ..p
            })
            .collect();
        let report = Sim::new(cfg, plans, faults, 34).expect("valid").run();
        assert!(report.violations.is_empty(), "{:?}", report.violations);
        report.tapes
    };
    let faulty = vec![
        Fault::Lose {
            applied_after: Some(ms(5)),
        },
        quick,
        Fault::ServerError {
            latency: ms(20),
            applied: false,
        },
        Fault::Conflict { latency: ms(10) },
        quick,
        Fault::Lose {
            applied_after: None,
        },
        Fault::RateLimited { latency: ms(10) },
    ];
    let mut silence = vec![quick; 3];
    silence.extend(
        [Fault::Lose {
            applied_after: None,
        }; 30],
    );
    vec![
        (
            "a holder renews and releases; a waiter takes the lock when it is freed",
            run(
                false,
                vec![
                    plan(false, vec![round(0, 12, Wait::No, Exit::Release)]),
                    plan(false, vec![round(500, 1, Wait::Forever, Exit::Release)]),
                ],
                vec![],
            ),
        ),
        (
            "a holder crashes; a waiter takes over after the lease, fenced",
            run(
                true,
                vec![
                    plan(true, vec![round(0, 5, Wait::No, Exit::Crash)]),
                    plan(true, vec![round(500, 1, Wait::Forever, Exit::Release)]),
                ],
                vec![],
            ),
        ),
        (
            "lost replies, a 5xx, a conflict and a 429 on the way to a hold and its release",
            run(
                false,
                vec![
                    plan(false, vec![round(0, 3, Wait::Forever, Exit::Release)]),
                    plan(
                        false,
                        vec![round(
                            3000,
                            1,
                            Wait::Timeout(Duration::from_secs(5)),
                            Exit::Release,
                        )],
                    ),
                ],
                faulty,
            ),
        ),
        (
            "every request lost from the first renewal on: the hold expires",
            run(
                false,
                vec![plan(false, vec![round(0, 30, Wait::No, Exit::Release)])],
                silence,
            ),
        ),
    ]
}

fn step(s: &Step) -> Value {
    let (input, fields) = match &s.input {
        Input::Acquire { unix_ms, wait } => (
            "acquire",
            json!({ "unix_ms": unix_ms, "wait": json::wait(wait) }),
        ),
        Input::Release => ("release", json!({})),
        Input::Response { id, response } => (
            "response",
            json!({ "id": id.as_u64(), "response": json::response(response) }),
        ),
        Input::Timeout => ("timeout", json!({})),
        Input::Handle => ("handle", json!({})),
    };
    let requests: Vec<Value> = s
        .requests
        .iter()
        .map(|r| json!({ "id": r.id.as_u64(), "intent": json::intent(&r.intent) }))
        .collect();
    let events: Vec<Value> = s.events.iter().map(json::event).collect();
    let mut step = json!({
        "at_ns": s.at.as_nanos(),
        "input": input,
        "args": fields,
        "requests": requests,
        "events": events,
        "timeout_ns": s.timeout.map(Instant::as_nanos),
    });
    if matches!(s.input, Input::Acquire { .. } | Input::Release) {
        // The command's refusal by name (`Busy`, `NotHeld`), or null when it was taken.
        step["refused"] = s.refused.as_ref().map(json::variant).into();
    }
    step
}

/// A scenario no simulation makes, taped by hand: the commands a core refuses (a release
/// with nothing to release, an acquisition while one is under way), around one plain hold.
fn refused_commands() -> (&'static str, Vec<Tape>) {
    let config = Config {
        host: "vectors".into(),
        pid: 1,
        ..Config::default()
    };
    let seed = [7u8; 32];
    let mut lock = Lock::new(config.clone(), seed).expect("config");
    let mut steps: Vec<Step> = Vec::new();
    let ms = |n: u64| Instant::from_nanos(n * 1_000_000);
    let mut tape = |lock: &mut Lock, at: Instant, input: Input, refused: Option<CommandError>| {
        let requests = std::iter::from_fn(|| lock.poll_request()).collect::<Vec<_>>();
        let events = std::iter::from_fn(|| lock.poll_event()).collect();
        let timeout = lock.poll_timeout();
        steps.push(Step {
            at,
            input,
            requests: requests.clone(),
            events,
            timeout,
            refused,
        });
        requests
    };
    let refused = lock.release(ms(0)).err();
    tape(&mut lock, ms(0), Input::Release, refused);
    let (unix_ms, wait) = (1_733_000_000_000, Wait::Forever);
    let refused = lock.acquire(ms(1), unix_ms, wait).err();
    let put = tape(&mut lock, ms(1), Input::Acquire { unix_ms, wait }, refused);
    let refused = lock.acquire(ms(2), unix_ms, wait).err();
    tape(&mut lock, ms(2), Input::Acquire { unix_ms, wait }, refused);
    let written = Response::Written {
        etag: sets3lock_proto::ETag::parse("\"e1\"").expect("an ETag"),
    };
    let id = put.first().expect("the acquisition's write").id;
    lock.handle_response(id, written.clone(), ms(5));
    let input = Input::Response {
        id,
        response: written,
    };
    tape(&mut lock, ms(5), input, None);
    let refused = lock.release(ms(10)).err();
    let delete = tape(&mut lock, ms(10), Input::Release, refused);
    let id = delete.first().expect("the release's delete").id;
    lock.handle_response(id, Response::Deleted, ms(12));
    let input = Input::Response {
        id,
        response: Response::Deleted,
    };
    tape(&mut lock, ms(12), input, None);
    let refused = lock.release(ms(13)).err();
    tape(&mut lock, ms(13), Input::Release, refused);
    let taped = Tape {
        process: 0,
        slot: 0,
        config,
        seed,
        steps,
    };
    let refusals = taped.steps.iter().filter(|s| s.refused.is_some()).count();
    assert_eq!(refusals, 3, "the core took a command it should refuse");
    (
        "commands the core refuses: a release before any hold, an acquisition during one, a second release",
        vec![taped],
    )
}

fn scenario_vectors() -> Value {
    let mut scenarios = Vec::new();
    for (name, tapes) in simulations().into_iter().chain([refused_commands()]) {
        for tape in tapes
            .iter()
            .filter(|t| t.replayable() && !t.steps.is_empty())
        {
            let seed: String = tape.seed.iter().map(|b| format!("{b:02x}")).collect();
            scenarios.push(json!({
                "name": format!("{name}: process {}", tape.process),
                "config": json::config(&tape.config),
                "seed": seed,
                "steps": tape.steps.iter().map(step).collect::<Vec<_>>(),
            }));
        }
    }
    Value::Array(scenarios)
}

// ---- files -------------------------------------------------------------------------------

fn files() -> Vec<(&'static str, Value)> {
    vec![
        ("replies.json", reply_vectors()),
        ("records.json", record_vectors()),
        ("scenarios.json", scenario_vectors()),
    ]
}

fn read(name: &str) -> Value {
    let path = dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (SETS3LOCK_WRITE_VECTORS=1 writes it)",
            path.display()
        )
    });
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_vectors_in_docs_are_what_the_core_makes_today() {
    let write = std::env::var("SETS3LOCK_WRITE_VECTORS").as_deref() == Ok("1");
    for (name, value) in files() {
        let text = serde_json::to_string_pretty(&value).expect("JSON") + "\n";
        let path = dir().join(name);
        if write {
            std::fs::write(&path, &text).expect("write");
            continue;
        }
        let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            on_disk == text,
            "{} is not what the core makes today: regenerate it with SETS3LOCK_WRITE_VECTORS=1 cargo test -p sets3lock-proto --test core vectors, and review the change",
            path.display()
        );
    }
}

#[test]
fn every_reply_vector_reads_the_same() {
    let all = read("replies.json");
    let mut n = 0;
    for store in ["s3", "azure", "gcs"] {
        let classify = classifier(store);
        for case in all[store].as_array().expect("cases") {
            let kind = json::kind_of(case["request"].as_str().expect("request"));
            let status = u16::try_from(case["status"].as_u64().expect("status")).expect("u16");
            let headers = headers_of(
                case["headers"]
                    .as_object()
                    .expect("headers")
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_str().expect("text").to_owned())),
            );
            let body = json::body_of(case);
            let got = classify(
                kind,
                StatusCode::from_u16(status).expect("status"),
                &headers,
                &body,
            );
            assert_eq!(json::response(&got), case["response"], "{store}: {case}");
            n += 1;
        }
    }
    assert!(n >= 400, "only {n} reply vectors");
}

#[test]
fn every_record_vector_encodes_and_decodes_the_same() {
    let all = read("records.json");
    for case in all["encode"].as_array().expect("encode cases") {
        let record = json::record_of(&case["record"]);
        assert_eq!(record.encode(), json::body_of(case), "{case}");
    }
    for case in all["decode"].as_array().expect("decode cases") {
        let holder = Holder::decode(&json::body_of(case));
        assert_eq!(json::holder(&holder), case["holder"], "{case}");
    }
}

#[test]
fn every_scenario_replays_through_the_core() {
    let all = read("scenarios.json");
    let scenarios = all.as_array().expect("scenarios");
    assert!(scenarios.len() >= 4, "only {} scenarios", scenarios.len());
    let mut steps = 0;
    for scenario in scenarios {
        let name = scenario["name"].as_str().expect("name");
        let hex = scenario["seed"].as_str().expect("seed");
        let mut seed = [0u8; 32];
        for (i, byte) in seed.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex");
        }
        let mut lock = Lock::new(json::config_of(&scenario["config"]), seed).expect("config");
        for (i, s) in scenario["steps"]
            .as_array()
            .expect("steps")
            .iter()
            .enumerate()
        {
            let now = Instant::from_nanos(s["at_ns"].as_u64().expect("at_ns"));
            let args = &s["args"];
            let refusal = |result: Result<(), CommandError>| {
                let refused = result.err().as_ref().map(json::variant);
                assert_eq!(
                    Value::from(refused),
                    s["refused"],
                    "{name}: step {i}: the command's refusal"
                );
            };
            match s["input"].as_str().expect("input") {
                "acquire" => {
                    let unix_ms = args["unix_ms"].as_u64().expect("unix_ms");
                    refusal(lock.acquire(now, unix_ms, json::wait_of(&args["wait"])));
                }
                "release" => refusal(lock.release(now)),
                "response" => {
                    let id = RequestId::from_u64(args["id"].as_u64().expect("id"));
                    lock.handle_response(id, json::response_of(&args["response"]), now);
                }
                "timeout" => lock.handle_timeout(now),
                other => panic!("{name}: step {i}: no input {other}"),
            }
            let requests: Vec<Value> = std::iter::from_fn(|| lock.poll_request())
                .map(|r| json!({ "id": r.id.as_u64(), "intent": json::intent(&r.intent) }))
                .collect();
            let events: Vec<Value> = std::iter::from_fn(|| lock.poll_event())
                .map(|e| json::event(&e))
                .collect();
            assert_eq!(
                Value::from(requests),
                s["requests"],
                "{name}: step {i}: requests"
            );
            assert_eq!(Value::from(events), s["events"], "{name}: step {i}: events");
            let timeout = lock.poll_timeout().map(Instant::as_nanos);
            assert_eq!(
                Value::from(timeout),
                s["timeout_ns"],
                "{name}: step {i}: timeout"
            );
            steps += 1;
        }
    }
    assert!(steps > 100, "only {steps} steps replayed");
}
