//! An in-memory S3 that answers conditional requests as S3 does: the replies of the table in
//! docs/PROTOCOL.md ("Reply table"), and the variants real servers show.

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode};
use md5::{Digest, Md5};
use sets3lock::{classify, ConditionalDelete, ETag, Intent, IntentKind, Response};
use std::collections::BTreeMap;

/// How the mock answers where real servers differ. The default is AWS's.
///
/// ```
/// use sets3lock::{ETag, Intent, Response};
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
/// # Ok::<(), sets3lock::InvalidETag>(())
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
    /// use sets3lock::{ConditionalDelete, ETag, Intent};
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
    /// # Ok::<(), sets3lock::InvalidETag>(())
    /// ```
    pub conditional_delete: ConditionalDelete,
    /// A versioned bucket: every PUT's reply carries `x-amz-version-id` (each write leaves a
    /// version behind, which `sets3lock doctor` warns about).
    pub versioned: bool,
}

impl Default for Semantics {
    fn default() -> Semantics {
        Semantics {
            missing_key_if_match: MissingKeyIfMatch::NotFound,
            honor_conditions: true,
            conditional_delete: ConditionalDelete::Honored,
            versioned: false,
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

/// An HTTP reply from the mock, in the shape [`sets3lock::classify`] takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    /// The status S3 gives this outcome.
    pub status: StatusCode,
    /// `ETag` on success, `Content-Type` on errors.
    pub headers: HeaderMap,
    /// The object for a GET, an S3 error document for errors, empty otherwise.
    pub body: Bytes,
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
        }
    }

    /// What this reply means to the core, for a request of `kind`: [`sets3lock::classify`],
    /// the table every driver uses.
    ///
    /// ```
    /// use http::StatusCode;
    /// use sets3lock::{IntentKind, Response};
    /// let slow = sets3lock_mock::Reply::error(StatusCode::SERVICE_UNAVAILABLE, "SlowDown");
    /// assert!(matches!(slow.classify(IntentKind::PutIfMatch), Response::Ambiguous(_)));
    /// ```
    pub fn classify(&self, kind: IntentKind) -> Response {
        classify(kind, self.status, &self.headers, &self.body)
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
    /// The MD5 of the body, as S3 gives a single-part PUT.
    pub etag: ETag,
    /// The bytes stored.
    pub body: Bytes,
}

/// An in-memory S3: buckets of objects, each request applied atomically. With
/// [`respond`](MockS3::respond) it is all a driver of the core needs:
///
/// ```
/// use sets3lock::{Config, Event, Instant, Lock, Wait};
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
        }
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

    /// Deletes (`None`) or overwrites the object behind everyone's back, as an operator or a
    /// lifecycle rule would; creates the bucket if needed.
    ///
    /// ```
    /// use sets3lock::{Intent, Response};
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
        let objects = self.buckets.entry(bucket.to_owned()).or_default();
        match body {
            Some(body) => {
                objects.insert(
                    key.to_owned(),
                    Object {
                        etag: etag_of(&body),
                        body,
                    },
                );
            }
            None => {
                objects.remove(key);
            }
        }
    }

    /// Applies one request atomically and returns what its reply means to the core: what a
    /// driver hands [`Lock::handle_response`](sets3lock::Lock::handle_response).
    ///
    /// ```
    /// use sets3lock::{Intent, Response};
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
        if self.semantics.versioned && put && reply.status.is_success() {
            self.versions += 1;
            if let Ok(v) = HeaderValue::from_str(&format!("v{}", self.versions)) {
                reply.headers.insert("x-amz-version-id", v);
            }
        }
        reply
    }

    fn apply(&mut self, bucket: &str, key: &str, intent: &Intent) -> Reply {
        let semantics = self.semantics;
        let Some(objects) = self.buckets.get_mut(bucket) else {
            return Reply::error(StatusCode::NOT_FOUND, "NoSuchBucket");
        };
        let honor = semantics.honor_conditions;
        let missing_if_match = || match semantics.missing_key_if_match {
            MissingKeyIfMatch::NotFound => Reply::error(StatusCode::NOT_FOUND, "NoSuchKey"),
            MissingKeyIfMatch::PreconditionFailed => {
                Reply::error(StatusCode::PRECONDITION_FAILED, "PreconditionFailed")
            }
        };
        let current = objects.get(key);
        match intent {
            Intent::PutIfNoneMatch { body } => {
                if honor && current.is_some() {
                    return Reply::error(StatusCode::PRECONDITION_FAILED, "PreconditionFailed");
                }
                put(objects, key, body)
            }
            Intent::PutIfMatch { etag, body } => match current {
                None if honor => missing_if_match(),
                Some(o) if honor && &o.etag != etag => {
                    Reply::error(StatusCode::PRECONDITION_FAILED, "PreconditionFailed")
                }
                _ => put(objects, key, body),
            },
            Intent::DeleteIfMatch { .. }
                if semantics.conditional_delete == ConditionalDelete::NotImplemented =>
            {
                Reply::error(StatusCode::NOT_IMPLEMENTED, "NotImplemented")
            }
            Intent::DeleteIfMatch { .. }
                if semantics.conditional_delete == ConditionalDelete::IgnoresIfMatch =>
            {
                objects.remove(key);
                Reply::ok(StatusCode::NO_CONTENT, None, Bytes::new())
            }
            Intent::DeleteIfMatch { etag } => match current {
                None if honor => missing_if_match(),
                Some(o) if honor && &o.etag != etag => {
                    Reply::error(StatusCode::PRECONDITION_FAILED, "PreconditionFailed")
                }
                _ => {
                    objects.remove(key);
                    Reply::ok(StatusCode::NO_CONTENT, None, Bytes::new())
                }
            },
            Intent::Get { if_none_match } => match current {
                None => Reply::error(StatusCode::NOT_FOUND, "NoSuchKey"),
                Some(o) if honor && if_none_match.as_ref() == Some(&o.etag) => {
                    Reply::ok(StatusCode::NOT_MODIFIED, Some(&o.etag), Bytes::new())
                }
                Some(o) => Reply::ok(StatusCode::OK, Some(&o.etag), o.body.clone()),
            },
        }
    }
}

fn put(objects: &mut BTreeMap<String, Object>, key: &str, body: &Bytes) -> Reply {
    let etag = etag_of(body);
    objects.insert(
        key.to_owned(),
        Object {
            etag: etag.clone(),
            body: body.clone(),
        },
    );
    Reply::ok(StatusCode::OK, Some(&etag), Bytes::new())
}
