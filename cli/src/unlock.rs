//! `sets3lock unlock`: the library's force-unlock, which removes only the version of the lock
//! the operator named (by ETag, [`Client::unlock`]; by Terraform's lock ID,
//! [`Client::unlock_id`]; or the version that stayed unchanged for a lease,
//! [`Client::unlock_if_stale`]), said as one line with an exit status.

use crate::exit_codes::{CANNOT_LOCK, NO, OK, USAGE};
use sets3lock::proto::{ETag, LockUrl};
use sets3lock::{Client, Error, ErrorKind, Options, Unlocked};

/// Which version of the lock to remove.
#[derive(Debug)]
pub(crate) enum Which {
    /// `--etag`: the version `status` showed.
    ETag(ETag),
    /// `--id`: the version whose Terraform lock ID this is.
    Id(String),
    /// `--if-stale`: the version there now, once it has stayed unchanged for its lease.
    Stale,
}

impl Which {
    fn named(&self) -> String {
        match self {
            Which::ETag(etag) => format!("with ETag {}", etag.as_str()),
            Which::Id(id) => format!("with Terraform lock ID {id}"),
            Which::Stale => "that stayed unchanged for its lease".into(),
        }
    }
}

/// `sets3lock unlock (--etag ETAG | --id LOCK_ID | --if-stale) URL`: 0 done (stdout), 1 left
/// as it was because the lock is another version now (or another ID), 100 an ETag the store
/// cannot have given or a lock without a lease for --if-stale, 111 the store could not be
/// asked or the outcome is unknown.
pub(crate) fn unlock(url: &LockUrl, options: &Options, which: &Which) -> u8 {
    let client = match Client::in_store(url.scheme(), url.bucket(), options) {
        Ok(c) => c,
        Err(e) => {
            say!("{url}: {e}");
            return CANNOT_LOCK;
        }
    };
    let result = match which {
        Which::ETag(etag) => client.unlock(url.key(), etag),
        Which::Id(id) => client.unlock_id(url.key(), id),
        Which::Stale => client.unlock_if_stale(url.key(), |lease| {
            say!(
                "{url}: waiting {} (its lease) to see whether its holder renews it",
                crate::output::human(lease)
            )
        }),
    };
    let unlocked = match result {
        Ok(u) => u,
        Err(e @ Error::NoLease { .. }) => {
            say!("{url}: not unlocked: {e}");
            return USAGE;
        }
        Err(e) if e.kind() == ErrorKind::InvalidInput => {
            say!("{url}: {}: {e}", which.named());
            return USAGE;
        }
        Err(e) if e.kind() == ErrorKind::Unreachable => {
            say!(
                "{url}: not unlocked, or its outcome is unknown ({e}; each request waits up to --timeout, {}); run sets3lock status",
                crate::output::human(options.request_timeout)
            );
            return CANNOT_LOCK;
        }
        Err(e) => {
            say!("{url}: not unlocked: {e}");
            return CANNOT_LOCK;
        }
    };
    let named = which.named();
    match unlocked {
        Unlocked::Deleted => out!("{url}: deleted the lock {named}"),
        Unlocked::Freed { token } => out!(
            "{url}: freed the lock {named} (fenced: token {token} kept, the next holder gets a larger one)"
        ),
        Unlocked::AlreadyFree => out!("{url}: no lock to remove (already free)"),
        Unlocked::Changed { now } => {
            match (now, which) {
                (Some((_, holder)), Which::Id(_)) => {
                    let id = holder
                        .terraform()
                        .map_or_else(|| "no Terraform lock ID".to_owned(), |t| format!("Terraform lock ID {}", t.id));
                    say!(
                        "{url}: not deleted: the lock is held by {holder}, with {id}, not the lock {named} (run sets3lock status again)"
                    )
                }
                (Some((current, holder)), _) => {
                    let who = if holder.is_free() {
                        holder.to_string()
                    } else {
                        format!("held by {holder}")
                    };
                    say!(
                        "{url}: not deleted: the lock is now {who} under ETag {}, not the lock {named} (run sets3lock status again)",
                        current.as_str()
                    )
                }
                (None, _) => say!(
                    "{url}: not deleted: the lock is no longer the version {named}, and reading it again failed (run sets3lock status again)"
                ),
            }
            return NO;
        }
        other => {
            say!("{url}: {other:?}");
            return CANNOT_LOCK;
        }
    }
    OK
}
