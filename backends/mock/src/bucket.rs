//! An in-memory S3 that answers conditional requests as S3 does: the replies of the table in
//! docs/PROTOCOL.md ("Reply table"), and the variants real servers show. It can speak Azure
//! Blob Storage's and Google Cloud Storage's APIs instead ([`Dialect`]).

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode};
use md5::{Digest, Md5};
use sets3lock_proto::reply::s3::classify;
use sets3lock_proto::{ConditionalDelete, ETag, Intent, IntentKind, Response};
use std::collections::BTreeMap;

/// Which store's API the mock speaks: the statuses, headers and bodies of its replies, and the
/// reply table ([`sets3lock_proto::reply::s3::classify`], [`sets3lock_proto::reply::azure::classify`],
/// [`sets3lock_proto::reply::gcs::classify`]) that reads them.
///
/// - `S3`: ETag = the MD5 of the body; 200, 204, 304, 412 `PreconditionFailed`, 404
///   `NoSuchKey` / `NoSuchBucket`, as XML error documents.
/// - `Azure`: opaque ETags (`"0x8D..."`), new with every write; Put Blob 201, Delete Blob 202,
///   a create over an existing blob 409 `BlobAlreadyExists`, a failed `If-Match` 412
///   `ConditionNotMet`, 404 `BlobNotFound` / `ContainerNotFound`, with the code in
///   `x-ms-error-code` and an XML body.
/// - `Gcs`: the version is the generation, unique and increasing; a write answers 200 with the
///   JSON object resource (`"generation"` as a string), a read 200 with `x-goog-generation`,
///   a failed `ifGenerationMatch` 412 `conditionNotMet`, a missing object or bucket 404, as
///   JSON errors.
///
/// ```
/// use sets3lock_proto::{Intent, Response};
/// use sets3lock_mock::{Dialect, MockS3, Semantics};
///
/// let create = Intent::PutIfNoneMatch { body: "mine".into() };
/// for dialect in [Dialect::S3, Dialect::Azure, Dialect::Gcs] {
///     let mut store = MockS3::with_semantics(Semantics { dialect, ..Semantics::default() });
///     store.create_bucket("locks");
///     assert!(matches!(store.respond("locks", "job", &create), Response::Written { .. }));
///     let again = store.execute("locks", "job", &create);
///     assert_eq!(again.status.as_u16(), if dialect == Dialect::Azure { 409 } else { 412 });
///     assert_eq!(again.classify(create.kind()), Response::Exists);
/// }
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Dialect {
    /// Amazon S3 (and S3-compatible stores).
    #[default]
    S3,
    /// Azure Blob Storage (Azurite, with [`MissingKeyIfMatch::PreconditionFailed`]).
    Azure,
    /// Google Cloud Storage's JSON API (fake-gcs-server, with
    /// [`ConditionalDelete::IgnoresIfMatch`] and `not_modified: false`).
    Gcs,
}

impl Dialect {
    /// What a reply of this store means to the core: the store's reply table.
    ///
    /// ```
    /// use http::{HeaderMap, StatusCode};
    /// use sets3lock_proto::{IntentKind, Response};
    /// use sets3lock_mock::Dialect;
    /// // 409 is "exists" on Azure, a conflict to retry on S3.
    /// let r = Dialect::Azure.classify(IntentKind::PutIfNoneMatch, StatusCode::CONFLICT, &HeaderMap::new(),
    ///     b"<Error><Code>BlobAlreadyExists</Code></Error>");
    /// assert_eq!(r, Response::Exists);
    /// ```
    pub fn classify(
        self,
        kind: IntentKind,
        status: StatusCode,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Response {
        match self {
            Dialect::S3 => classify(kind, status, headers, body),
            Dialect::Azure => sets3lock_proto::reply::azure::classify(kind, status, headers, body),
            Dialect::Gcs => sets3lock_proto::reply::gcs::classify(kind, status, headers, body),
        }
    }
}

/// How the mock answers where real servers differ. The default is AWS's.
///
/// ```
/// use sets3lock_proto::{ETag, Intent, Response};
/// use sets3lock_mock::{MissingKeyIfMatch, MockS3, Semantics};
///
/// // Renewing a lock whose object is gone: AWS says 404, SeaweedFS 412.
/// let renew = Intent::PutIfMatch { etag: ETag::parse("abc")?, body: "mine".into() };
/// let seaweed = Semantics {
///     missing_key_if_match: MissingKeyIfMatch::PreconditionFailed,
///     ..Semantics::default()
/// };
/// for (semantics, meaning) in [(Semantics::default(), Response::Absent), (seaweed, Response::Mismatch)] {
///     let mut s3 = MockS3::with_semantics(semantics);
///     s3.create_bucket("b");
///     assert_eq!(s3.respond("b", "k", &renew), meaning);
/// }
/// # Ok::<(), sets3lock_proto::InvalidETag>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Semantics {
    /// What `PUT If-Match` and `DELETE If-Match` get when the key does not exist.
    pub missing_key_if_match: MissingKeyIfMatch,
    /// `false` makes the mock ignore every condition header, as Garage and s3rver do: a second
    /// `If-None-Match: *` PUT overwrites, a wrong `If-Match` DELETE deletes. Tests use it to
    /// show what that breaks.
    pub honor_conditions: bool,
    /// What `DELETE If-Match` does: AWS (since 2025-09-16), Ceph and SeaweedFS honour it,
    /// MinIO CE ignores the condition, LocalStack (and AWS before) refuse it with 501.
    ///
    /// ```
    /// use sets3lock_proto::{ConditionalDelete, ETag, Intent};
    /// use sets3lock_mock::{MockS3, Semantics};
    ///
    /// let wrong = Intent::DeleteIfMatch { etag: ETag::parse("not-the-etag")? };
    /// for (conditional_delete, answer) in [
    ///     (ConditionalDelete::Honored, "mismatch"),
    ///     (ConditionalDelete::IgnoresIfMatch, "deleted"),
    ///     (ConditionalDelete::NotImplemented, "refused"),
    /// ] {
    ///     let mut s3 = MockS3::with_semantics(Semantics { conditional_delete, ..Semantics::default() });
    ///     s3.create_bucket("b");
    ///     s3.respond("b", "k", &Intent::PutIfNoneMatch { body: "held".into() });
    ///     assert_eq!(s3.respond("b", "k", &wrong).name(), answer);
    /// }
    /// # Ok::<(), sets3lock_proto::InvalidETag>(())
    /// ```
    pub conditional_delete: ConditionalDelete,
    /// A versioned bucket: every PUT's reply carries `x-amz-version-id` (each write leaves a
    /// version behind, which `sets3lock doctor` warns about). S3 only.
    pub versioned: bool,
    /// Which store's API the mock speaks (see [`Dialect`]); S3 by default.
    pub dialect: Dialect,
    /// Whether a conditional GET of an unchanged object is answered `304 Not Modified`.
    /// `false` answers it `200` with the object, as fake-gcs-server does (it ignores
    /// `ifGenerationNotMatch`).
    ///
    /// ```
    /// use sets3lock_proto::{Intent, Response};
    /// use sets3lock_mock::{Dialect, MockS3, Semantics};
    /// let fake_gcs = Semantics { dialect: Dialect::Gcs, not_modified: false, ..Semantics::default() };
    /// let mut gcs = MockS3::with_semantics(fake_gcs);
    /// gcs.create_bucket("b");
    /// let Response::Written { etag } = gcs.respond("b", "k", &Intent::PutIfNoneMatch { body: "x".into() })
    ///     else { unreachable!() };
    /// let read = Intent::Get { if_none_match: Some(etag.clone()) };
    /// assert!(matches!(gcs.respond("b", "k", &read), Response::Object { etag: e, .. } if e == etag));
    /// ```
    pub not_modified: bool,
}

impl Default for Semantics {
    fn default() -> Semantics {
        Semantics {
            missing_key_if_match: MissingKeyIfMatch::NotFound,
            honor_conditions: true,
            conditional_delete: ConditionalDelete::Honored,
            versioned: false,
            dialect: Dialect::S3,
            not_modified: true,
        }
    }
}

/// The answer to an `If-Match` request on a missing key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MissingKeyIfMatch {
    /// `404 NoSuchKey`: AWS, MiniStack, moto, LocalStack.
    NotFound,
    /// `412 PreconditionFailed`: SeaweedFS.
    PreconditionFailed,
}

/// An HTTP reply from the mock, in the shape [`sets3lock_proto::reply::s3::classify`] takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    /// The status the store gives this outcome.
    pub status: StatusCode,
    /// `ETag` on success, `Content-Type` on errors (and the dialect's own headers:
    /// `x-ms-error-code`, `x-goog-generation`).
    pub headers: HeaderMap,
    /// The object for a GET, an error document for errors (XML, or JSON on GCS), GCS's
    /// object resource for a write, empty otherwise.
    pub body: Bytes,
    /// Whose API the reply is in, which decides what it means ([`Reply::classify`]).
    pub dialect: Dialect,
}

impl Reply {
    /// A reply without an error document, with an `ETag` header when given one.
    pub fn ok(status: StatusCode, etag: Option<&ETag>, body: Bytes) -> Reply {
        let mut headers = HeaderMap::new();
        if let Some(e) = etag {
            if let Ok(v) = HeaderValue::from_str(&e.header_value()) {
                headers.insert(http::header::ETAG, v);
            }
        }
        Reply {
            status,
            headers,
            body,
            dialect: Dialect::S3,
        }
    }

    /// An S3 error document with this status and code (`SlowDown`, `NoSuchKey`, ...), and
    /// AWS's message for the code.
    pub fn error(status: StatusCode, code: &str) -> Reply {
        Reply::error_saying(status, code, message(code))
    }

    /// An S3 error document with this code and message.
    pub fn error_saying(status: StatusCode, code: &str, message: &str) -> Reply {
        let body = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code><Message>{message}</Message><RequestId>mock</RequestId></Error>"
        );
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/xml"),
        );
        Reply {
            status,
            headers,
            body: Bytes::from(body),
            dialect: Dialect::S3,
        }
    }

    /// An Azure Blob Storage error: the code in `x-ms-error-code` and in an XML body, with
    /// Azure's message for the code.
    ///
    /// ```
    /// use http::StatusCode;
    /// use sets3lock_proto::{IntentKind, Response};
    /// let r = sets3lock_mock::Reply::azure_error(StatusCode::PRECONDITION_FAILED, "ConditionNotMet");
    /// assert_eq!(r.headers["x-ms-error-code"], "ConditionNotMet");
    /// assert_eq!(r.classify(IntentKind::PutIfMatch), Response::Mismatch);
    /// ```
    pub fn azure_error(status: StatusCode, code: &str) -> Reply {
        let body = format!(
            "\u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>{code}</Code><Message>{}\nRequestId:00000000-0000-0000-0000-000000000000\nTime:2026-01-01T00:00:00.0000000Z</Message></Error>",
            azure_message(code)
        );
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/xml"),
        );
        if let Ok(v) = HeaderValue::from_str(code) {
            headers.insert("x-ms-error-code", v);
        }
        Reply {
            status,
            headers,
            body: Bytes::from(body),
            dialect: Dialect::Azure,
        }
    }

    /// A Google Cloud Storage JSON API error with this status and reason (`conditionNotMet`,
    /// `notFound`, `rateLimitExceeded`, ...) and GCS's message for it.
    ///
    /// ```
    /// use http::StatusCode;
    /// use sets3lock_proto::{IntentKind, Response};
    /// let r = sets3lock_mock::Reply::gcs_error(StatusCode::TOO_MANY_REQUESTS, "rateLimitExceeded");
    /// assert!(matches!(r.classify(IntentKind::PutIfMatch), Response::Ambiguous(_)));
    /// ```
    pub fn gcs_error(status: StatusCode, reason: &str) -> Reply {
        Reply::gcs_error_saying(status, reason, gcs_message(reason))
    }

    /// A Google Cloud Storage JSON API error with this reason and message.
    pub fn gcs_error_saying(status: StatusCode, reason: &str, message: &str) -> Reply {
        let error = serde_json::json!({
            "error": {
                "code": status.as_u16(),
                "message": message,
                "errors": [{ "message": message, "domain": "global", "reason": reason }],
            }
        });
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json; charset=UTF-8"),
        );
        Reply {
            status,
            headers,
            body: Bytes::from(error.to_string()),
            dialect: Dialect::Gcs,
        }
    }

    /// What this reply means to the core, for a request of `kind`: the reply table of its
    /// dialect ([`sets3lock_proto::reply::s3::classify`] for S3), the table every driver of that store uses.
    ///
    /// ```
    /// use http::StatusCode;
    /// use sets3lock_proto::{IntentKind, Response};
    /// let slow = sets3lock_mock::Reply::error(StatusCode::SERVICE_UNAVAILABLE, "SlowDown");
    /// assert!(matches!(slow.classify(IntentKind::PutIfMatch), Response::Ambiguous(_)));
    /// ```
    pub fn classify(&self, kind: IntentKind) -> Response {
        self.dialect
            .classify(kind, self.status, &self.headers, &self.body)
    }
}

fn azure_message(code: &str) -> &'static str {
    match code {
        "BlobAlreadyExists" => "The specified blob already exists.",
        "BlobNotFound" => "The specified blob does not exist.",
        "ContainerNotFound" => "The specified container does not exist.",
        "ConditionNotMet" => "The condition specified using HTTP conditional header(s) is not met.",
        "ServerBusy" => {
            "The server is currently unable to receive requests. Please retry your request."
        }
        "OperationTimedOut" => "The operation could not be completed within the permitted time.",
        "InternalError" => "The server encountered an internal error. Please retry the request.",
        "NotImplemented" => "The requested operation is not implemented on the specified resource.",
        _ => "Error",
    }
}

fn gcs_message(reason: &str) -> &'static str {
    match reason {
        "conditionNotMet" => "At least one of the pre-conditions you specified did not hold.",
        "notFound" => "No such object.",
        "rateLimitExceeded" => "The object exceeded the rate limit for object mutation operations (create, update, and delete). Please reduce your request rate.",
        "backendError" => "Backend Error",
        "notImplemented" => "Not Implemented",
        _ => "Error",
    }
}

fn message(code: &str) -> &'static str {
    match code {
        "PreconditionFailed" => "At least one of the pre-conditions you specified did not hold",
        "NoSuchKey" => "The specified key does not exist.",
        "NoSuchBucket" => "The specified bucket does not exist",
        "ConditionalRequestConflict" => {
            "A conflicting conditional operation is currently in progress against this resource."
        }
        "SlowDown" => "Please reduce your request rate.",
        "InternalError" => "We encountered an internal error. Please try again.",
        "AccessDenied" => "Access Denied",
        _ => "Error",
    }
}

/// The ETag S3 gives a single-part, unencrypted PUT: the MD5 of the body, in hex.
///
/// ```
/// assert_eq!(sets3lock_mock::etag_of(b"").as_str(), "d41d8cd98f00b204e9800998ecf8427e");
/// ```
pub fn etag_of(body: &[u8]) -> ETag {
    let digest = Md5::digest(body);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    ETag::parse(&hex).expect("32 hex digits are a valid ETag")
}

/// An object as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Object {
    /// The version a conditional request names: on S3 the MD5 of the body, as S3 gives a
    /// single-part PUT; on Azure an opaque ETag, new with every write; on GCS the generation.
    pub etag: ETag,
    /// The bytes stored.
    pub body: Bytes,
}

/// An in-memory S3: buckets of objects, each request applied atomically. With
/// [`respond`](MockS3::respond) it is all a driver of the core needs:
///
/// ```
/// use sets3lock_proto::{Config, Event, Instant, Lock, Wait};
/// use sets3lock_mock::MockS3;
///
/// let mut s3 = MockS3::new();
/// s3.create_bucket("locks");
/// let mut lock = Lock::new(Config::default(), [7; 32])?;
/// let now = Instant::ZERO;
/// lock.acquire(now, 0, Wait::No)?;
/// while let Some(request) = lock.poll_request() {
///     let response = s3.respond("locks", "job", &request.intent);
///     lock.handle_response(request.id, response, now);
/// }
/// assert!(matches!(lock.poll_event(), Some(Event::Acquired { .. })));
/// assert!(s3.object("locks", "job").is_some());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct MockS3 {
    buckets: BTreeMap<String, BTreeMap<String, Object>>,
    semantics: Semantics,
    /// Versions written so far (a versioned bucket's version ids).
    versions: u64,
    /// Writes so far, for Azure's ETags and GCS's generations.
    writes: u64,
    /// The store's own clock, in Unix milliseconds, once [set](MockS3::set_time): then every
    /// write is stamped with it, and a GET's reply carries `Date` and `Last-Modified`.
    clock_ms: Option<u64>,
    /// When each object was last written, by that clock.
    modified: BTreeMap<(String, String), u64>,
}

impl MockS3 {
    /// An empty store with AWS's semantics.
    pub fn new() -> MockS3 {
        MockS3::default()
    }

    /// An empty store that answers as `semantics` says (see [`Semantics`]).
    pub fn with_semantics(semantics: Semantics) -> MockS3 {
        MockS3 {
            buckets: BTreeMap::new(),
            semantics,
            versions: 0,
            writes: 0,
            clock_ms: None,
            modified: BTreeMap::new(),
        }
    }

    /// Sets the store's clock, in Unix milliseconds (it never goes back: an earlier time is
    /// ignored). From then on writes are stamped with it and a GET's reply carries `Date`
    /// and `Last-Modified` in whole seconds, as real stores send them: what readers of a
    /// resting record and of an adopted hold judge its age by.
    ///
    /// ```
    /// use sets3lock_proto::{Intent, Response};
    /// use core::time::Duration;
    /// let mut s3 = sets3lock_mock::MockS3::new();
    /// s3.create_bucket("b");
    /// s3.set_time(1_764_500_000_900);
    /// s3.respond("b", "k", &Intent::PutIfNoneMatch { body: "x".into() });
    /// s3.set_time(1_764_500_002_100);
    /// let Response::Object { age, .. } = s3.respond("b", "k", &Intent::Get { if_none_match: None })
    ///     else { unreachable!() };
    /// assert_eq!(age, Some(Duration::from_secs(2))); // 02 − 00, truncated like the headers
    /// ```
    pub fn set_time(&mut self, unix_ms: u64) {
        self.clock_ms = Some(self.clock_ms.map_or(unix_ms, |c| c.max(unix_ms)));
    }

    /// The semantics in force.
    pub fn semantics(&self) -> Semantics {
        self.semantics
    }

    /// Whether the bucket exists: requests to one that does not get `404 NoSuchBucket`.
    pub fn has_bucket(&self, bucket: &str) -> bool {
        self.buckets.contains_key(bucket)
    }

    /// Creates an empty bucket (no-op if it exists).
    pub fn create_bucket(&mut self, bucket: &str) {
        self.buckets.entry(bucket.to_owned()).or_default();
    }

    /// The current object at `bucket/key`, if any.
    pub fn object(&self, bucket: &str, key: &str) -> Option<&Object> {
        self.buckets.get(bucket)?.get(key)
    }

    /// The keys in `bucket`, in order (none for a bucket that does not exist): what a
    /// listing shows, for tests that look for what was left behind.
    ///
    /// ```
    /// let mut s3 = sets3lock_mock::MockS3::new();
    /// s3.force("b", "k2", Some("x".into()));
    /// s3.force("b", "k1", Some("y".into()));
    /// assert_eq!(s3.keys("b").collect::<Vec<_>>(), ["k1", "k2"]);
    /// assert_eq!(s3.keys("none").count(), 0);
    /// ```
    pub fn keys(&self, bucket: &str) -> impl Iterator<Item = String> + '_ {
        self.buckets
            .get(bucket)
            .into_iter()
            .flat_map(|objects| objects.keys().cloned())
    }

    /// Deletes (`None`) or overwrites the object behind everyone's back, as an operator or a
    /// lifecycle rule would; creates the bucket if needed.
    ///
    /// ```
    /// use sets3lock_proto::{Intent, Response};
    /// let mut s3 = sets3lock_mock::MockS3::new();
    /// s3.create_bucket("b");
    /// let create = Intent::PutIfNoneMatch { body: "mine".into() };
    /// let Response::Written { etag } = s3.respond("b", "k", &create) else { unreachable!() };
    /// s3.force("b", "k", Some("an operator's".into()));
    /// // The holder's next renewal finds out.
    /// let renew = Intent::PutIfMatch { etag, body: "mine".into() };
    /// assert_eq!(s3.respond("b", "k", &renew), Response::Mismatch);
    /// ```
    pub fn force(&mut self, bucket: &str, key: &str, body: Option<Bytes>) {
        self.stamp(bucket, key, body.is_some());
        match body {
            Some(body) => {
                let etag = self.next_version(&body);
                let objects = self.buckets.entry(bucket.to_owned()).or_default();
                objects.insert(key.to_owned(), Object { etag, body });
            }
            None => {
                self.buckets
                    .entry(bucket.to_owned())
                    .or_default()
                    .remove(key);
            }
        }
    }

    /// Notes that `bucket/key` was just written (`true`) or deleted, by the store's clock.
    fn stamp(&mut self, bucket: &str, key: &str, written: bool) {
        let k = (bucket.to_owned(), key.to_owned());
        match (written, self.clock_ms) {
            (true, Some(now)) => {
                self.modified.insert(k, now);
            }
            _ => {
                self.modified.remove(&k);
            }
        }
    }

    /// The version the next write of `body` gets: its MD5 on S3, a fresh opaque ETag on
    /// Azure, a fresh, higher generation on GCS.
    fn next_version(&mut self, body: &[u8]) -> ETag {
        self.writes += 1;
        let n = self.writes;
        let v = match self.semantics.dialect {
            Dialect::S3 => return etag_of(body),
            // Azure's look like "0x8DCB2F1B4D3A2C1": a 0x8D prefix and hex digits.
            Dialect::Azure => format!("0x8DC{:013X}", 0x2F1B_4D3A_0000 + n),
            // Real generations are microsecond timestamps.
            Dialect::Gcs => (1_764_500_000_000_000 + n).to_string(),
        };
        ETag::parse(&v).unwrap_or_else(|_| etag_of(body))
    }

    /// Applies one request atomically and returns what its reply means to the core: what a
    /// driver hands [`Lock::handle_response`](sets3lock_proto::Lock::handle_response).
    ///
    /// ```
    /// use sets3lock_proto::{Intent, Response};
    /// let mut s3 = sets3lock_mock::MockS3::new();
    /// s3.create_bucket("locks");
    /// let put = Intent::PutIfNoneMatch { body: "a".into() };
    /// assert!(matches!(s3.respond("locks", "job", &put), Response::Written { .. }));
    /// assert_eq!(s3.respond("locks", "job", &put), Response::Exists);
    /// ```
    pub fn respond(&mut self, bucket: &str, key: &str, intent: &Intent) -> Response {
        self.execute(bucket, key, intent).classify(intent.kind())
    }

    /// Applies one request atomically and returns S3's reply, as HTTP.
    pub fn execute(&mut self, bucket: &str, key: &str, intent: &Intent) -> Reply {
        let mut reply = self.apply(bucket, key, intent);
        let put = matches!(
            intent,
            Intent::PutIfNoneMatch { .. } | Intent::PutIfMatch { .. }
        );
        let delete = matches!(intent, Intent::DeleteIfMatch { .. });
        if reply.status.is_success() && (put || delete) {
            self.stamp(bucket, key, put);
        }
        if let Some(now) = self.clock_ms {
            if let Ok(v) = HeaderValue::from_str(&http_date(now / 1000)) {
                reply.headers.insert(http::header::DATE, v);
            }
            let modified = self.modified.get(&(bucket.to_owned(), key.to_owned()));
            if let (true, Some(m)) = (matches!(intent, Intent::Get { .. }), modified) {
                if let Ok(v) = HeaderValue::from_str(&http_date(m / 1000)) {
                    reply.headers.insert(http::header::LAST_MODIFIED, v);
                }
            }
        }
        let s3 = self.semantics.dialect == Dialect::S3;
        if s3 && self.semantics.versioned && put && reply.status.is_success() {
            self.versions += 1;
            if let Ok(v) = HeaderValue::from_str(&format!("v{}", self.versions)) {
                reply.headers.insert("x-amz-version-id", v);
            }
        }
        reply
    }

    fn apply(&mut self, bucket: &str, key: &str, intent: &Intent) -> Reply {
        let semantics = self.semantics;
        let d = semantics.dialect;
        if !self.buckets.contains_key(bucket) {
            return no_bucket(d);
        }
        // The version a write would get, drawn before the bucket is borrowed.
        let fresh = intent.body().map(|b| self.next_version(b));
        let Some(objects) = self.buckets.get_mut(bucket) else {
            return no_bucket(d);
        };
        let honor = semantics.honor_conditions;
        let missing_if_match = || match semantics.missing_key_if_match {
            MissingKeyIfMatch::NotFound => not_found(d, bucket, key),
            MissingKeyIfMatch::PreconditionFailed => precondition_failed(d),
        };
        let current = objects.get(key);
        let write = |objects: &mut BTreeMap<String, Object>, body: &Bytes| match &fresh {
            Some(etag) => put(d, objects, bucket, key, body, etag.clone()),
            None => no_bucket(d),
        };
        match intent {
            Intent::PutIfNoneMatch { body } => {
                if honor && current.is_some() {
                    return match d {
                        Dialect::Azure => {
                            Reply::azure_error(StatusCode::CONFLICT, "BlobAlreadyExists")
                        }
                        _ => precondition_failed(d),
                    };
                }
                write(objects, body)
            }
            Intent::PutIfMatch { etag, body } => match current {
                None if honor => missing_if_match(),
                Some(o) if honor && &o.etag != etag => precondition_failed(d),
                _ => write(objects, body),
            },
            Intent::DeleteIfMatch { .. }
                if semantics.conditional_delete == ConditionalDelete::NotImplemented =>
            {
                match d {
                    Dialect::S3 => Reply::error(StatusCode::NOT_IMPLEMENTED, "NotImplemented"),
                    Dialect::Azure => {
                        Reply::azure_error(StatusCode::NOT_IMPLEMENTED, "NotImplemented")
                    }
                    Dialect::Gcs => Reply::gcs_error(StatusCode::NOT_IMPLEMENTED, "notImplemented"),
                }
            }
            Intent::DeleteIfMatch { .. }
                if semantics.conditional_delete == ConditionalDelete::IgnoresIfMatch =>
            {
                // fake-gcs-server deletes whatever is there, and says 404 if nothing was.
                if d == Dialect::Gcs && current.is_none() {
                    return not_found(d, bucket, key);
                }
                objects.remove(key);
                deleted(d)
            }
            Intent::DeleteIfMatch { etag } => match current {
                None if honor => missing_if_match(),
                Some(o) if honor && &o.etag != etag => precondition_failed(d),
                None if d != Dialect::S3 => not_found(d, bucket, key),
                _ => {
                    objects.remove(key);
                    deleted(d)
                }
            },
            Intent::Get { if_none_match } => match current {
                None => not_found(d, bucket, key),
                Some(o)
                    if honor
                        && semantics.not_modified
                        && if_none_match.as_ref() == Some(&o.etag) =>
                {
                    object_reply(d, StatusCode::NOT_MODIFIED, &o.etag, Bytes::new())
                }
                Some(o) => object_reply(d, StatusCode::OK, &o.etag, o.body.clone()),
            },
        }
    }
}

/// The reply to a request for a bucket (container) that does not exist.
fn no_bucket(d: Dialect) -> Reply {
    match d {
        Dialect::S3 => Reply::error(StatusCode::NOT_FOUND, "NoSuchBucket"),
        Dialect::Azure => Reply::azure_error(StatusCode::NOT_FOUND, "ContainerNotFound"),
        Dialect::Gcs => Reply::gcs_error_saying(
            StatusCode::NOT_FOUND,
            "notFound",
            "The specified bucket does not exist.",
        ),
    }
}

fn not_found(d: Dialect, bucket: &str, key: &str) -> Reply {
    match d {
        Dialect::S3 => Reply::error(StatusCode::NOT_FOUND, "NoSuchKey"),
        Dialect::Azure => Reply::azure_error(StatusCode::NOT_FOUND, "BlobNotFound"),
        Dialect::Gcs => Reply::gcs_error_saying(
            StatusCode::NOT_FOUND,
            "notFound",
            &format!("No such object: {bucket}/{key}"),
        ),
    }
}

fn precondition_failed(d: Dialect) -> Reply {
    match d {
        Dialect::S3 => Reply::error(StatusCode::PRECONDITION_FAILED, "PreconditionFailed"),
        Dialect::Azure => Reply::azure_error(StatusCode::PRECONDITION_FAILED, "ConditionNotMet"),
        Dialect::Gcs => Reply::gcs_error(StatusCode::PRECONDITION_FAILED, "conditionNotMet"),
    }
}

fn deleted(d: Dialect) -> Reply {
    let status = match d {
        Dialect::Azure => StatusCode::ACCEPTED,
        _ => StatusCode::NO_CONTENT,
    };
    Reply {
        dialect: d,
        ..Reply::ok(status, None, Bytes::new())
    }
}

/// A read's reply (200 with the object, or 304): the version in `ETag`, or on GCS in
/// `x-goog-generation` (beside an ETag of GCS's own, which is not the version).
fn object_reply(d: Dialect, status: StatusCode, version: &ETag, body: Bytes) -> Reply {
    match d {
        Dialect::S3 | Dialect::Azure => Reply {
            dialect: d,
            ..Reply::ok(status, Some(version), body)
        },
        Dialect::Gcs => {
            let mut headers = HeaderMap::new();
            if let Ok(v) = HeaderValue::from_str(version.as_str()) {
                headers.insert("x-goog-generation", v);
            }
            headers.insert("x-goog-metageneration", HeaderValue::from_static("1"));
            if let Ok(v) = HeaderValue::from_str(&gcs_etag(version)) {
                headers.insert(http::header::ETAG, v);
            }
            Reply {
                status,
                headers,
                body,
                dialect: d,
            }
        }
    }
}

/// GCS's own ETag for a generation (what GCS sends looks like `"CJ+7lqXWyYkDEAE="`): not
/// the version the lock uses.
fn gcs_etag(version: &ETag) -> String {
    format!("\"C{}EAE=\"", version.as_str())
}

fn put(
    d: Dialect,
    objects: &mut BTreeMap<String, Object>,
    bucket: &str,
    key: &str,
    body: &Bytes,
    etag: ETag,
) -> Reply {
    objects.insert(
        key.to_owned(),
        Object {
            etag: etag.clone(),
            body: body.clone(),
        },
    );
    match d {
        Dialect::S3 => Reply::ok(StatusCode::OK, Some(&etag), Bytes::new()),
        Dialect::Azure => {
            let mut reply = Reply::ok(StatusCode::CREATED, Some(&etag), Bytes::new());
            reply.headers.insert(
                "x-ms-request-server-encrypted",
                HeaderValue::from_static("true"),
            );
            reply.dialect = d;
            reply
        }
        Dialect::Gcs => {
            // The JSON API's object resource, as an upload returns it.
            let resource = serde_json::json!({
                "kind": "storage#object",
                "id": format!("{bucket}/{key}/{}", etag.as_str()),
                "name": key,
                "bucket": bucket,
                "generation": etag.as_str(),
                "metageneration": "1",
                "contentType": "application/json",
                "size": body.len().to_string(),
                "etag": gcs_etag(&etag).trim_matches('"'),
            });
            let mut headers = HeaderMap::new();
            headers.insert(
                http::header::CONTENT_TYPE,
                HeaderValue::from_static("application/json; charset=UTF-8"),
            );
            if let Ok(v) = HeaderValue::from_str(&gcs_etag(&etag)) {
                headers.insert(http::header::ETAG, v);
            }
            Reply {
                status: StatusCode::OK,
                headers,
                body: Bytes::from(resource.to_string()),
                dialect: d,
            }
        }
    }
}

/// An HTTP date (IMF-fixdate) for `secs` since the Unix epoch.
fn http_date(secs: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = secs / 86_400;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01, by the usual era arithmetic.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    format!(
        "{}, {:02} {} {} {:02}:{:02}:{:02} GMT",
        DAYS[(days % 7) as usize],
        day,
        MONTHS[(month - 1) as usize],
        year,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod date_tests {
    #[test]
    fn http_dates_are_imf_fixdates() {
        assert_eq!(super::http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(
            super::http_date(784_111_777),
            "Sun, 06 Nov 1994 08:49:37 GMT"
        );
        assert_eq!(
            super::http_date(1_835_481_599),
            "Tue, 29 Feb 2028 23:59:59 GMT"
        );
        assert_eq!(
            super::http_date(1_796_205_630),
            "Wed, 02 Dec 2026 10:00:30 GMT"
        );
    }
}
