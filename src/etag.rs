//! Entity tags as S3 returns them and as conditional requests send them back.

use core::fmt;

/// An S3 entity tag: the version of the lock object that a conditional request names.
///
/// Stored without the surrounding quotes and without a weak `W/` prefix, so that the forms
/// servers send (`"abc"`, `abc`, `W/"abc"`) compare equal. [`ETag::header_value`] gives the
/// quoted form to send in `If-Match` / `If-None-Match`.
///
/// ```
/// use sets3lock_proto::ETag;
/// let a = ETag::parse("\"9b2cf535f27731c974343645a3985328\"").unwrap();
/// let b = ETag::parse("9b2cf535f27731c974343645a3985328").unwrap();
/// assert_eq!(a, b);
/// assert_eq!(a.header_value(), "\"9b2cf535f27731c974343645a3985328\"");
/// assert!(ETag::parse("").is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ETag(String);

/// Why a string is not a usable entity tag.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid ETag {value:?}: {reason}")]
pub struct InvalidETag {
    /// The rejected value (truncated to 80 characters).
    pub value: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

/// The longest ETag accepted; S3's are 34 characters with quotes, multipart ones a few more.
const MAX_LEN: usize = 1024;

impl ETag {
    /// Parses an `ETag` header value.
    ///
    /// Accepts quoted, unquoted and weak forms. Rejects empty values, values longer than 1 KiB
    /// and characters that cannot be sent back in a header (controls, non-ASCII, inner quotes).
    ///
    /// ```
    /// # use sets3lock_proto::ETag;
    /// assert_eq!(ETag::parse(" W/\"x1\" ").unwrap().as_str(), "x1");
    /// assert!(ETag::parse("\"a\"b\"").is_err());
    /// ```
    pub fn parse(raw: &str) -> Result<ETag, InvalidETag> {
        let invalid = |reason| InvalidETag {
            value: raw.chars().take(80).collect(),
            reason,
        };
        let mut v = raw.trim_matches([' ', '\t']);
        // A weak ETag is kept as its opaque value and sent back strong. S3 sends strong ones; on
        // a store that sends weak ones and refuses them in `If-Match`, renewals, takeovers and
        // releases fail (the last two with `Setback::Incoherent`) instead of succeeding wrongly.
        if let Some(rest) = v.strip_prefix("W/") {
            v = rest;
        }
        if v.len() >= 2 && v.starts_with('"') && v.ends_with('"') {
            v = &v[1..v.len() - 1];
        }
        if v.is_empty() {
            return Err(invalid("it is empty"));
        }
        if v.len() > MAX_LEN {
            return Err(invalid("it is longer than 1024 bytes"));
        }
        if !v.bytes().all(|b| (0x21..=0x7e).contains(&b) && b != b'"') {
            return Err(invalid(
                "it contains characters that cannot be sent back in a header",
            ));
        }
        Ok(ETag(v.to_owned()))
    }

    /// The opaque value, without quotes.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The quoted form to send in `If-Match` or `If-None-Match`.
    pub fn header_value(&self) -> String {
        format!("\"{}\"", self.0)
    }
}

impl fmt::Display for ETag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{}\"", self.0)
    }
}
