//! `sets3lock unlock --etag E`: a force-unlock that deletes only the lock the operator saw.
//! (Terraform's force-unlock reads, then deletes unconditionally: a newer lock taken between
//! the two would be deleted. `DELETE If-Match` cannot do that.)

//!
//! A fenced lock is never deleted (its token would start again at 1): unlock writes a `free`
//! record over the version the operator saw, with `If-Match`, keeping its token.

use crate::exit_codes::{CANNOT_LOCK, NO, OK, USAGE};
use sets3lock::proto::{ETag, Fence, Intent, LockState, LockUrl, OwnerId, Record, Response};
use sets3lock::{Client, Options};

/// What a force-unlock came to: the one line `sets3lock unlock` says and its exit status.
#[derive(Debug)]
#[non_exhaustive]
pub struct Unlocked {
    /// `"deleted"`, `"freed"` (a fenced lock, its token kept) or `"already_free"` when the
    /// lock is free now; `None` when it was left as it was.
    pub outcome: Option<&'static str>,
    /// The command's exit status: 0 done, 1 not the lock the operator saw, 100 a malformed
    /// ETag, 111 the store could not be asked.
    pub code: u8,
    /// The line (on stdout when done, on stderr otherwise).
    pub line: String,
    /// The library's error, when the store could not be asked or refused (no bucket, access
    /// denied, unreachable).
    pub error: Option<sets3lock::Error>,
}

fn done(outcome: &'static str, line: String) -> Unlocked {
    Unlocked {
        outcome: Some(outcome),
        code: OK,
        line,
        error: None,
    }
}

fn left(code: u8, line: String) -> Unlocked {
    Unlocked {
        outcome: None,
        code,
        line,
        error: None,
    }
}

/// Left as it was because of `error`.
fn failed(line: String, error: impl Into<sets3lock::Error>) -> Unlocked {
    Unlocked {
        error: Some(error.into()),
        ..left(CANNOT_LOCK, line)
    }
}

/// `sets3lock unlock --etag ETAG URL`: prints what [`force_unlock`] says.
pub(crate) fn unlock(url: &LockUrl, options: &Options, etag: &ETag) -> u8 {
    let unlocked = force_unlock(url, options, etag);
    if unlocked.code == OK {
        out!("{}", unlocked.line);
    } else {
        say!("{}", unlocked.line);
    }
    unlocked.code
}

/// Deletes the lock at `url` only if its ETag is still `etag` (a fenced lock is freed, never
/// deleted, keeping its token); it reads the lock first and never sends a delete for another
/// holder's lock.
pub fn force_unlock(url: &LockUrl, options: &Options, etag: &ETag) -> Unlocked {
    if url.scheme() == sets3lock::proto::Scheme::Gcs
        && !etag.as_str().bytes().all(|b| b.is_ascii_digit())
    {
        return left(USAGE, format!(
            "{url}: --etag {}: a gs:// lock's ETag is its generation, a decimal number (sets3lock status shows it)",
            etag.as_str()
        ));
    }
    let client = match Client::in_store(url.scheme(), url.bucket(), options) {
        Ok(c) => c,
        Err(e) => return failed(format!("{url}: {e}"), e),
    };
    // Look first: a fenced lock is never deleted, whichever ETag was given (a store whose
    // DELETE ignores its condition, such as fake-gcs-server, would delete it anyway), and a
    // lock that cannot be read is not touched.
    match client.status(url.key()) {
        Ok(Some((current, holder))) => {
            if let Some(fence) = holder.fence() {
                if current == *etag {
                    return free(url, &client, etag, fence);
                }
                return left(NO, format!(
                    "{url}: not deleted: the fenced lock is now held by {holder} under ETag {}, not {} (run sets3lock status again)",
                    current.as_str(),
                    etag.as_str()
                ));
            }
            if current != *etag {
                // Not the lock the operator saw: never sent a DELETE (a store that ignores
                // its condition would delete the new holder's lock).
                return left(NO, format!(
                    "{url}: not deleted: the lock is now held by {holder} under ETag {}, not {} (run sets3lock status again)",
                    current.as_str(),
                    etag.as_str()
                ));
            }
        }
        Ok(None) => {
            return done(
                "already_free",
                format!("{url}: no lock to delete (already free)"),
            );
        }
        Err(e) => {
            return failed(
                format!("{url}: not unlocked: reading the lock first failed: {e}"),
                e,
            );
        }
    }
    match client.send(url.key(), &Intent::DeleteIfMatch { etag: etag.clone() }) {
        Response::Deleted => {
            done("deleted", format!("{url}: deleted the lock with ETag {}", etag.as_str()))
        }
        Response::Absent => {
            done("already_free", format!("{url}: no lock to delete (already free)"))
        }
        // Some stores say 412 for a missing key too: look before saying who holds it.
        Response::Mismatch => match client.status(url.key()) {
            Ok(None) => {
                done("already_free", format!("{url}: no lock to delete (already free)"))
            }
            Ok(Some((current, holder))) => {
                left(NO, format!(
                    "{url}: not deleted: the lock is now held by {holder} under ETag {}, not {} (run sets3lock status again)",
                    current.as_str(),
                    etag.as_str()
                ))
            }
            Err(e) => {
                left(NO, format!("{url}: not deleted (ETag mismatch), and reading it failed: {e}"))
            }
        },
        Response::Refused(e) => failed(format!("{url}: {e}"), e),
        other => {
            left(CANNOT_LOCK, format!("{url}: the delete's outcome is unknown ({other:?}); run sets3lock status"))
        }
    }
}

/// Replaces the fenced record with ETag `etag` by a `free` record with the same token.
fn free(url: &LockUrl, client: &Client, etag: &ETag, fence: Fence) -> Unlocked {
    if fence.state == LockState::Free {
        return done(
            "already_free",
            format!("{url}: already free (fenced, last token {})", fence.token),
        );
    }
    let mut id = [0u8; 16];
    if let Err(e) = getrandom::fill(&mut id) {
        return left(
            CANNOT_LOCK,
            format!("{url}: no random source for the record's owner id: {e}"),
        );
    }
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0);
    let record = Record {
        owner: OwnerId::from_u128(u128::from_le_bytes(id)),
        seq: 1,
        lease: std::time::Duration::ZERO,
        host: "sets3lock unlock".into(),
        pid: std::process::id(),
        acquired_unix_ms: now_ms,
        written_unix_ms: now_ms,
        fence: Some(Fence {
            state: LockState::Free,
            token: fence.token,
        }),
        value: None,
        writer: None,
        cooldown: false,
        parked: false,
    };
    let put = Intent::PutIfMatch {
        etag: etag.clone(),
        body: record.encode(),
    };
    match client.send(url.key(), &put) {
        Response::Written { .. } => {
            done("freed", format!(
                "{url}: freed the lock with ETag {} (fenced: token {} kept, the next holder gets a larger one)",
                etag.as_str(),
                fence.token
            ))
        }
        Response::Absent => {
            done("already_free", format!("{url}: no lock to free (the object is gone)"))
        }
        Response::Mismatch => match client.status(url.key()) {
            Ok(Some((current, holder))) => {
                let who = match &holder {
                    h if h.is_free() => h.to_string(),
                    h => format!("held by {h}"),
                };
                left(NO, format!(
                    "{url}: not freed: the lock is now {who} under ETag {}, not {} (run sets3lock status again)",
                    current.as_str(),
                    etag.as_str()
                ))
            }
            Ok(None) => {
                done("already_free", format!("{url}: no lock to free (the object is gone)"))
            }
            Err(e) => {
                left(NO, format!("{url}: not freed (ETag mismatch), and reading it failed: {e}"))
            }
        },
        Response::Refused(e) => failed(format!("{url}: {e}"), e),
        other => {
            left(CANNOT_LOCK, format!("{url}: the write's outcome is unknown ({other:?}); run sets3lock status"))
        }
    }
}
