//! Lock addresses: `s3://bucket/key`, `az://container/blob`, `gs://bucket/object`.

use core::fmt;
use core::str::FromStr;

/// Which store a lock URL names: its scheme.
///
/// ```
/// use sets3lock_proto::{LockUrl, Scheme};
/// let url: LockUrl = "az://locks/nightly".parse().unwrap();
/// assert_eq!(url.scheme(), Scheme::Azure);
/// assert_eq!(Scheme::Gcs.as_str(), "gs");
/// assert_eq!(Scheme::S3.to_string(), "s3");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Scheme {
    /// `s3://BUCKET/KEY`: Amazon S3 and S3-compatible stores (the endpoint is set apart).
    S3,
    /// `az://CONTAINER/BLOB`: Azure Blob Storage (the account is set apart).
    Azure,
    /// `gs://BUCKET/OBJECT`: Google Cloud Storage.
    Gcs,
}

impl Scheme {
    /// The scheme as written in a URL: `"s3"`, `"az"` or `"gs"`.
    ///
    /// ```
    /// assert_eq!(sets3lock_proto::Scheme::Azure.as_str(), "az");
    /// ```
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::S3 => "s3",
            Scheme::Azure => "az",
            Scheme::Gcs => "gs",
        }
    }

    /// The store's name for people: `"S3"`, `"Azure Blob Storage"`, `"Google Cloud Storage"`.
    ///
    /// ```
    /// assert_eq!(sets3lock_proto::Scheme::Gcs.store_name(), "Google Cloud Storage");
    /// ```
    #[must_use]
    pub fn store_name(self) -> &'static str {
        match self {
            Scheme::S3 => "S3",
            Scheme::Azure => "Azure Blob Storage",
            Scheme::Gcs => "Google Cloud Storage",
        }
    }

    /// The scheme for a URL's scheme part, case-insensitively.
    fn from_url(scheme: &str) -> Option<Scheme> {
        [Scheme::S3, Scheme::Azure, Scheme::Gcs]
            .into_iter()
            .find(|s| scheme.eq_ignore_ascii_case(s.as_str()))
    }
}

impl fmt::Display for Scheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a lock lives: one object, `key`, in one bucket (an Azure container, for `az://`) of
/// one store ([`Scheme`]).
///
/// ```
/// use sets3lock_proto::LockUrl;
/// let url: LockUrl = "s3://my-bucket/locks/nightly-backup".parse().unwrap();
/// assert_eq!(url.bucket(), "my-bucket");
/// assert_eq!(url.key(), "locks/nightly-backup");
/// assert_eq!(url.to_string(), "s3://my-bucket/locks/nightly-backup");
///
/// let err = "s3://my-bucket".parse::<LockUrl>().unwrap_err();
/// assert!(err.to_string().contains("no object key"));
///
/// let gcs: LockUrl = "gs://my-bucket/locks/job".parse().unwrap();
/// assert_eq!(gcs.to_string(), "gs://my-bucket/locks/job");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LockUrl {
    scheme: Scheme,
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
    /// The scheme is not `s3`, `az` or `gs`.
    #[error("unsupported scheme {scheme:?}: write s3://BUCKET/KEY (S3 and S3-compatible stores: set the endpoint separately), az://CONTAINER/KEY (Azure Blob Storage) or gs://BUCKET/KEY (Google Cloud Storage)")]
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
    /// An `az://` or `gs://` URL with nothing between the `://` and the first `/` (for
    /// `s3://`, [`UrlError::MissingBucket`]).
    #[error("the URL has no {} name: write it as {scheme}://{}/KEY", container_word(*.scheme), container_word(*.scheme).to_ascii_uppercase())]
    NoContainer {
        /// The URL's scheme.
        scheme: Scheme,
    },
    /// An `az://` or `gs://` URL with nothing after the container or bucket (for `s3://`,
    /// [`UrlError::MissingKey`]).
    #[error("{scheme}://{bucket} has no object name: name the lock object, for example {scheme}://{bucket}/locks/job")]
    NoObject {
        /// The URL's scheme.
        scheme: Scheme,
        /// The container or bucket that was given.
        bucket: String,
    },
}

/// What the store calls the place objects live in.
fn container_word(scheme: Scheme) -> &'static str {
    match scheme {
        Scheme::Azure => "container",
        Scheme::S3 | Scheme::Gcs => "bucket",
    }
}

fn truncate(s: &str) -> String {
    s.chars().take(120).collect()
}

impl LockUrl {
    /// Parses `s3://bucket/key`, `az://container/key` or `gs://bucket/key` (the scheme in any
    /// case).
    ///
    /// The bucket or container must follow its store's naming rules:
    /// - S3: 3 to 63 characters of lower-case letters, digits, '.' and '-', beginning and
    ///   ending with a letter or a digit;
    /// - Azure: 3 to 63 characters of lower-case letters, digits and '-', beginning with a
    ///   letter or a digit, with no two '-' in a row and no '-' at the end;
    /// - GCS: 3 to 63 characters (up to 222 with dots, each dot-separated part at most 63) of
    ///   lower-case letters, digits, '-', '_' and '.', beginning and ending with a letter or a
    ///   digit, and not beginning with "goog".
    ///
    /// The key is everything after the first `/` after the bucket, kept verbatim: at most 1024
    /// bytes, no control characters, no `.` or `..` segment, and not ending in `/` (that names
    /// a folder, not an object).
    ///
    /// ```
    /// # use sets3lock_proto::{LockUrl, Scheme};
    /// assert!(LockUrl::parse("s3://b/k").is_err()); // bucket too short
    /// assert!(LockUrl::parse("s3://My_Bucket/k").is_err()); // upper case, '_'
    /// assert!(LockUrl::parse("s3://my-bucket.2/k").is_ok());
    /// assert_eq!(LockUrl::parse("GS://my_bucket/k").unwrap().scheme(), Scheme::Gcs);
    /// assert!(LockUrl::parse("az://my_container/k").is_err()); // '_' is not allowed on Azure
    /// assert!(LockUrl::parse("ftp://bucket/k").is_err());
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
        let Some(scheme) = Scheme::from_url(scheme) else {
            return Err(UrlError::WrongScheme {
                scheme: truncate(scheme),
            });
        };
        let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
        LockUrl::in_store(scheme, bucket, key)
    }

    /// Builds a lock URL for a store from parts, with the same checks as [`LockUrl::parse`].
    ///
    /// ```
    /// # use sets3lock_proto::{LockUrl, Scheme};
    /// let url = LockUrl::in_store(Scheme::Azure, "locks", "deploy.lock").unwrap();
    /// assert_eq!(url.to_string(), "az://locks/deploy.lock");
    /// assert!(LockUrl::in_store(Scheme::Azure, "a--b", "k").is_err());
    /// assert!(LockUrl::in_store(Scheme::Gcs, "google-locks", "k").is_err());
    /// ```
    pub fn in_store(scheme: Scheme, bucket: &str, key: &str) -> Result<LockUrl, UrlError> {
        match scheme {
            Scheme::S3 => check_bucket(bucket)?,
            Scheme::Azure => check_container(bucket)?,
            Scheme::Gcs => check_gcs_bucket(bucket)?,
        }
        if scheme == Scheme::S3 {
            check_key(bucket, key)?;
        } else if key.is_empty() {
            return Err(UrlError::NoObject {
                scheme,
                bucket: bucket.to_owned(),
            });
        } else if key.len() > 1024 {
            return Err(UrlError::InvalidKey {
                key: truncate(key),
                reason: "object names are at most 1024 bytes long",
            });
        } else {
            check_key(bucket, key)?;
            store_key_rules(scheme, key)?;
        }
        Ok(LockUrl {
            scheme,
            bucket: bucket.to_owned(),
            key: key.to_owned(),
        })
    }

    /// Builds a lock URL from parts, with the same checks as [`LockUrl::parse`].
    ///
    /// ```
    /// # use sets3lock_proto::LockUrl;
    /// let url = LockUrl::new("my-bucket", "deploy.lock").unwrap();
    /// assert_eq!(url.to_string(), "s3://my-bucket/deploy.lock");
    /// ```
    pub fn new(bucket: &str, key: &str) -> Result<LockUrl, UrlError> {
        LockUrl::in_store(Scheme::S3, bucket, key)
    }

    /// The store the URL names.
    ///
    /// ```
    /// # use sets3lock_proto::{LockUrl, Scheme};
    /// assert_eq!(LockUrl::new("my-bucket", "k").unwrap().scheme(), Scheme::S3);
    /// ```
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// The bucket name (for `az://`, the container's).
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

/// Azure's container naming rules.
fn check_container(name: &str) -> Result<(), UrlError> {
    let invalid = |reason| UrlError::InvalidBucket {
        bucket: truncate(name),
        reason,
    };
    if name.is_empty() {
        return Err(UrlError::NoContainer {
            scheme: Scheme::Azure,
        });
    }
    let ok = (3..=63).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--");
    if !ok {
        return Err(invalid(
            "Azure container names are 3 to 63 characters of lower-case letters, digits and '-', begin with a letter or a digit, and have no two '-' in a row and no '-' at the end",
        ));
    }
    Ok(())
}

/// Google Cloud Storage's bucket naming rules (all but the ban on IP addresses and on
/// "google" inside a name, which the store enforces when the bucket is created).
fn check_gcs_bucket(name: &str) -> Result<(), UrlError> {
    let invalid = |reason| UrlError::InvalidBucket {
        bucket: truncate(name),
        reason,
    };
    if name.is_empty() {
        return Err(UrlError::NoContainer {
            scheme: Scheme::Gcs,
        });
    }
    let edge = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let bytes = name.as_bytes();
    let max = if name.contains('.') { 222 } else { 63 };
    let ok = (3..=max).contains(&name.len())
        && name.split('.').all(|part| part.len() <= 63)
        && bytes
            .iter()
            .all(|&b| edge(b) || matches!(b, b'-' | b'_' | b'.'))
        && edge(bytes[0])
        && edge(bytes[bytes.len() - 1])
        && !name.starts_with("goog");
    if !ok {
        return Err(invalid(
            "GCS bucket names are 3 to 63 characters (up to 222 with dots, at most 63 between dots) of lower-case letters, digits, '-', '_' and '.', begin and end with a letter or a digit, and do not begin with \"goog\"",
        ));
    }
    Ok(())
}

/// What Azure and GCS cannot name (the rules S3 shares are in [`check_key`]).
fn store_key_rules(scheme: Scheme, key: &str) -> Result<(), UrlError> {
    let invalid = |reason| UrlError::InvalidKey {
        key: truncate(key),
        reason,
    };
    match scheme {
        Scheme::Azure if key.ends_with('.') || key.split('/').any(|s| s.ends_with('.')) => {
            Err(invalid(
                "Azure drops a '.' at the end of a blob name or of a segment of it: the lock would live under another name; end the key with another character",
            ))
        }
        Scheme::Gcs if key.starts_with(".well-known/acme-challenge/") => Err(invalid(
            "GCS does not allow object names under .well-known/acme-challenge/",
        )),
        _ => Ok(()),
    }
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
        write!(f, "{}://{}/{}", self.scheme, self.bucket, self.key)
    }
}
