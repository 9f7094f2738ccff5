//! Handles: a printable name for one hold, so that another process can continue it.

use crate::{LockUrl, OwnerId, UrlError};
use core::fmt;
use core::str::FromStr;
use core::time::Duration;

/// The marker between a handle's lock URL and its fields.
const MARKER: &str = "#sets3lock-hold:";

/// One hold, named so that another process can renew it, run a program under it or release
/// it ([`Lock::adopt`](crate::Lock::adopt)); from [`Lock::detach`](crate::Lock::detach).
///
/// A handle is one line of printable text: the lock's URL, then the hold's owner id, its
/// lease in milliseconds and, in fenced mode, its fencing token:
///
/// ```text
/// s3://ci-locks/deploy#sets3lock-hold:owner=5f0c…41,lease_ms=1800000,token=3
/// ```
///
/// It carries no credential and no ETag: whoever continues the hold reads the record, checks
/// that its owner is this one, and replaces it with `If-Match` on the ETag it read, so the
/// handle stays valid across renewals. Anyone who has it can renew or release the hold, as
/// anyone with the bucket's credentials could delete the lock object: keep it where the
/// credentials are kept (a CI job's environment, a workflow's state).
///
/// ```
/// use core::time::Duration;
/// use sets3lock_proto::{Handle, OwnerId};
///
/// let handle = Handle {
///     url: "s3://ci-locks/deploy".parse().unwrap(),
///     owner: OwnerId::from_u128(0x5f0c),
///     lease: Duration::from_secs(1800),
///     token: Some(3),
/// };
/// let text = handle.to_string();
/// assert_eq!(
///     text,
///     "s3://ci-locks/deploy#sets3lock-hold:owner=00000000000000000000000000005f0c,lease_ms=1800000,token=3"
/// );
/// assert_eq!(text.parse::<Handle>().unwrap(), handle);
/// assert!("s3://ci-locks/deploy".parse::<Handle>().is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Handle {
    /// The lock.
    pub url: LockUrl,
    /// The hold's owner id, in every record of the hold.
    pub owner: OwnerId,
    /// The lease the hold was taken with: what renewals from this handle use unless told
    /// otherwise.
    pub lease: Duration,
    /// Fenced mode: the token the hold was granted, which its renewals keep.
    pub token: Option<u64>,
}

/// A string that is not a handle. The message says what is wrong and what a handle looks
/// like.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HandleError {
    /// No `#sets3lock-hold:` part: perhaps a plain lock URL.
    #[error("{input:?} is not a handle: a handle is what `sets3lock acquire` printed, URL#sets3lock-hold:owner=…,lease_ms=…")]
    NotAHandle {
        /// The rejected input (truncated).
        input: String,
    },
    /// The URL part is not a lock URL.
    #[error("the handle's URL is not valid: {0}")]
    Url(#[from] UrlError),
    /// A field is missing, repeated, unknown or malformed.
    #[error("the handle's {field} is missing or malformed: copy the handle whole, as `sets3lock acquire` printed it")]
    Field {
        /// Which field.
        field: &'static str,
    },
}

impl fmt::Display for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{MARKER}owner={},lease_ms={}",
            self.url,
            self.owner,
            self.lease.as_millis()
        )?;
        if let Some(token) = self.token {
            write!(f, ",token={token}")?;
        }
        Ok(())
    }
}

impl FromStr for Handle {
    type Err = HandleError;

    fn from_str(s: &str) -> Result<Handle, HandleError> {
        let s = s.trim();
        let Some((url, fields)) = s.rsplit_once(MARKER) else {
            return Err(HandleError::NotAHandle {
                input: s.chars().take(120).collect(),
            });
        };
        let url = LockUrl::parse(url)?;
        let (mut owner, mut lease, mut token) = (None, None, None);
        for field in fields.split(',') {
            let (name, value) = field.split_once('=').unwrap_or((field, ""));
            let bad = |field| HandleError::Field { field };
            match name {
                "owner" if owner.is_none() => {
                    owner = Some(value.parse::<OwnerId>().map_err(|_| bad("owner"))?);
                }
                "lease_ms" if lease.is_none() => {
                    let ms = number(value).ok_or(bad("lease_ms"))?;
                    lease = Some(Duration::from_millis(ms));
                }
                "token" if token.is_none() => {
                    token = Some(
                        number(value)
                            .filter(|&t| t > 0 && t <= crate::MAX_TOKEN)
                            .ok_or(bad("token"))?,
                    );
                }
                "owner" | "lease_ms" | "token" => return Err(bad("field list (a field repeats)")),
                _ => return Err(bad("field list (an unknown field)")),
            }
        }
        Ok(Handle {
            url,
            owner: owner.ok_or(HandleError::Field { field: "owner" })?,
            lease: lease.ok_or(HandleError::Field { field: "lease_ms" })?,
            token,
        })
    }
}

/// A decimal number without sign or padding tricks.
fn number(s: &str) -> Option<u64> {
    if s.is_empty() || s.len() > 20 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}
