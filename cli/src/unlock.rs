//! `sets3lock unlock --etag E`: a force-unlock that deletes only the lock the operator saw.
//! (Terraform's force-unlock reads, then deletes unconditionally: a newer lock taken between
//! the two would be deleted. `DELETE If-Match` cannot do that.)

//!
//! A fenced lock is never deleted (its token would start again at 1): unlock writes a `free`
//! record over the version the operator saw, with `If-Match`, keeping its token.

use crate::exit_codes::{CANNOT_LOCK, NO, OK};
use sets3lock::{ETag, Fence, Intent, LockState, LockUrl, OwnerId, Record, Response};
use sets3lock_s3::{Client, S3Options};

pub(crate) fn unlock(url: &LockUrl, options: &S3Options, etag: &ETag) -> u8 {
    if url.scheme() == sets3lock::Scheme::Gcs && !etag.as_str().bytes().all(|b| b.is_ascii_digit())
    {
        say!(
            "{url}: --etag {}: a gs:// lock's ETag is its generation, a decimal number (sets3lock status shows it)",
            etag.as_str()
        );
        return crate::exit_codes::USAGE;
    }
    let client = match Client::in_store(url.scheme(), url.bucket(), options) {
        Ok(c) => c,
        Err(e) => {
            say!("{url}: {e}");
            return CANNOT_LOCK;
        }
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
                say!(
                    "{url}: not deleted: the fenced lock is now held by {holder} under ETag {}, not {} (run sets3lock status again)",
                    current.as_str(),
                    etag.as_str()
                );
                return NO;
            }
            if current != *etag {
                // Not the lock the operator saw: never sent a DELETE (a store that ignores
                // its condition would delete the new holder's lock).
                say!(
                    "{url}: not deleted: the lock is now held by {holder} under ETag {}, not {} (run sets3lock status again)",
                    current.as_str(),
                    etag.as_str()
                );
                return NO;
            }
        }
        Ok(None) => {
            out!("{url}: no lock to delete (already free)");
            return OK;
        }
        Err(e) => {
            say!("{url}: not unlocked: reading the lock first failed: {e}");
            return CANNOT_LOCK;
        }
    }
    match client.send(url.key(), &Intent::DeleteIfMatch { etag: etag.clone() }) {
        Response::Deleted => {
            out!("{url}: deleted the lock with ETag {}", etag.as_str());
            OK
        }
        Response::Absent => {
            out!("{url}: no lock to delete (already free)");
            OK
        }
        // Some stores say 412 for a missing key too: look before saying who holds it.
        Response::Mismatch => match client.status(url.key()) {
            Ok(None) => {
                out!("{url}: no lock to delete (already free)");
                OK
            }
            Ok(Some((current, holder))) => {
                say!(
                    "{url}: not deleted: the lock is now held by {holder} under ETag {}, not {} (run sets3lock status again)",
                    current.as_str(),
                    etag.as_str()
                );
                NO
            }
            Err(e) => {
                say!("{url}: not deleted (ETag mismatch), and reading it failed: {e}");
                NO
            }
        },
        Response::Refused(e) => {
            say!("{url}: {e}");
            CANNOT_LOCK
        }
        other => {
            say!("{url}: the delete's outcome is unknown ({other:?}); run sets3lock status");
            CANNOT_LOCK
        }
    }
}

/// Replaces the fenced record with ETag `etag` by a `free` record with the same token.
fn free(url: &LockUrl, client: &Client, etag: &ETag, fence: Fence) -> u8 {
    if fence.state == LockState::Free {
        out!("{url}: already free (fenced, last token {})", fence.token);
        return OK;
    }
    let mut id = [0u8; 16];
    if let Err(e) = getrandom::fill(&mut id) {
        say!("{url}: no random source for the record's owner id: {e}");
        return CANNOT_LOCK;
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
    };
    let put = Intent::PutIfMatch {
        etag: etag.clone(),
        body: record.encode(),
    };
    match client.send(url.key(), &put) {
        Response::Written { .. } => {
            out!(
                "{url}: freed the lock with ETag {} (fenced: token {} kept, the next holder gets a larger one)",
                etag.as_str(),
                fence.token
            );
            OK
        }
        Response::Absent => {
            out!("{url}: no lock to free (the object is gone)");
            OK
        }
        Response::Mismatch => match client.status(url.key()) {
            Ok(Some((current, holder))) => {
                let who = match &holder {
                    h if h.is_free() => h.to_string(),
                    h => format!("held by {h}"),
                };
                say!(
                    "{url}: not freed: the lock is now {who} under ETag {}, not {} (run sets3lock status again)",
                    current.as_str(),
                    etag.as_str()
                );
                NO
            }
            Ok(None) => {
                out!("{url}: no lock to free (the object is gone)");
                OK
            }
            Err(e) => {
                say!("{url}: not freed (ETag mismatch), and reading it failed: {e}");
                NO
            }
        },
        Response::Refused(e) => {
            say!("{url}: {e}");
            CANNOT_LOCK
        }
        other => {
            say!("{url}: the write's outcome is unknown ({other:?}); run sets3lock status");
            CANNOT_LOCK
        }
    }
}
