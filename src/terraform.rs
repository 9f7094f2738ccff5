//! Terraform's and OpenTofu's lock format: the `LockInfo` JSON of a `.tflock` object.
//!
//! Terraform (1.10 and later, `use_lockfile = true`) and OpenTofu lock S3 state with a
//! `<state key>.tflock` object, created with `If-None-Match: *`, whose body is their `LockInfo`
//! struct encoded by Go's `encoding/json` with no tags, so its keys are the field names:
//!
//! ```json
//! {"ID":"6b0c…","Operation":"OperationTypeApply","Info":"","Who":"alice@ci-7",
//!  "Version":"1.15.5","Created":"2026-12-07T10:00:00.123456789Z","Path":"bucket/env/prod.tfstate"}
//! ```
//!
//! Such a body declares no lease: Terraform never takes a lock over, and neither does a
//! sets3lock waiter (unless configured with [`Config::terraform_lease`](crate::Config)).
//!
//! A lock configured with [`Config::terraform`](crate::Config::terraform) writes these seven
//! keys beside its own record's, which Terraform's decoder ignores (it ignores unknown keys).
//! Go matches keys to fields without regard to case, so none of the record's keys may fold to
//! one of the seven; [`TERRAFORM_KEYS`] lists them for that check.

use crate::OwnerId;
use core::fmt;
use core::time::Duration;

/// The seven keys of Terraform's and OpenTofu's `LockInfo`, as Go's `encoding/json` writes them.
pub const TERRAFORM_KEYS: [&str; 7] = [
    "ID",
    "Operation",
    "Info",
    "Who",
    "Version",
    "Created",
    "Path",
];

/// The longest text kept of each field read from a `.tflock` body.
const MAX_FIELD: usize = 200;

/// Terraform's lock info: the seven fields of a `.tflock` body, as written.
///
/// ```
/// use sets3lock_proto::{Holder, TerraformInfo};
/// let body = br#"{"ID":"6b0c3f1e-1d2a-4b5c-8d9e-0f1a2b3c4d5e","Operation":"OperationTypeApply",
///   "Info":"","Who":"alice@ci-7","Version":"1.15.5","Created":"2026-12-07T10:00:00Z",
///   "Path":"state/prod.tfstate"}"#;
/// let Holder::Terraform(info) = Holder::decode(body) else { panic!("not read as Terraform's") };
/// assert_eq!(info.who, "alice@ci-7");
/// assert_eq!(Holder::decode(body).lease(), None); // it declares no lease: never taken over
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TerraformInfo {
    /// The lock's ID, which `terraform force-unlock ID` (and `sets3lock unlock --id`) names.
    pub id: String,
    /// What the holder is doing (`OperationTypeApply`, or `sets3lock task.sh`).
    pub operation: String,
    /// Free text (Terraform leaves it empty; sets3lock says that it holds the lock, and its
    /// lease).
    pub info: String,
    /// Who holds it: `user@host`.
    pub who: String,
    /// The holder's version (Terraform's, or `sets3lock 0.x`).
    pub version: String,
    /// When the lock was taken, RFC 3339.
    pub created: String,
    /// `bucket/key` of the state (Terraform) or of the lock (sets3lock).
    pub path: String,
}

/// What a lock written in Terraform's format says about its holder: the fields the embedding
/// knows (the core knows neither the bucket nor the program). The core fills the rest: the ID
/// from the hold's owner (a version-4 UUID, the same for every write of one hold), `Created`
/// from the hold's start, and `Info` from the lease.
///
/// ```
/// use sets3lock_proto::TerraformFormat;
/// let format = TerraformFormat {
///     who: "alice@ci-7".into(),
///     operation: "sets3lock deploy.sh".into(),
///     path: "state/prod.tfstate.tflock".into(),
///     version: "sets3lock 0.1.0".into(),
/// };
/// assert_eq!(format.who, "alice@ci-7");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TerraformFormat {
    /// `Who`: `user@host`.
    pub who: String,
    /// `Operation`: what runs under the lock. Anyone who may read the object reads this: name
    /// the program, never its arguments.
    pub operation: String,
    /// `Path`: `bucket/key`.
    pub path: String,
    /// `Version`: the writer's name and version.
    pub version: String,
}

impl TerraformFormat {
    /// The seven fields for a hold by `owner` that started at `acquired_unix_ms` with `lease`.
    pub(crate) fn info(
        &self,
        owner: OwnerId,
        acquired_unix_ms: u64,
        lease: Duration,
    ) -> TerraformInfo {
        // Bounded and printable as a reader keeps them: Terraform prints them to terminals,
        // and a body past the readers' limit would be nobody's record.
        TerraformInfo {
            id: terraform_id(owner),
            operation: clean(&self.operation),
            info: format!(
                "held by sets3lock with a lease of {}: renewed while it runs, taken over by \
                 sets3lock waiters if it stops renewing",
                Seconds(lease)
            ),
            who: clean(&self.who),
            version: clean(&self.version),
            created: rfc3339(acquired_unix_ms),
            path: clean(&self.path),
        }
    }
}

/// A text field read from a body: at most [`MAX_FIELD`] characters, without control characters
/// (it is printed to terminals).
pub(crate) fn clean(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_control())
        .take(MAX_FIELD)
        .collect()
}

/// An owner id with the bits of a version-4, RFC 4122 variant UUID set (it stays random in the
/// other 122 bits), for holds written in Terraform's format, whose ID is a UUID.
pub(crate) fn uuid_owner(random: u128) -> OwnerId {
    let version = 0xF_u128 << 76;
    let variant = 0x3_u128 << 62;
    OwnerId::from_u128((random & !version & !variant) | (0x4 << 76) | (0x2 << 62))
}

/// The owner id as a UUID: `8-4-4-4-12` lowercase hexadecimal digits.
///
/// ```
/// use sets3lock_proto::{terraform_id, OwnerId};
/// let owner = OwnerId::from_u128(0x0123456789ab_4def_8123_456789abcdef);
/// assert_eq!(terraform_id(owner), "01234567-89ab-4def-8123-456789abcdef");
/// ```
pub fn terraform_id(owner: OwnerId) -> String {
    let hex = owner.to_string();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// Milliseconds since the Unix epoch as RFC 3339 in UTC, to the millisecond:
/// `2026-12-07T10:00:00.123Z` (what Go's `time.Time` decodes; anything else fails Terraform's
/// decoding of the whole lock info).
pub(crate) fn rfc3339(unix_ms: u64) -> String {
    let secs = unix_ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        unix_ms % 1000
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`, for days on or after the epoch).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

/// A duration in whole seconds when it is one, else in milliseconds.
struct Seconds(Duration);

impl fmt::Display for Seconds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.subsec_millis() == 0 {
            write!(f, "{} s", self.0.as_secs())
        } else {
            write!(f, "{} ms", self.0.as_millis())
        }
    }
}

impl fmt::Display for TerraformInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let or_unknown = |s: &str| {
            if s.is_empty() {
                "?".to_owned()
            } else {
                s.to_owned()
            }
        };
        write!(
            f,
            "{} running {} since {} (lock ID {}, version {})",
            or_unknown(&self.who),
            or_unknown(&self.operation),
            or_unknown(&self.created),
            or_unknown(&self.id),
            or_unknown(&self.version)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_rfc3339_in_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(rfc3339(1_764_500_000_123), "2025-11-30T10:53:20.123Z");
        assert_eq!(rfc3339(4_102_444_799_999), "2099-12-31T23:59:59.999Z");
    }

    #[test]
    fn a_terraform_id_is_a_version_4_uuid_and_keeps_the_other_bits() {
        let owner = uuid_owner(u128::MAX);
        let id = terraform_id(owner);
        assert_eq!(id, "ffffffff-ffff-4fff-bfff-ffffffffffff");
        let owner = uuid_owner(0);
        assert_eq!(terraform_id(owner), "00000000-0000-4000-8000-000000000000");
    }

    #[test]
    fn fields_read_are_clipped_and_printable() {
        let long = "x".repeat(500);
        assert_eq!(clean(&long).len(), MAX_FIELD);
        assert_eq!(clean("a\u{1b}[31mb\nc"), "a[31mbc");
    }
}
