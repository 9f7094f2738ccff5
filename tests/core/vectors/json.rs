//! The language-neutral JSON forms of the core's values, as `docs/vectors/README.md` describes
//! them: out (every value the core gives or reads) and back in (what a replay feeds it).

use bytes::Bytes;
use core::time::Duration;
use serde_json::{json, Map, Value};
use sets3lock_proto::{
    Ambiguity, Config, ETag, Error, Event, Fence, HoldEnded, Holder, Intent, IntentKind, LockState,
    LostReason, NotAcquired, OwnerId, Record, Response, Scheme, Setback, TerraformFormat,
    TerraformInfo, Wait,
};

/// A body: its text when it is UTF-8, else base64 under `body_base64`.
pub(super) fn body(into: &mut Map<String, Value>, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(text) => into.insert("body".into(), text.into()),
        Err(_) => {
            use base64::Engine as _;
            let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
            into.insert("body_base64".into(), b64.into())
        }
    };
}

/// The body of a JSON object written by [`body`].
pub(super) fn body_of(v: &Value) -> Bytes {
    if let Some(text) = v.get("body").and_then(Value::as_str) {
        return Bytes::copy_from_slice(text.as_bytes());
    }
    let b64 = v.get("body_base64").and_then(Value::as_str).unwrap_or("");
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .expect("body_base64 is base64");
    Bytes::from(bytes)
}

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => unreachable!("built as an object"),
    }
}

/// A Rust value's variant name (what its `Debug` starts with): the neutral name of an error,
/// a reason, a setback.
pub(super) fn variant(debug: &impl core::fmt::Debug) -> String {
    let text = format!("{debug:?}");
    text.split(|c: char| !c.is_alphanumeric() && c != '_')
        .next()
        .unwrap_or_default()
        .to_owned()
}

pub(super) fn kind(k: IntentKind) -> &'static str {
    match k {
        IntentKind::PutIfNoneMatch => "PutIfNoneMatch",
        IntentKind::PutIfMatch => "PutIfMatch",
        IntentKind::DeleteIfMatch => "DeleteIfMatch",
        IntentKind::Get => "Get",
    }
}

pub(super) fn kind_of(name: &str) -> IntentKind {
    match name {
        "PutIfNoneMatch" => IntentKind::PutIfNoneMatch,
        "PutIfMatch" => IntentKind::PutIfMatch,
        "DeleteIfMatch" => IntentKind::DeleteIfMatch,
        "Get" => IntentKind::Get,
        other => panic!("no request kind {other:?}"),
    }
}

fn etag_of(v: &Value) -> ETag {
    let text = v.as_str().expect("an ETag is a string");
    ETag::parse(text).expect("a valid ETag")
}

fn opt_str(v: &Value, name: &str) -> Option<String> {
    v.get(name).and_then(Value::as_str).map(str::to_owned)
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).expect("in range")
}

pub(super) fn intent(i: &Intent) -> Value {
    let mut m = object(json!({ "kind": kind(i.kind()) }));
    match i {
        Intent::PutIfNoneMatch { body: b } => body(&mut m, b),
        Intent::PutIfMatch { etag, body: b } => {
            m.insert("etag".into(), etag.as_str().into());
            body(&mut m, b);
        }
        Intent::DeleteIfMatch { etag } => {
            m.insert("etag".into(), etag.as_str().into());
        }
        Intent::Get { if_none_match } => {
            let e = if_none_match.as_ref().map(ETag::as_str);
            m.insert("if_none_match".into(), e.into());
        }
    }
    Value::Object(m)
}

pub(super) fn response(r: &Response) -> Value {
    match r {
        Response::Written { etag } => json!({ "type": "Written", "etag": etag.as_str() }),
        Response::Deleted => json!({ "type": "Deleted" }),
        Response::Object { etag, body: b, age } => {
            let mut m = object(json!({
                "type": "Object",
                "etag": etag.as_str(),
                "age_ms": age.map(ms),
            }));
            body(&mut m, b);
            Value::Object(m)
        }
        Response::NotModified => json!({ "type": "NotModified" }),
        Response::Exists => json!({ "type": "Exists" }),
        Response::Mismatch => json!({ "type": "Mismatch" }),
        Response::Absent => json!({ "type": "Absent" }),
        Response::Conflict { code } => json!({ "type": "Conflict", "code": code }),
        Response::Ambiguous(a) => json!({ "type": "Ambiguous", "ambiguity": ambiguity(a) }),
        Response::Refused(e) => json!({ "type": "Refused", "error": error(e) }),
    }
}

fn ambiguity(a: &Ambiguity) -> Value {
    match a {
        Ambiguity::Status { status, code } => {
            json!({ "type": "Status", "status": status, "code": code })
        }
        Ambiguity::Timeout => json!({ "type": "Timeout" }),
        Ambiguity::Connection { detail } => json!({ "type": "Connection", "detail": detail }),
        Ambiguity::NotSent { detail } => json!({ "type": "NotSent", "detail": detail }),
        Ambiguity::Unexpected { reply, request } => {
            json!({ "type": "Unexpected", "reply": reply, "request": kind(*request) })
        }
        other => json!({ "type": variant(other) }),
    }
}

/// A response from its JSON form (only the forms a scenario feeds the core).
pub(super) fn response_of(v: &Value) -> Response {
    let ty = v["type"].as_str().expect("a response has a type");
    match ty {
        "Written" => Response::Written {
            etag: etag_of(&v["etag"]),
        },
        "Deleted" => Response::Deleted,
        "Object" => Response::Object {
            etag: etag_of(&v["etag"]),
            body: body_of(v),
            age: v["age_ms"].as_u64().map(Duration::from_millis),
        },
        "NotModified" => Response::NotModified,
        "Exists" => Response::Exists,
        "Mismatch" => Response::Mismatch,
        "Absent" => Response::Absent,
        "Conflict" => Response::Conflict {
            code: opt_str(v, "code"),
        },
        "Ambiguous" => {
            let a = &v["ambiguity"];
            Response::Ambiguous(match a["type"].as_str().expect("a type") {
                "Status" => Ambiguity::Status {
                    status: u16::try_from(a["status"].as_u64().expect("status")).expect("a status"),
                    code: opt_str(a, "code"),
                },
                "Timeout" => Ambiguity::Timeout,
                "Connection" => Ambiguity::Connection {
                    detail: opt_str(a, "detail").unwrap_or_default(),
                },
                "NotSent" => Ambiguity::NotSent {
                    detail: opt_str(a, "detail").unwrap_or_default(),
                },
                other => panic!("no scenario feeds Ambiguous {other}"),
            })
        }
        other => panic!("no scenario feeds {other}"),
    }
}

pub(super) fn wait(w: &Wait) -> Value {
    match w {
        Wait::No => json!({ "type": "No" }),
        Wait::Forever => json!({ "type": "Forever" }),
        Wait::Timeout(d) => json!({ "type": "Timeout", "ms": ms(*d) }),
    }
}

pub(super) fn wait_of(v: &Value) -> Wait {
    match v["type"].as_str().expect("a wait has a type") {
        "No" => Wait::No,
        "Forever" => Wait::Forever,
        "Timeout" => Wait::Timeout(Duration::from_millis(v["ms"].as_u64().expect("ms"))),
        other => panic!("no wait {other}"),
    }
}

pub(super) fn record(r: &Record) -> Value {
    let mut v = json!({
        "owner": r.owner.to_string(),
        "seq": r.seq,
        "lease_ms": ms(r.lease),
        "host": r.host,
        "pid": r.pid,
        "acquired_unix_ms": r.acquired_unix_ms,
        "written_unix_ms": r.written_unix_ms,
        "fence": r.fence.map(|f| json!({
            "state": match f.state { LockState::Held => "held", LockState::Free => "free" },
            "token": f.token,
        })),
        "value": r.value,
        "writer": r.writer,
        "cooldown": r.cooldown,
        "parked": r.parked,
    });
    if let (Some(tf), Some(m)) = (&r.terraform, v.as_object_mut()) {
        m.insert("terraform".into(), terraform(tf));
    }
    v
}

/// Terraform's seven fields, under their Go names.
fn terraform(t: &TerraformInfo) -> Value {
    json!({
        "ID": t.id, "Operation": t.operation, "Info": t.info, "Who": t.who,
        "Version": t.version, "Created": t.created, "Path": t.path,
    })
}

fn terraform_of(v: &Value) -> Option<TerraformInfo> {
    let t = v.as_object()?;
    let f = |name: &str| t[name].as_str().expect("a Terraform field").to_owned();
    Some(TerraformInfo {
        id: f("ID"),
        operation: f("Operation"),
        info: f("Info"),
        who: f("Who"),
        version: f("Version"),
        created: f("Created"),
        path: f("Path"),
    })
}

fn terraform_format(t: &TerraformFormat) -> Value {
    json!({ "Who": t.who, "Operation": t.operation, "Path": t.path, "Version": t.version })
}

fn terraform_format_of(v: &Value) -> Option<TerraformFormat> {
    let t = v.as_object()?;
    let f = |name: &str| t[name].as_str().expect("a Terraform field").to_owned();
    Some(TerraformFormat {
        who: f("Who"),
        operation: f("Operation"),
        path: f("Path"),
        version: f("Version"),
    })
}

pub(super) fn record_of(v: &Value) -> Record {
    let u = |name: &str| v[name].as_u64().unwrap_or_else(|| panic!("{name}"));
    Record {
        owner: v["owner"]
            .as_str()
            .expect("owner")
            .parse::<OwnerId>()
            .expect("32 hex digits"),
        seq: u("seq"),
        lease: Duration::from_millis(u("lease_ms")),
        host: opt_str(v, "host").unwrap_or_default(),
        pid: u32::try_from(u("pid")).expect("a pid"),
        acquired_unix_ms: u("acquired_unix_ms"),
        written_unix_ms: u("written_unix_ms"),
        fence: v["fence"].as_object().map(|f| Fence {
            state: match f["state"].as_str() {
                Some("free") => LockState::Free,
                _ => LockState::Held,
            },
            token: f["token"].as_u64().expect("token"),
        }),
        value: opt_str(v, "value"),
        writer: v["writer"].as_u64(),
        cooldown: v["cooldown"].as_bool().unwrap_or(false),
        parked: v["parked"].as_bool().unwrap_or(false),
        terraform: terraform_of(&v["terraform"]).map(Box::new),
    }
}

pub(super) fn holder(h: &Holder) -> Value {
    match h {
        Holder::Sets3lock(r) => {
            json!({ "type": "Sets3lock", "record": record(r), "free": h.is_free() })
        }
        Holder::GoSets3lock { id, created_at } => {
            json!({ "type": "GoSets3lock", "id": id, "created_at": created_at })
        }
        Holder::Terraform(t) => json!({ "type": "Terraform", "info": terraform(t) }),
        Holder::Unknown { len, preview } => {
            json!({ "type": "Unknown", "len": len, "preview": preview })
        }
    }
}

pub(super) fn event(e: &Event) -> Value {
    let name = variant(e);
    let ns = |i: &Option<sets3lock_proto::Instant>| i.map(|i| i.as_nanos());
    match e {
        Event::Acquired {
            owner,
            etag,
            valid_until,
            took_over,
            token,
        } => json!({
            "type": name,
            "owner": owner.to_string(),
            "etag": etag.as_str(),
            "valid_until_ns": ns(valid_until),
            "took_over": took_over.as_ref().map(holder),
            "token": token,
        }),
        Event::Contended {
            holder: h,
            etag,
            stale_at,
        } => json!({
            "type": name,
            "holder": holder(h),
            "etag": etag.as_str(),
            "stale_at_ns": ns(stale_at),
        }),
        Event::NotAcquired { reason } => json!({ "type": name, "reason": not_acquired(reason) }),
        Event::Renewed { etag, valid_until } => json!({
            "type": name,
            "etag": etag.as_str(),
            "valid_until_ns": ns(valid_until),
        }),
        Event::RenewalDelayed { setback: b } => json!({ "type": name, "setback": setback(b) }),
        Event::Lost { reason } => json!({ "type": name, "reason": lost(reason) }),
        Event::Released { outcome } => json!({ "type": name, "outcome": variant(outcome) }),
        Event::Failed { error: e } => json!({ "type": name, "error": error(e) }),
        _ => json!({ "type": name }),
    }
}

/// Why an acquisition ended without the lock.
fn not_acquired(r: &NotAcquired) -> Value {
    match r {
        NotAcquired::Busy { holder: h, etag } => {
            json!({ "type": "Busy", "holder": holder(h), "etag": etag.as_str() })
        }
        NotAcquired::TimedOut { holder: h } => {
            json!({ "type": "TimedOut", "holder": h.as_ref().map(holder) })
        }
        NotAcquired::Ended { ended } => json!({ "type": "Ended", "ended": hold_ended(ended) }),
        NotAcquired::InUse { holder: h, etag } => {
            json!({ "type": "InUse", "holder": holder(h), "etag": etag.as_str() })
        }
        other => json!({ "type": variant(other) }),
    }
}

/// What became of a hold a handle names.
fn hold_ended(e: &HoldEnded) -> Value {
    match e {
        HoldEnded::TakenOver { holder: h } => json!({ "type": "TakenOver", "holder": holder(h) }),
        HoldEnded::Gone => json!({ "type": "Gone" }),
        HoldEnded::Released { holder: h } => json!({ "type": "Released", "holder": holder(h) }),
        HoldEnded::Expired { age, lease } => {
            json!({ "type": "Expired", "age_ms": ms(*age), "lease_ms": ms(*lease) })
        }
        other => json!({ "type": variant(other) }),
    }
}

/// How a hold was lost.
fn lost(r: &LostReason) -> Value {
    match r {
        LostReason::Overwritten { holder: h } => {
            json!({ "type": "Overwritten", "holder": h.as_ref().map(holder) })
        }
        LostReason::Deleted => json!({ "type": "Deleted" }),
        other => json!({ "type": variant(other) }),
    }
}

/// What held a renewal up.
fn setback(b: &Setback) -> Value {
    match b {
        Setback::Conflict { code } => json!({ "type": "Conflict", "code": code }),
        Setback::Ambiguous(a) => json!({ "type": "Ambiguous", "ambiguity": ambiguity(a) }),
        Setback::Refused(e) => json!({ "type": "Refused", "error": error(e) }),
        Setback::LostRace => json!({ "type": "LostRace" }),
        Setback::Incoherent { etag } => json!({ "type": "Incoherent", "etag": etag.as_str() }),
        other => json!({ "type": variant(other) }),
    }
}

/// A refusal or a failure: its kind and the facts of the reply (the request kind, the status,
/// the store's error code, the store), never prose (the store's message, this project's hints).
fn error(e: &Error) -> Value {
    let store = |s: &Scheme| match s {
        Scheme::S3 => "s3",
        Scheme::Azure => "azure",
        Scheme::Gcs => "gcs",
        _ => "other",
    };
    let name = variant(e);
    match e {
        Error::NoSuchBucket { .. } => json!({ "type": name }),
        Error::ConditionalUnsupported {
            op, status, code, ..
        }
        | Error::Clock {
            op, status, code, ..
        }
        | Error::Refused {
            op, status, code, ..
        } => json!({ "type": name, "op": kind(*op), "status": status, "code": code }),
        Error::MissingETag { op, status } => {
            json!({ "type": name, "op": kind(*op), "status": status })
        }
        Error::MissingContainer { store: s, code, .. } => {
            json!({ "type": name, "store": store(s), "code": code })
        }
        Error::MissingVersion {
            store: s,
            op,
            status,
        } => {
            json!({ "type": name, "store": store(s), "op": kind(*op), "status": status })
        }
        Error::GaveUp { attempts, last } => {
            json!({ "type": name, "attempts": attempts, "last": setback(last) })
        }
        other => json!({ "type": variant(other) }),
    }
}

pub(super) fn config(c: &Config) -> Value {
    let mut v = json!({
        "lease_ms": ms(c.lease),
        "max_drift_ppm": c.max_drift_ppm,
        "poll_ms": [ms(c.poll.floor), ms(c.poll.cap)],
        "retry_ms": [ms(c.retry.floor), ms(c.retry.cap)],
        "retry_limit": c.retry_limit,
        "foreign_lease_ms": c.foreign_lease.map(ms),
        "conditional_get": c.conditional_get,
        "fenced": c.fenced,
        "host": c.host,
        "pid": c.pid,
        "value": c.value,
        "hold_at_least_ms": ms(c.hold_at_least),
        "stop_before_ms": ms(c.stop_before),
    });
    if let Some(m) = v.as_object_mut() {
        if let Some(tf) = &c.terraform {
            m.insert("terraform".into(), terraform_format(tf));
        }
        if let Some(lease) = c.terraform_lease {
            m.insert("terraform_lease_ms".into(), ms(lease).into());
        }
    }
    v
}

pub(super) fn config_of(v: &Value) -> Config {
    let u = |name: &str| v[name].as_u64().unwrap_or_else(|| panic!("{name}"));
    let d = |name: &str| Duration::from_millis(u(name));
    let pair = |name: &str| {
        let p = v[name].as_array().unwrap_or_else(|| panic!("{name}"));
        let at = |i: usize| Duration::from_millis(p[i].as_u64().expect("ms"));
        sets3lock_proto::Backoff::new(at(0), at(1))
    };
    Config {
        lease: d("lease_ms"),
        max_drift_ppm: u32::try_from(u("max_drift_ppm")).expect("ppm"),
        poll: pair("poll_ms"),
        retry: pair("retry_ms"),
        retry_limit: u32::try_from(u("retry_limit")).expect("limit"),
        foreign_lease: v["foreign_lease_ms"].as_u64().map(Duration::from_millis),
        conditional_get: v["conditional_get"].as_bool().expect("conditional_get"),
        fenced: v["fenced"].as_bool().expect("fenced"),
        host: opt_str(v, "host").unwrap_or_default(),
        pid: u32::try_from(u("pid")).expect("pid"),
        value: opt_str(v, "value"),
        hold_at_least: d("hold_at_least_ms"),
        stop_before: d("stop_before_ms"),
        terraform: terraform_format_of(&v["terraform"]),
        terraform_lease: v["terraform_lease_ms"].as_u64().map(Duration::from_millis),
    }
}
