//! `s3://bucket/key` lock addresses.

use core::fmt;
use core::str::FromStr;

/// Where a lock lives: one object, `key`, in one bucket.
///
/// ```
/// use sets3lock::LockUrl;
/// let url: LockUrl = "s3://my-bucket/locks/nightly-backup".parse().unwrap();
/// assert_eq!(url.bucket(), "my-bucket");
/// assert_eq!(url.key(), "locks/nightly-backup");
/// assert_eq!(url.to_string(), "s3://my-bucket/locks/nightly-backup");
///
/// let err = "s3://my-bucket".parse::<LockUrl>().unwrap_err();
/// assert!(err.to_string().contains("no object key"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LockUrl {
    bucket: String,
    key: String,
}

/// What is wrong with a lock URL. Each message names the problem and shows the expected form.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UrlError {
    /// The string has no `scheme://` part.
    #[error("{input:?} is not an s3:// URL: write it as s3://BUCKET/KEY, for example s3://my-bucket/locks/job")]
    NotAUrl {
        /// The rejected input (truncated).
        input: String,
    },
    /// The scheme is not `s3`.
    #[error("unsupported scheme {scheme:?}: only s3://BUCKET/KEY is supported (set the endpoint separately for S3-compatible stores)")]
    WrongScheme {
        /// The scheme given.
        scheme: String,
    },
    /// Nothing between `s3://` and the first `/`.
    #[error("the URL has no bucket name: write it as s3://BUCKET/KEY")]
    MissingBucket,
    /// The bucket name breaks S3's naming rules.
    #[error("invalid bucket name {bucket:?}: {reason}")]
    InvalidBucket {
        /// The rejected bucket name (truncated).
        bucket: String,
        /// Which rule it breaks.
        reason: &'static str,
    },
    /// Nothing after the bucket.
    #[error("s3://{bucket} has no object key: name the lock object, for example s3://{bucket}/locks/job")]
    MissingKey {
        /// The bucket that was given.
        bucket: String,
    },
    /// The key cannot be a lock object.
    #[error("invalid object key {key:?}: {reason}")]
    InvalidKey {
        /// The rejected key (truncated).
        key: String,
        /// Which rule it breaks.
        reason: &'static str,
    },
}

fn truncate(s: &str) -> String {
    s.chars().take(120).collect()
}

impl LockUrl {
    /// Parses `s3://bucket/key`.
    ///
    /// The bucket must follow S3's naming rules (3 to 63 characters; letters, digits, dots,
    /// hyphens and, for old buckets, underscores). The key is everything after the first `/`
    /// after the bucket, kept verbatim: at most 1024 bytes, no control characters, and not
    /// ending in `/` (that names a folder, not an object).
    ///
    /// ```
    /// # use sets3lock::LockUrl;
    /// assert!(LockUrl::parse("s3://b/k").is_err()); // bucket too short
    /// assert!(LockUrl::parse("s3://My_Bucket/k").is_err()); // upper case, '_'
    /// assert!(LockUrl::parse("s3://my-bucket.2/k").is_ok());
    /// assert!(LockUrl::parse("gs://bucket/k").is_err());
    /// assert!(LockUrl::parse("s3://bucket/dir/").is_err());
    /// assert!(LockUrl::parse("s3://bucket/a/../b").is_err());
    /// assert_eq!(LockUrl::parse("S3://bucket/a b").unwrap().key(), "a b");
    /// ```
    pub fn parse(input: &str) -> Result<LockUrl, UrlError> {
        let Some((scheme, rest)) = input.split_once("://") else {
            return Err(UrlError::NotAUrl {
                input: truncate(input),
            });
        };
        if !scheme.eq_ignore_ascii_case("s3") {
            return Err(UrlError::WrongScheme {
                scheme: truncate(scheme),
            });
        }
        let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
        check_bucket(bucket)?;
        check_key(bucket, key)?;
        Ok(LockUrl {
            bucket: bucket.to_owned(),
            key: key.to_owned(),
        })
    }

    /// Builds a lock URL from parts, with the same checks as [`LockUrl::parse`].
    ///
    /// ```
    /// # use sets3lock::LockUrl;
    /// let url = LockUrl::new("my-bucket", "deploy.lock").unwrap();
    /// assert_eq!(url.to_string(), "s3://my-bucket/deploy.lock");
    /// ```
    pub fn new(bucket: &str, key: &str) -> Result<LockUrl, UrlError> {
        check_bucket(bucket)?;
        check_key(bucket, key)?;
        Ok(LockUrl {
            bucket: bucket.to_owned(),
            key: key.to_owned(),
        })
    }

    /// The bucket name.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// The object key, verbatim (not percent-encoded).
    pub fn key(&self) -> &str {
        &self.key
    }
}

fn check_bucket(bucket: &str) -> Result<(), UrlError> {
    let invalid = |reason| UrlError::InvalidBucket {
        bucket: truncate(bucket),
        reason,
    };
    if bucket.is_empty() {
        return Err(UrlError::MissingBucket);
    }
    if bucket.len() < 3 || bucket.len() > 63 {
        return Err(invalid("bucket names are 3 to 63 characters long"));
    }
    // AWS's rules since 2018, which S3-compatible stores follow. (Older us-east-1 buckets may
    // have upper-case letters or '_', and are refused here: S3 addresses them path-style only,
    // and a store given one answers with an error only after the lock has started.)
    if !bucket
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'-'))
    {
        return Err(invalid(
            "bucket names hold only lower-case letters, digits, '.' and '-'",
        ));
    }
    let first = bucket.as_bytes()[0];
    let last = bucket.as_bytes()[bucket.len() - 1];
    let edge = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    if !edge(first) || !edge(last) {
        return Err(invalid(
            "bucket names begin and end with a letter or a digit",
        ));
    }
    Ok(())
}

fn check_key(bucket: &str, key: &str) -> Result<(), UrlError> {
    let invalid = |reason| UrlError::InvalidKey {
        key: truncate(key),
        reason,
    };
    if key.is_empty() {
        return Err(UrlError::MissingKey {
            bucket: bucket.to_owned(),
        });
    }
    if key.len() > 1024 {
        return Err(invalid("S3 keys are at most 1024 bytes long"));
    }
    if key.chars().any(char::is_control) {
        return Err(invalid("it contains control characters"));
    }
    if key
        .split('/')
        .any(|segment| segment == "." || segment == "..")
    {
        return Err(invalid(
            "it has a '.' or '..' segment, which HTTP clients resolve away: the request would name another object (or the bucket)",
        ));
    }
    if key.ends_with('/') {
        return Err(invalid(
            "it ends with '/', which names a folder: name an object, for example locks/job",
        ));
    }
    Ok(())
}

impl FromStr for LockUrl {
    type Err = UrlError;

    fn from_str(s: &str) -> Result<LockUrl, UrlError> {
        LockUrl::parse(s)
    }
}

impl fmt::Display for LockUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "s3://{}/{}", self.bucket, self.key)
    }
}
