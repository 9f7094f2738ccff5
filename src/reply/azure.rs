//! Azure Blob Storage: the reply table.
//!
//! The four requests, as an Azure driver sends them:
//! - `PutIfNoneMatch`: Put Blob (`x-ms-blob-type: BlockBlob`) with `If-None-Match: *`;
//! - `PutIfMatch`: Put Blob with `If-Match: <etag>`;
//! - `DeleteIfMatch`: Delete Blob with `If-Match: <etag>`;
//! - `Get`: Get Blob, with `If-None-Match: <etag>` when the core names one.
//!
//! Azure's error code comes from the `x-ms-error-code` header, or else from the XML body's
//! `<Code>`. The table [`classify`] implements:
//!
//! | reply | PutIfNoneMatch | PutIfMatch | DeleteIfMatch | Get |
//! |---|---|---|---|---|
//! | 2xx | `Written` (ETag required) | `Written` (ETag required) | `Deleted` | `Object` (ETag required) |
//! | 304 | ambiguous | ambiguous | ambiguous | `NotModified` |
//! | 404 `ContainerNotFound` | refused (`MissingContainer`) | same | same | same |
//! | 404 `BlobNotFound`, or no code | refused | `Absent` | `Absent` | `Absent` |
//! | 409 `BlobAlreadyExists` | `Exists` | ambiguous | ambiguous | ambiguous |
//! | 409 no code | ambiguous | ambiguous | ambiguous | ambiguous |
//! | 409 other codes (leases, snapshots) | refused, with a hint | same | same | ambiguous |
//! | 412 `ConditionNotMet`, or no code | `Exists` | `Mismatch` | `Mismatch` | ambiguous |
//! | 412 lease codes, other codes | refused, with a hint | same | same | same |
//! | 403 `AuthenticationFailed` about the request's time | refused (`Clock`) | same | same | same |
//! | 400 `OperationTimedOut`, 408, 429, 5xx but 501 | ambiguous | same | same | same |
//! | 501 | refused (`ConditionalUnsupported`) | same | same | same |
//! | any other status | refused, with a hint | same | same | same |
//!
//! Why the cells S3's table does not have:
//! - real Azure answers `If-Match` on a missing blob with 404, Azurite with 412: both are read
//!   as the core reads them for S3 (`Absent`, or `Mismatch` followed by a read);
//! - a blob under a native Azure lease refuses our writes with 412 `LeaseIdMissing`: read as
//!   `Exists` or `Mismatch`, the core would read the blob back, see the same ETag and try
//!   again forever, so it is a refusal that names the lease;
//! - a 409 without a code is not Azure's (which always sends one): its outcome is unknown.

use crate::reply::xml::element;
use crate::reply::{ambiguous, etag_of, success, unsupported, XmlErrorBody};
use crate::{Error, IntentKind, Response, Scheme};
use http::{HeaderMap, StatusCode};

/// The codes Azure gives a write to a blob under a native lease, and the lease operations'
/// own conflicts.
const LEASE_CODES: [&str; 8] = [
    "LeaseIdMissing",
    "LeaseIdMismatchWithBlobOperation",
    "LeaseNotPresentWithBlobOperation",
    "LeaseAlreadyPresent",
    "LeaseIdMismatchWithLeaseOperation",
    "LeaseNotPresentWithLeaseOperation",
    "LeaseIsBrokenAndCannotBeRenewed",
    "LeaseIsBreakingAndCannotBeAcquired",
];

/// An Azure error reply: its code, and a one-line message.
struct AzureError {
    code: Option<String>,
    message: Option<String>,
}

impl AzureError {
    fn of(headers: &HeaderMap, body: &[u8]) -> AzureError {
        let doc = XmlErrorBody::parse(body);
        let header = headers
            .get("x-ms-error-code")
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|c| {
                !c.is_empty()
                    && c.len() <= 64
                    && c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.')
            })
            .map(str::to_owned);
        let text = String::from_utf8_lossy(&body[..body.len().min(16 * 1024)]);
        // Azure's messages end in "\nRequestId:...\nTime:...": the first line is the message.
        let mut message = doc
            .message
            .and_then(|m| m.lines().next().map(|l| l.trim().to_owned()))
            .filter(|m| !m.is_empty());
        let extra = [
            element(&text, "AuthenticationErrorDetail", 300),
            element(&text, "HeaderName", 64).map(|h| format!("header {h}")),
        ];
        for e in extra.into_iter().flatten() {
            let e: String = e.lines().next().unwrap_or("").trim().to_owned();
            if e.is_empty() {
                continue;
            }
            message = Some(match message {
                Some(m) => format!("{m} ({e})"),
                None => e,
            });
        }
        AzureError {
            code: header.or(doc.code),
            message,
        }
    }

    fn code(&self) -> Option<&str> {
        self.code.as_deref()
    }

    fn lower_message(&self) -> String {
        self.message
            .as_deref()
            .unwrap_or_default()
            .to_ascii_lowercase()
    }
}

/// Classifies Azure Blob Storage's reply to a request of kind `kind` (see the table above).
///
/// A pure function of its inputs: it never panics, and every reply fits its request
/// ([`Response::fits`]).
///
/// ```
/// use http::{HeaderMap, HeaderValue, StatusCode};
/// use sets3lock_proto::reply::azure;
/// use sets3lock_proto::{IntentKind, Response};
///
/// let mut created = HeaderMap::new();
/// created.insert("etag", HeaderValue::from_static("\"0x8DCB2F1B4D3A2C1\""));
/// let r = azure::classify(IntentKind::PutIfNoneMatch, StatusCode::CREATED, &created, b"");
/// assert!(matches!(r, Response::Written { .. }));
///
/// let mut exists = HeaderMap::new();
/// exists.insert("x-ms-error-code", HeaderValue::from_static("BlobAlreadyExists"));
/// let r = azure::classify(IntentKind::PutIfNoneMatch, StatusCode::CONFLICT, &exists, b"");
/// assert_eq!(r, Response::Exists);
///
/// let mut leased = HeaderMap::new();
/// leased.insert("x-ms-error-code", HeaderValue::from_static("LeaseIdMissing"));
/// let r = azure::classify(IntentKind::PutIfMatch, StatusCode::PRECONDITION_FAILED, &leased, b"");
/// assert!(matches!(r, Response::Refused(_)));
/// ```
pub fn classify(
    kind: IntentKind,
    status: StatusCode,
    headers: &HeaderMap,
    body: &[u8],
) -> Response {
    use IntentKind::*;
    let s = status.as_u16();
    let err = || AzureError::of(headers, body);
    match s {
        200..=299 => success(kind, etag_of(headers), headers, body, || {
            Error::MissingVersion {
                store: Scheme::Azure,
                op: kind,
                status: s,
            }
        }),
        304 => match kind {
            Get => Response::NotModified,
            // Says nothing about whether the write was applied: the core must read back.
            PutIfNoneMatch | PutIfMatch | DeleteIfMatch => ambiguous(s, None),
        },
        404 => {
            let e = err();
            match e.code() {
                Some("ContainerNotFound") => Response::Refused(Error::MissingContainer {
                    store: Scheme::Azure,
                    code: e.code,
                    message: e.message,
                }),
                // A create cannot miss its blob: the endpoint or the account is wrong.
                Some("BlobNotFound") | None if kind != PutIfNoneMatch => Response::Absent,
                _ => refused(kind, s, e),
            }
        }
        409 => {
            let e = err();
            match (e.code(), kind) {
                (Some("BlobAlreadyExists"), PutIfNoneMatch) => Response::Exists,
                // A read has nothing to conflict with, and a 409 without Azure's code (or an
                // "exists" to a request that did not ask) is not Azure's: read again.
                (_, Get) | (None, _) | (Some("BlobAlreadyExists"), _) => ambiguous(s, e.code),
                _ => refused(kind, s, e),
            }
        }
        412 => {
            let e = err();
            match e.code() {
                None | Some("ConditionNotMet") => match kind {
                    PutIfNoneMatch => Response::Exists,
                    PutIfMatch | DeleteIfMatch => Response::Mismatch,
                    // A plain or If-None-Match read has no precondition to fail.
                    Get => ambiguous(s, e.code),
                },
                _ => refused(kind, s, e),
            }
        }
        501 => {
            let e = err();
            unsupported(
                kind,
                s,
                XmlErrorBody {
                    code: e.code,
                    message: e.message,
                },
            )
        }
        408 | 429 | 500..=599 => ambiguous(s, err().code),
        400 => {
            let e = err();
            match e.code() {
                Some("OperationTimedOut") => ambiguous(s, e.code),
                _ => refused(kind, s, e),
            }
        }
        _ => refused(kind, s, err()),
    }
}

fn refused(op: IntentKind, status: u16, e: AzureError) -> Response {
    if is_about_time(&e) {
        return Response::Refused(Error::Clock {
            op,
            status,
            code: e.code,
            message: e.message,
        });
    }
    let hint = hint(status, &e);
    Response::Refused(Error::Refused {
        op,
        status,
        code: e.code,
        message: e.message,
        hint,
    })
}

/// Whether Azure refused the request's date (`x-ms-date` too old or ahead of the server's
/// clock, or a SAS not valid yet), not the credentials.
fn is_about_time(e: &AzureError) -> bool {
    if !matches!(e.code(), Some("AuthenticationFailed") | None) {
        return false;
    }
    let m = e.lower_message();
    [
        "too old",
        "too far",
        "in the future",
        "not valid yet",
        "not yet valid",
    ]
    .iter()
    .any(|p| m.contains(p))
}

const CREDENTIALS: &str = "the storage account refused the credentials: check the account name and AZURE_STORAGE_KEY, or AZURE_STORAGE_SAS_TOKEN (not expired, and signed for this account)";
const PERMISSION: &str = "the SAS or role lacks permission: a SAS needs sp=rwd (read, write, delete) on the container; a role needs Storage Blob Data Contributor";

fn hint(status: u16, e: &AzureError) -> &'static str {
    let code = e.code();
    if code.is_some_and(|c| LEASE_CODES.contains(&c)) {
        return "someone holds a native Azure lease on the lock blob, and it refuses the lock's writes: if its holder is gone, break it (`az storage blob lease break --container-name CONTAINER --blob-name KEY`)";
    }
    match code {
        Some("AuthenticationFailed")
        | Some("NoAuthenticationInformation")
        | Some("InvalidAuthenticationInfo") => CREDENTIALS,
        Some("AuthorizationPermissionMismatch") => PERMISSION,
        // Azure's word for a request refused by the account's rules, and Azurite's for a
        // wrong key or signature: either may be the cause.
        Some("AuthorizationFailure") => {
            "the storage account refused the request: check AZURE_STORAGE_KEY (or that AZURE_STORAGE_SAS_TOKEN is valid and grants sp=rwd), and the account's network rules"
        }
        Some("AuthorizationSourceIPMismatch") => {
            "the storage account's network rules do not admit this machine's address"
        }
        Some("AuthorizationProtocolMismatch") => {
            "the account or the SAS allows HTTPS only: use an https:// endpoint"
        }
        Some("KeyBasedAuthenticationNotPermitted") => {
            "the storage account forbids Shared Key: use a SAS (AZURE_STORAGE_SAS_TOKEN) or Entra ID"
        }
        Some("InvalidHeaderValue") if is_about_version(e) => {
            "the service does not accept the x-ms-version the driver sends: on Azurite, upgrade it or start it with --skipApiVersionCheck"
        }
        Some("UnsupportedHeader") => {
            "the service does not support a header the driver sends: on Azurite, upgrade it or start it with --loose"
        }
        Some("InvalidHeaderValue") => {
            "the service refused a header value the driver sent: report this as a bug"
        }
        Some("SnapshotsPresent") => {
            "the lock blob has snapshots, so it cannot be deleted alone: delete them, or use fenced mode (--fenced, Config::fenced), which never deletes the lock blob"
        }
        Some("ContainerBeingDeleted") | Some("ContainerDisabled") => {
            "the container is being deleted or is disabled: recreate it, or use another"
        }
        Some("AccountIsDisabled") => "the storage account is disabled",
        _ => match status {
            401 => CREDENTIALS,
            403 => PERMISSION,
            404 => "not found: check the blob endpoint (for Azurite, http://127.0.0.1:10000/devstoreaccount1) and the account name",
            405 => "the endpoint does not allow this method on the lock blob",
            _ => "see the error code; retrying will not help",
        },
    }
}

/// Whether an `InvalidHeaderValue` is about `x-ms-version` (Azure names the header;
/// Azurite says "The API version ... is not supported by Azurite").
fn is_about_version(e: &AzureError) -> bool {
    let m = e.lower_message();
    m.contains("x-ms-version") || m.contains("api version")
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn reply(kind: IntentKind, status: u16, code: &str, message: &str) -> Response {
        let mut headers = HeaderMap::new();
        headers.insert(
            "x-ms-error-code",
            HeaderValue::from_str(code).expect("a code"),
        );
        let body = format!(
            "<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>{code}</Code><Message>{message}\nRequestId:1\nTime:2026-01-01T00:00:00Z</Message></Error>"
        );
        classify(
            kind,
            StatusCode::from_u16(status).expect("status"),
            &headers,
            body.as_bytes(),
        )
    }

    #[test]
    fn the_message_is_its_first_line_and_the_header_code_wins() {
        let mut headers = HeaderMap::new();
        headers.insert("x-ms-error-code", HeaderValue::from_static("ServerBusy"));
        let body = b"<Error><Code>Other</Code><Message>busy\nRequestId:1</Message></Error>";
        let r = classify(
            IntentKind::PutIfMatch,
            StatusCode::SERVICE_UNAVAILABLE,
            &headers,
            body,
        );
        assert_eq!(
            r,
            Response::Ambiguous(crate::Ambiguity::Status {
                status: 503,
                code: Some("ServerBusy".into())
            })
        );
        let r = reply(
            IntentKind::PutIfNoneMatch,
            403,
            "AuthorizationPermissionMismatch",
            "This request is not authorized to perform this operation using this permission.",
        );
        let Response::Refused(Error::Refused { message, hint, .. }) = r else {
            panic!("{r:?}")
        };
        assert_eq!(
            message.as_deref(),
            Some("This request is not authorized to perform this operation using this permission.")
        );
        assert_eq!(hint, PERMISSION);
    }

    #[test]
    fn a_refused_date_names_the_clock() {
        let body = b"<Error><Code>AuthenticationFailed</Code><Message>Server failed to authenticate the request.\nRequestId:1</Message><AuthenticationErrorDetail>Request date header too old: 'Fri, 01 Jan 2026 00:00:00 GMT'</AuthenticationErrorDetail></Error>";
        let r = classify(
            IntentKind::PutIfMatch,
            StatusCode::FORBIDDEN,
            &HeaderMap::new(),
            body,
        );
        assert!(
            matches!(&r, Response::Refused(Error::Clock { message: Some(m), .. }) if m.contains("too old")),
            "{r:?}"
        );
        let r = reply(
            IntentKind::PutIfMatch,
            403,
            "AuthenticationFailed",
            "Server failed to authenticate the request.",
        );
        assert!(
            matches!(
                r,
                Response::Refused(Error::Refused {
                    hint: CREDENTIALS,
                    ..
                })
            ),
            "{r:?}"
        );
    }

    #[test]
    fn azurites_api_version_refusal_says_how_to_start_it() {
        let r = reply(
            IntentKind::Get,
            400,
            "InvalidHeaderValue",
            "The API version 2099-01-01 is not supported by Azurite.",
        );
        assert!(
            matches!(r, Response::Refused(Error::Refused { hint, .. }) if hint.contains("--skipApiVersionCheck"))
        );
    }
}
