//! An in-memory S3 with the exact conditional semantics of DESIGN.md §2.

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode};
use md5::{Digest, Md5};
use sets3lock::{classify, ETag, Intent, IntentKind, Response};
use std::collections::BTreeMap;

/// How the mock answers where real servers differ.
///
/// ```
/// use sets3lock_mock::{MissingKeyIfMatch, Semantics};
/// let aws = Semantics::default();
/// assert_eq!(aws.missing_key_if_match, MissingKeyIfMatch::NotFound);
/// assert!(aws.honor_conditions);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Semantics {
    /// What `PUT If-Match` and `DELETE If-Match` get when the key does not exist.
    pub missing_key_if_match: MissingKeyIfMatch,
    /// `false` makes the mock ignore every condition header, as Garage and s3rver do: a second
    /// `If-None-Match: *` PUT overwrites, a wrong `If-Match` DELETE deletes. Tests use it to
    /// show what that breaks.
    pub honor_conditions: bool,
}

impl Default for Semantics {
    fn default() -> Semantics {
        Semantics {
            missing_key_if_match: MissingKeyIfMatch::NotFound,
            honor_conditions: true,
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
    /// The status.
    pub status: StatusCode,
    /// The headers (`ETag` on success).
    pub headers: HeaderMap,
    /// The body: the object for a GET, an S3 error document for errors.
    pub body: Bytes,
}

impl Reply {
    /// A reply without an error document: `ETag` header when given.
    ///
    /// ```
    /// let r = sets3lock_mock::Reply::ok(http::StatusCode::NO_CONTENT, None, bytes::Bytes::new());
    /// assert!(r.headers.is_empty());
    /// ```
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

    /// An S3 error document with this status and code.
    ///
    /// ```
    /// let r = sets3lock_mock::Reply::error(http::StatusCode::SERVICE_UNAVAILABLE, "SlowDown");
    /// assert!(std::str::from_utf8(&r.body).unwrap().contains("<Code>SlowDown</Code>"));
    /// ```
    pub fn error(status: StatusCode, code: &str) -> Reply {
        let body = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code><Message>{}</Message><RequestId>mock</RequestId></Error>",
            message(code)
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
    /// Its ETag (MD5 of the body).
    pub etag: ETag,
    /// Its body.
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
}

impl MockS3 {
    /// An empty store with AWS's semantics.
    pub fn new() -> MockS3 {
        MockS3::default()
    }

    /// An empty store with the given semantics.
    ///
    /// ```
    /// use sets3lock_mock::{MissingKeyIfMatch, MockS3, Semantics};
    /// let seaweed = MockS3::with_semantics(Semantics {
    ///     missing_key_if_match: MissingKeyIfMatch::PreconditionFailed,
    ///     ..Semantics::default()
    /// });
    /// assert_eq!(seaweed.semantics().missing_key_if_match, MissingKeyIfMatch::PreconditionFailed);
    /// ```
    pub fn with_semantics(semantics: Semantics) -> MockS3 {
        MockS3 {
            buckets: BTreeMap::new(),
            semantics,
        }
    }

    /// The semantics in force.
    pub fn semantics(&self) -> Semantics {
        self.semantics
    }

    /// Whether the bucket exists.
    ///
    /// ```
    /// let mut s3 = sets3lock_mock::MockS3::new();
    /// assert!(!s3.has_bucket("b"));
    /// s3.create_bucket("b");
    /// assert!(s3.has_bucket("b"));
    /// ```
    pub fn has_bucket(&self, bucket: &str) -> bool {
        self.buckets.contains_key(bucket)
    }

    /// Creates an empty bucket (no-op if it exists).
    pub fn create_bucket(&mut self, bucket: &str) {
        self.buckets.entry(bucket.to_owned()).or_default();
    }

    /// The current object at `bucket/key`.
    ///
    /// ```
    /// let s3 = sets3lock_mock::MockS3::new();
    /// assert!(s3.object("b", "k").is_none());
    /// ```
    pub fn object(&self, bucket: &str, key: &str) -> Option<&Object> {
        self.buckets.get(bucket)?.get(key)
    }

    /// Deletes or overwrites behind everyone's back (an operator, a lifecycle rule).
    ///
    /// ```
    /// let mut s3 = sets3lock_mock::MockS3::new();
    /// s3.create_bucket("b");
    /// s3.force("b", "k", Some("x".into()));
    /// assert!(s3.object("b", "k").is_some());
    /// s3.force("b", "k", None);
    /// assert!(s3.object("b", "k").is_none());
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
