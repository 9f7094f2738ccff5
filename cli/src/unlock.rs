//! `sets3lock unlock --etag E`: a force-unlock that deletes only the lock the operator saw.
//! (Terraform's force-unlock reads, then deletes unconditionally: a newer lock taken between
//! the two would be deleted. `DELETE If-Match` cannot do that.)

use crate::exit_codes::{CANNOT_LOCK, NO, OK};
use sets3lock::{ETag, Intent, LockUrl, Response};
use sets3lock_s3::{Client, S3Options};

pub(crate) fn unlock(url: &LockUrl, options: &S3Options, etag: &ETag) -> u8 {
    let client = match Client::new(url.bucket(), options) {
        Ok(c) => c,
        Err(e) => {
            say!("{url}: {e}");
            return CANNOT_LOCK;
        }
    };
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
