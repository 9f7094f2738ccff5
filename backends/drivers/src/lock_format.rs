//! Which format a lock's record is written in: sets3lock's own, or Terraform's and OpenTofu's
//! too (by default for keys that end in `.tflock`, the lock files of their S3 and GCS backends).

use crate::Options;
use core::fmt;
use core::str::FromStr;
use sets3lock_proto::{LockUrl, TerraformFormat};

/// The suffix of Terraform's and OpenTofu's lock files: `<state key>.tflock`.
pub const TFLOCK_SUFFIX: &str = ".tflock";

/// Which format a lock's record is written in ([`Options::lock_format`]).
///
/// In Terraform's format the record carries Terraform's seven `LockInfo` fields beside its
/// own, so Terraform and OpenTofu refuse with a Lock Info that names the holder, and wait
/// for it with `-lock-timeout`. It needs presence mode with a lease (a lock in fenced mode
/// or with lease 0 is refused): Terraform could never take a record that persists.
///
/// ```
/// use sets3lock::LockFormat;
/// assert!(LockFormat::Auto.is_terraform("env/prod.tfstate.tflock"));
/// assert!(!LockFormat::Auto.is_terraform("locks/nightly"));
/// assert!(LockFormat::Terraform.is_terraform("locks/nightly"));
/// assert_eq!("sets3lock".parse::<LockFormat>(), Ok(LockFormat::Sets3lock));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum LockFormat {
    /// Terraform's for a key that ends in `.tflock`, sets3lock's own for any other.
    #[default]
    Auto,
    /// sets3lock's own record only.
    Sets3lock,
    /// Terraform's fields too, whatever the key.
    Terraform,
}

impl LockFormat {
    /// Whether a lock on `key` is written in Terraform's format.
    pub fn is_terraform(self, key: &str) -> bool {
        match self {
            LockFormat::Auto => key.ends_with(TFLOCK_SUFFIX),
            LockFormat::Sets3lock => false,
            LockFormat::Terraform => true,
        }
    }
}

/// The name is not `auto`, `sets3lock` or `terraform`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a lock format: use auto, sets3lock or terraform")]
pub struct InvalidLockFormat(pub String);

impl FromStr for LockFormat {
    type Err = InvalidLockFormat;

    fn from_str(s: &str) -> Result<LockFormat, InvalidLockFormat> {
        match s {
            "auto" => Ok(LockFormat::Auto),
            "sets3lock" => Ok(LockFormat::Sets3lock),
            "terraform" | "opentofu" | "tofu" => Ok(LockFormat::Terraform),
            other => Err(InvalidLockFormat(other.to_owned())),
        }
    }
}

impl fmt::Display for LockFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LockFormat::Auto => "auto",
            LockFormat::Sets3lock => "sets3lock",
            LockFormat::Terraform => "terraform",
        })
    }
}

/// What a hold on `url` by this process writes in Terraform's fields, when its format is
/// Terraform's: `Who` user@host, `Operation` what [`Options::operation`] says (else sets3lock
/// and this program's name, never its arguments), `Path` bucket/state key as Terraform writes
/// it (the key without `.tflock`), `Version` this crate's.
pub(crate) fn terraform_format(options: &Options, url: &LockUrl, host: &str) -> TerraformFormat {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let user = var("USER")
        .or_else(|| var("LOGNAME"))
        .or_else(|| var("USERNAME"))
        .or_else(user_of_this_process)
        .unwrap_or_else(|| "unknown".into());
    let operation = options.operation.clone().unwrap_or_else(|| {
        let program = std::env::current_exe()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "a program".into());
        format!("sets3lock {program}")
    });
    let key = url.key();
    let state = key.strip_suffix(TFLOCK_SUFFIX).unwrap_or(key);
    TerraformFormat {
        who: format!("{user}@{host}"),
        operation,
        path: format!("{}/{state}", url.bucket()),
        version: concat!("sets3lock ", env!("CARGO_PKG_VERSION")).to_owned(),
    }
}

/// The name of the user this process runs as, from `/etc/passwd` (where no `USER` is set: cron
/// jobs, containers, systemd services).
#[cfg(unix)]
fn user_of_this_process() -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let uid = std::fs::metadata("/proc/self").ok()?.uid().to_string();
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        (fields.nth(1)? == uid && !name.is_empty()).then(|| name.to_owned())
    })
}

#[cfg(not(unix))]
fn user_of_this_process() -> Option<String> {
    None
}
