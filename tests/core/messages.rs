//! What users read: the exact text of every error, with and without S3's code and message,
//! and the names requests go by in logs. A wrong word here is wrong advice, so each text is
//! pinned whole.

use sets3lock_proto::{Ambiguity, ETag, Error, Intent, IntentKind, Purpose, RequestId, Setback};

fn some(s: &str) -> Option<String> {
    Some(s.into())
}

#[test]
fn a_missing_bucket_says_so_with_or_without_s3s_message() {
    assert_eq!(
        Error::NoSuchBucket { message: None }.to_string(),
        "the bucket does not exist (S3 said NoSuchBucket): create the bucket, or fix the bucket \
         name, the endpoint or the region"
    );
    assert_eq!(
        Error::NoSuchBucket {
            message: some("The specified bucket does not exist")
        }
        .to_string(),
        "the bucket does not exist (S3 said NoSuchBucket: The specified bucket does not exist): \
         create the bucket, or fix the bucket name, the endpoint or the region"
    );
}

#[test]
fn an_unsupported_delete_points_to_fenced_mode_and_anything_else_to_another_store() {
    let unsupported = |op, code: Option<String>, message: Option<String>| {
        Error::ConditionalUnsupported {
            op,
            status: 501,
            code,
            message,
        }
        .to_string()
    };
    assert_eq!(
        unsupported(
            IntentKind::DeleteIfMatch,
            some("NotImplemented"),
            some("not implemented")
        ),
        "the endpoint does not support DELETE If-Match (HTTP 501 NotImplemented: not \
         implemented): use fenced mode (--fenced, Config::fenced), which never deletes the lock \
         object and needs only conditional PUTs"
    );
    for op in [
        IntentKind::PutIfNoneMatch,
        IntentKind::PutIfMatch,
        IntentKind::Get,
    ] {
        assert_eq!(
            unsupported(op, None, None),
            format!(
                "the endpoint does not support {op} (HTTP 501): a lock needs conditional \
                 writes; use a store that supports them (run `sets3lock doctor`)"
            )
        );
    }
    // A code without a message, and a message without a code.
    let fix = "a lock needs conditional writes; use a store that supports them (run `sets3lock \
               doctor`)";
    assert_eq!(
        unsupported(IntentKind::PutIfMatch, some("NotImplemented"), None),
        format!("the endpoint does not support PUT If-Match (HTTP 501 NotImplemented): {fix}")
    );
    assert_eq!(
        unsupported(IntentKind::PutIfMatch, None, some("no")),
        format!("the endpoint does not support PUT If-Match (HTTP 501: no): {fix}")
    );
}

#[test]
fn a_reply_without_an_etag_and_a_clock_refusal_name_their_cause() {
    assert_eq!(
        Error::MissingETag {
            op: IntentKind::PutIfNoneMatch,
            status: 200
        }
        .to_string(),
        "the endpoint answered PUT If-None-Match with HTTP 200 but no ETag header: it is not \
         S3-compatible enough to hold a lock"
    );
    assert_eq!(
        Error::Clock {
            op: IntentKind::Get,
            status: 403,
            code: some("RequestTimeTooSkewed"),
            message: some("too skewed"),
        }
        .to_string(),
        "GET was refused with HTTP 403 RequestTimeTooSkewed: too skewed: the request's time is \
         wrong for the server: this machine's clock is too far from the server's and the \
         server's Date header did not correct it: synchronise the clock (NTP, `timedatectl`)"
    );
}

#[test]
fn a_refusal_carries_its_code_message_and_hint_and_giving_up_its_last_setback() {
    assert_eq!(
        Error::Refused {
            op: IntentKind::DeleteIfMatch,
            status: 403,
            code: some("AccessDenied"),
            message: some("Access Denied"),
            hint: "grant s3:DeleteObject",
        }
        .to_string(),
        "DELETE If-Match was refused with HTTP 403 AccessDenied: Access Denied: grant \
         s3:DeleteObject"
    );
    assert_eq!(
        Error::Refused {
            op: IntentKind::Get,
            status: 400,
            code: None,
            message: None,
            hint: "h",
        }
        .to_string(),
        "GET was refused with HTTP 400: h"
    );
    let gave_up = Error::GaveUp {
        attempts: 7,
        last: Box::new(Setback::Ambiguous(Ambiguity::Timeout)),
    };
    assert_eq!(
        gave_up.to_string(),
        "gave up after 7 attempts; the last: no reply before the request timeout"
    );
}

#[test]
fn requests_go_by_their_method_kind_and_number() {
    let etag = ETag::parse("\"e\"").expect("an ETag");
    let body = bytes::Bytes::from_static(b"{}");
    let cases = [
        (
            Intent::PutIfNoneMatch { body: body.clone() },
            "PUT",
            "PUT If-None-Match",
        ),
        (
            Intent::PutIfMatch {
                etag: etag.clone(),
                body,
            },
            "PUT",
            "PUT If-Match",
        ),
        (
            Intent::DeleteIfMatch { etag: etag.clone() },
            "DELETE",
            "DELETE If-Match",
        ),
        (
            Intent::Get {
                if_none_match: None,
            },
            "GET",
            "GET",
        ),
    ];
    for (intent, method, kind) in cases {
        assert_eq!(intent.method(), method, "{intent:?}");
        assert_eq!(intent.kind().to_string(), kind, "{intent:?}");
        assert_eq!(intent.kind().is_write(), method != "GET", "{intent:?}");
    }
    let purposes = [
        (Purpose::Acquire, "acquire"),
        (Purpose::Observe, "observe"),
        (Purpose::Resolve, "resolve"),
        (Purpose::Takeover, "takeover"),
        (Purpose::Renew, "renew"),
        (Purpose::Release, "release"),
        (Purpose::Cleanup, "cleanup"),
    ];
    for (purpose, name) in purposes {
        assert_eq!(purpose.to_string(), name);
    }
    for n in [0, 1, 42, u64::MAX] {
        let id = RequestId::from_u64(n);
        assert_eq!(id.as_u64(), n);
        assert_eq!(id.to_string(), format!("#{n}"));
    }
}
