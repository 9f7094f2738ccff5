//! `sets3lock unlock --etag E`: the library's force-unlock ([`Client::unlock`]), which removes
//! only the version of the lock the operator saw, said as one line with an exit status.

use crate::exit_codes::{CANNOT_LOCK, NO, OK, USAGE};
use sets3lock::proto::{ETag, LockUrl};
use sets3lock::{Client, ErrorKind, Options, Unlocked};

/// `sets3lock unlock --etag ETAG URL`: 0 done (stdout), 1 left as it was because the lock is
/// another version now, 100 an ETag the store cannot have given, 111 the store could not be
/// asked or the outcome is unknown.
pub(crate) fn unlock(url: &LockUrl, options: &Options, etag: &ETag) -> u8 {
    let client = match Client::in_store(url.scheme(), url.bucket(), options) {
        Ok(c) => c,
        Err(e) => {
            say!("{url}: {e}");
            return CANNOT_LOCK;
        }
    };
    let unlocked = match client.unlock(url.key(), etag) {
        Ok(u) => u,
        Err(e) if e.kind() == ErrorKind::InvalidInput => {
            say!("{url}: --etag {}: {e}", etag.as_str());
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
    let etag = etag.as_str();
    match unlocked {
        Unlocked::Deleted => out!("{url}: deleted the lock with ETag {etag}"),
        Unlocked::Freed { token } => out!(
            "{url}: freed the lock with ETag {etag} (fenced: token {token} kept, the next holder gets a larger one)"
        ),
        Unlocked::AlreadyFree => out!("{url}: no lock to remove (already free)"),
        Unlocked::Changed { now } => {
            match now {
                Some((current, holder)) => {
                    let who = if holder.is_free() {
                        holder.to_string()
                    } else {
                        format!("held by {holder}")
                    };
                    say!(
                        "{url}: not deleted: the lock is now {who} under ETag {}, not {etag} (run sets3lock status again)",
                        current.as_str()
                    )
                }
                None => say!(
                    "{url}: not deleted: the lock is no longer the version with ETag {etag}, and reading it again failed (run sets3lock status again)"
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
