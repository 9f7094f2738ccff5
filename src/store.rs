//! What S3-compatible stores do with the one conditional request they disagree on.

use core::fmt;

/// How a store treats `DELETE If-Match`, the part of S3's conditional API that stores get
/// wrong. Presence mode releases with it; fenced mode ([`Config::fenced`](crate::Config::fenced))
/// never sends a DELETE, so it is safe on all three.
///
/// ```
/// use sets3lock_proto::ConditionalDelete;
/// assert!(ConditionalDelete::Honored.is_safe_for_presence_mode());
/// assert!(!ConditionalDelete::IgnoresIfMatch.is_safe_for_presence_mode());
/// assert!(ConditionalDelete::NotImplemented.to_string().starts_with("refuses DELETE If-Match"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConditionalDelete {
    /// Deletes only the version named (AWS since 2025-09-16, Ceph, SeaweedFS).
    Honored,
    /// Deletes whatever is there, like a plain DELETE (MinIO CE, RustFS): a presence-mode
    /// release by an expired holder would delete the next holder's lock.
    IgnoresIfMatch,
    /// Refuses it with `501 NotImplemented` (LocalStack, AWS before 2025-09-16): a
    /// presence-mode release cannot delete its lock.
    NotImplemented,
}

impl ConditionalDelete {
    /// Whether presence mode (release by `DELETE If-Match`) can be used on such a store.
    pub fn is_safe_for_presence_mode(self) -> bool {
        self == ConditionalDelete::Honored
    }
}

impl fmt::Display for ConditionalDelete {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ConditionalDelete::Honored => "honours DELETE If-Match",
            ConditionalDelete::IgnoresIfMatch => {
                "ignores If-Match on DELETE (it deletes whatever is there)"
            }
            ConditionalDelete::NotImplemented => {
                "refuses DELETE If-Match (501 NotImplemented, or no permission to delete)"
            }
        })
    }
}
