//! The reply table and the hint table of `docs/PROTOCOL.md`, read from the document and checked
//! against `classify` cell by cell: for every status from 100 to 599, every request kind, each
//! S3 error code the tables name (and some they do not), with and without an `ETag`. The
//! document is the specification: a row added to it, removed from it or changed fails here
//! until the code agrees (and the rows this test knows must be exactly the document's).

use http::{HeaderMap, HeaderValue, StatusCode};
use sets3lock_proto::reply::s3::classify;
use sets3lock_proto::{Ambiguity, Error, IntentKind, Response};

const PROTOCOL: &str = include_str!("../../docs/PROTOCOL.md");

const KINDS: [IntentKind; 4] = [
    IntentKind::PutIfNoneMatch,
    IntentKind::PutIfMatch,
    IntentKind::DeleteIfMatch,
    IntentKind::Get,
];

/// One reply: status, S3 error code and message (in an error document), an ETag header or not.
#[derive(Clone, Copy, Debug)]
struct Reply {
    status: u16,
    code: Option<&'static str>,
    message: Option<&'static str>,
    etag: bool,
}

/// The error codes tried with every status: each one a table names, and others.
const CODES: [(Option<&str>, Option<&str>); 24] = [
    (None, None),
    (
        Some("NoSuchBucket"),
        Some("The specified bucket does not exist"),
    ),
    (Some("NoSuchKey"), Some("The specified key does not exist.")),
    (Some("ConditionalRequestConflict"), None),
    (Some("ConcurrentModification"), None),
    (Some("OperationAborted"), None),
    (Some("RequestTimeout"), None),
    (Some("SlowDown"), Some("Please reduce your request rate.")),
    (Some("NotImplemented"), None),
    (Some("AccessDenied"), Some("Access Denied")),
    (Some("AccessDenied"), Some("Request has expired")),
    (Some("AccessDenied"), Some("Request is not valid yet")),
    (Some("RequestTimeTooSkewed"), None),
    (Some("RequestExpired"), None),
    (Some("InvalidAccessKeyId"), None),
    (Some("SignatureDoesNotMatch"), None),
    (
        Some("ExpiredToken"),
        Some("The provided token has expired."),
    ),
    (Some("TokenRefreshRequired"), None),
    (Some("InvalidToken"), None),
    (Some("AuthorizationHeaderMalformed"), None),
    (Some("AuthorizationQueryParametersError"), None),
    (Some("PermanentRedirect"), None),
    (Some("TemporaryRedirect"), None),
    (Some("MissingContentLength"), None),
];

/// Codes no table names.
const OTHER_CODES: [&str; 3] = [
    "PreconditionFailed",
    "InternalError",
    "XAmzContentSHA256Mismatch",
];

fn replies() -> Vec<Reply> {
    let mut out = Vec::new();
    for status in 100..=599u16 {
        let codes = CODES
            .iter()
            .copied()
            .chain(OTHER_CODES.iter().map(|c| (Some(*c), None)));
        for (code, message) in codes {
            for etag in [false, true] {
                out.push(Reply {
                    status,
                    code,
                    message,
                    etag,
                });
            }
        }
    }
    out
}

fn classify_reply(kind: IntentKind, r: Reply) -> Response {
    let mut headers = HeaderMap::new();
    if r.etag {
        headers.insert(http::header::ETAG, HeaderValue::from_static("\"abc123\""));
    }
    let body = match (r.code, r.message) {
        (None, None) if (200..300).contains(&r.status) => "{}".to_owned(),
        (None, None) => String::new(),
        (code, message) => format!(
            "<?xml version=\"1.0\"?><Error>{}{}</Error>",
            code.map(|c| format!("<Code>{c}</Code>"))
                .unwrap_or_default(),
            message
                .map(|m| format!("<Message>{m}</Message>"))
                .unwrap_or_default()
        ),
    };
    let status = StatusCode::from_u16(r.status).expect("a status");
    classify(kind, status, &headers, body.as_bytes())
}

/// The reply table's rows, as this test recognises them: the first that fits a reply decides,
/// as the document says. The labels are the document's first column, verbatim.
fn row_of(r: &Reply) -> &'static str {
    let code = r.code;
    let conflict = matches!(
        code,
        None | Some("ConditionalRequestConflict")
            | Some("ConcurrentModification")
            | Some("OperationAborted")
    );
    match r.status {
        200..=299 if r.etag => "2xx with a valid `ETag`",
        200..=299 => "2xx without one",
        304 => "304",
        404 if code == Some("NoSuchBucket") => "404 `NoSuchBucket`",
        404 => "any other 404",
        409 if conflict => "409 conflict (no code, `ConditionalRequestConflict`, `ConcurrentModification`, `OperationAborted`)",
        409 => "409 with another code",
        412 => "412",
        408 | 429 | 500 | 502..=599 => "408, 429, 5xx other than 501",
        400 if matches!(code, Some("RequestTimeout") | Some("SlowDown")) => {
            "400 `RequestTimeout` or `SlowDown`"
        }
        501 => "501, or 400 `NotImplemented`",
        400 if code == Some("NotImplemented") => "501, or 400 `NotImplemented`",
        _ => "any other status",
    }
}

/// A table of the document: the rows after the header line that starts with `header`.
fn table(header: &str) -> Vec<Vec<String>> {
    let mut lines = PROTOCOL
        .lines()
        .skip_while(|l| !l.starts_with(header))
        .skip(2); // the header and the |---| line
    let mut rows = Vec::new();
    for line in lines.by_ref() {
        let Some(inner) = line.strip_prefix('|').and_then(|l| l.strip_suffix('|')) else {
            break;
        };
        rows.push(inner.split('|').map(|c| c.trim().to_owned()).collect());
    }
    assert!(
        !rows.is_empty(),
        "no table headed {header:?} in docs/PROTOCOL.md"
    );
    rows
}

/// The document's reply table: row label → the four cells, `same` resolved.
fn reply_table() -> Vec<(String, [String; 4])> {
    table("| reply | `PutIfNoneMatch`")
        .into_iter()
        .map(|row| {
            assert_eq!(row.len(), 5, "a reply-table row has five cells: {row:?}");
            let mut cells: [String; 4] = Default::default();
            for i in 0..4 {
                cells[i] = if row[i + 1] == "same" {
                    cells[i - 1].clone()
                } else {
                    row[i + 1].clone()
                };
            }
            (row[0].clone(), cells)
        })
        .collect()
}

/// Whether S3's code and message refuse the request's time (see PROTOCOL.md: then a
/// refusal is `Error::Clock`).
fn about_time(r: &Reply) -> bool {
    match r.code {
        Some("RequestTimeTooSkewed") | Some("RequestExpired") => true,
        Some("AccessDenied") | None => r
            .message
            .is_some_and(|m| m.contains("expired") || m.contains("not valid yet")),
        _ => false,
    }
}

/// Whether `got` is what the cell says.
fn fits_cell(cell: &str, r: &Reply, got: &Response) -> bool {
    match cell {
        "`Written`" => matches!(got, Response::Written { .. }),
        "`Deleted`" => matches!(got, Response::Deleted),
        "`Object`" => matches!(got, Response::Object { .. }),
        "`NotModified`" => matches!(got, Response::NotModified),
        "`Exists`" => matches!(got, Response::Exists),
        "`Mismatch`" => matches!(got, Response::Mismatch),
        "`Absent`" => matches!(got, Response::Absent),
        "`Conflict`" => {
            matches!(got, Response::Conflict { code } if code.as_deref() == r.code)
        }
        // The code, when the reply's is kept (a 304 has no error document to read it from).
        "ambiguous" => matches!(
            got,
            Response::Ambiguous(Ambiguity::Status { status, code })
                if *status == r.status
                    && code.as_deref() == if r.status == 304 { None } else { r.code }
        ),
        "refused (`MissingETag`)" => matches!(
            got,
            Response::Refused(Error::MissingETag { status, .. }) if *status == r.status
        ),
        "refused (`NoSuchBucket`)" => {
            matches!(got, Response::Refused(Error::NoSuchBucket { .. }))
        }
        "refused (`ConditionalUnsupported`)" => matches!(
            got,
            Response::Refused(Error::ConditionalUnsupported { status, .. }) if *status == r.status
        ),
        "refused" | "refused, with a hint" => match got {
            Response::Refused(Error::Clock { status, code, .. }) => {
                about_time(r) && *status == r.status && code.as_deref() == r.code
            }
            Response::Refused(Error::Refused {
                status, code, hint, ..
            }) => {
                !about_time(r)
                    && *status == r.status
                    && code.as_deref() == r.code
                    && !hint.is_empty()
            }
            _ => false,
        },
        other => {
            panic!("docs/PROTOCOL.md's reply table has a cell this test cannot read: {other:?}")
        }
    }
}

#[test]
fn every_cell_of_the_reply_table_is_what_classify_answers() {
    let table = reply_table();
    let mut seen = std::collections::BTreeSet::new();
    let mut checked = 0;
    for r in replies() {
        let label = row_of(&r);
        let Some((_, cells)) = table.iter().find(|(l, _)| l == label) else {
            panic!("docs/PROTOCOL.md has no reply-table row {label:?} (for {r:?})");
        };
        seen.insert(label);
        for (i, kind) in KINDS.into_iter().enumerate() {
            let got = classify_reply(kind, r);
            assert!(
                fits_cell(&cells[i], &r, &got),
                "{kind} answered {r:?}: the table (row {label:?}) says {:?}, classify says {got:?}",
                cells[i]
            );
            assert!(got.fits(kind), "{kind} {r:?}: {got:?} does not fit");
            checked += 1;
        }
    }
    let documented: std::collections::BTreeSet<&str> =
        table.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(
        documented, seen,
        "the document's rows and the rows replies fall into must be the same"
    );
    assert_eq!(checked, 500 * (CODES.len() + OTHER_CODES.len()) * 2 * 4);
}

/// The hint table's first column: which refusals a row covers.
fn hint_row_covers(label: &str, kind: IntentKind, r: &Reply) -> bool {
    let codes: Vec<&str> = label
        .split(", ")
        .filter_map(|c| c.strip_prefix('`').and_then(|c| c.strip_suffix('`')))
        .collect();
    if !codes.is_empty() {
        return r.code.is_some_and(|c| codes.contains(&c));
    }
    match label {
        "301, 307, 308" => matches!(r.status, 301 | 307 | 308),
        "403 to a `Get`" => r.status == 403 && kind == IntentKind::Get,
        "401; 403 to a write" => r.status == 401 || (r.status == 403 && kind != IntentKind::Get),
        "404" => r.status == 404,
        "405" => r.status == 405,
        "any other" => true,
        other => panic!("docs/PROTOCOL.md's hint table has a row this test cannot read: {other:?}"),
    }
}

#[test]
fn every_refusal_gets_the_hint_the_hint_table_gives() {
    let hints = table("| S3 error code, or else the status |");
    let mut used = std::collections::BTreeSet::new();
    let mut checked = 0;
    for r in replies() {
        for kind in KINDS {
            let Response::Refused(Error::Refused { hint, .. }) = classify_reply(kind, r) else {
                continue;
            };
            // Codes decide before statuses: the first row that covers the reply.
            let row = hints
                .iter()
                .find(|row| hint_row_covers(&row[0], kind, &r))
                .expect("the last row covers everything");
            assert!(
                hint.contains(row[1].as_str()),
                "{kind} refused with {r:?}: the hint table (row {:?}) says {:?}, the hint is {hint:?}",
                row[0],
                row[1]
            );
            used.insert(row[0].clone());
            checked += 1;
        }
    }
    let all: std::collections::BTreeSet<String> = hints.iter().map(|r| r[0].clone()).collect();
    assert_eq!(used, all, "every row of the hint table is reached");
    assert!(checked > 10_000, "{checked}");
}

/// An error document whose `</Code>` ends `end` bytes into the body.
fn body_with_code_ending_at(end: usize) -> Vec<u8> {
    let (open, close) = ("<Error><Message>", "</Message><Code>SlowDown</Code>");
    let filler = "x".repeat(end - open.len() - close.len());
    format!("{open}{filler}{close}</Error>").into_bytes()
}

#[test]
fn an_error_document_is_read_up_to_16_kib_exactly() {
    let at = |end| sets3lock_proto::reply::XmlErrorBody::parse(&body_with_code_ending_at(end)).code;
    assert_eq!(at(16 * 1024).as_deref(), Some("SlowDown"));
    assert_eq!(at(16 * 1024 + 1), None);
}

#[test]
fn error_codes_are_letters_digits_and_dots_of_at_most_64_characters() {
    let code = |c: &str| {
        sets3lock_proto::reply::XmlErrorBody::parse(
            format!("<Error><Code>{c}</Code></Error>").as_bytes(),
        )
        .code
    };
    assert_eq!(code("A.B9").as_deref(), Some("A.B9"));
    assert_eq!(code("a b"), None);
    assert_eq!(code("a<b"), None);
    assert_eq!(code(""), None);
    let long = "C".repeat(70);
    assert_eq!(code(&long).map(|c| c.len()), Some(64));
    let message = |m: &str| {
        sets3lock_proto::reply::XmlErrorBody::parse(
            format!("<Error><Message>{m}</Message></Error>").as_bytes(),
        )
        .message
    };
    assert_eq!(message(" a &amp; b ").as_deref(), Some("a & b"));
    assert_eq!(message(&"m".repeat(400)).map(|m| m.len()), Some(300));
}

#[test]
fn replies_fit_only_the_requests_the_table_gives_them_to() {
    use IntentKind::*;
    let etag = sets3lock_proto::ETag::parse("e").expect("etag");
    let replies = [
        (
            Response::Written { etag: etag.clone() },
            "written",
            vec![PutIfNoneMatch, PutIfMatch],
        ),
        (Response::Deleted, "deleted", vec![DeleteIfMatch]),
        (
            Response::Object {
                etag,
                body: bytes::Bytes::new(),
                age: None,
            },
            "object",
            vec![Get],
        ),
        (Response::NotModified, "not modified", vec![Get]),
        (Response::Exists, "exists", vec![PutIfNoneMatch]),
        (
            Response::Mismatch,
            "mismatch",
            vec![PutIfMatch, DeleteIfMatch],
        ),
        (
            Response::Absent,
            "absent",
            vec![PutIfMatch, DeleteIfMatch, Get],
        ),
        (
            Response::Conflict { code: None },
            "conflict",
            vec![PutIfNoneMatch, PutIfMatch, DeleteIfMatch],
        ),
        (
            Response::Ambiguous(Ambiguity::Timeout),
            "ambiguous",
            KINDS.to_vec(),
        ),
        (
            Response::Refused(Error::NoSuchBucket { message: None }),
            "refused",
            KINDS.to_vec(),
        ),
    ];
    for (reply, name, fits) in replies {
        assert_eq!(reply.name(), name);
        for kind in KINDS {
            assert_eq!(
                reply.fits(kind),
                fits.contains(&kind),
                "{reply:?} to {kind}"
            );
        }
    }
}
