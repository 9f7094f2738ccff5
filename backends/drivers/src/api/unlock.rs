//! A force-unlock that removes only the version of the lock the operator saw, never a newer one.
//! (Terraform's force-unlock reads, then deletes unconditionally: a lock taken between the two
//! would be deleted. `DELETE If-Match` cannot do that.)
//!
//! A fenced lock is never deleted (its token would start again at 1): the unlock writes a `free`
//! record over the version the operator saw, with `If-Match`, keeping its token.

use crate::api::client::Client;
use crate::Error;
use sets3lock_proto::{
    ETag, Fence, Holder, Intent, LockState, OwnerId, Record, Response, Scheme, Setback,
};
use std::time::{Duration, Instant};

/// What [`Client::unlock`] came to.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unlocked {
    /// The lock object, with the ETag given, was deleted.
    Deleted,
    /// A fenced lock with the ETag given now has a `free` record, its token kept: the next
    /// holder gets a larger one.
    Freed {
        /// The lock's last token.
        token: u64,
    },
    /// There was nothing to remove: no lock object, or a fenced lock's `free` record (of any
    /// version).
    AlreadyFree,
    /// Left as it was: the lock is no longer the version given (a new holder, or a freed
    /// fenced lock). Nothing was sent that could change it.
    Changed {
        /// The version there now, and its record, when it could be read.
        now: Option<(ETag, Box<Holder>)>,
    },
}

impl Client {
    /// Removes the lock at `key` only if its ETag is still `etag` (what
    /// [`status`](Client::status) showed): `DELETE If-Match`, or for a fenced lock a `free`
    /// record written with `If-Match` (its token is kept). It reads the lock first, and never
    /// sends a delete for another version, even to a store whose DELETE ignores its condition.
    ///
    /// Fails with [`Error::BadETag`] for an ETag the store cannot have given, and with the
    /// store's error when it could not be asked; a request whose outcome stayed unknown is
    /// [`ErrorKind::Unreachable`](crate::ErrorKind::Unreachable) (read the lock again).
    ///
    /// ```no_run
    /// use sets3lock::{Client, ETag, Options, Scheme, Unlocked};
    /// let client = Client::new("s3://my-bucket", &Options::from_env(Scheme::S3)?)?;
    /// if let Some((etag, holder)) = client.status("locks/nightly")? {
    ///     println!("{holder}");
    ///     match client.unlock("locks/nightly", &etag)? {
    ///         Unlocked::Changed { .. } => println!("someone else holds it now: left alone"),
    ///         done => println!("{done:?}"),
    ///     }
    /// }
    /// # Ok::<(), sets3lock::Error>(())
    /// ```
    pub fn unlock(&self, key: &str, etag: &ETag) -> Result<Unlocked, Error> {
        if self.id().scheme() == Scheme::Gcs && !etag.as_str().bytes().all(|b| b.is_ascii_digit()) {
            return Err(Error::BadETag {
                etag: etag.as_str().to_owned(),
                why: "a gs:// lock's ETag is its generation, a decimal number",
            });
        }
        // Look first: a fenced lock is never deleted, whichever ETag was given (a store whose
        // DELETE ignores its condition, such as fake-gcs-server, would delete it anyway), and
        // a lock that cannot be read is not touched.
        let Some((current, holder)) = self.status(key)? else {
            return Ok(Unlocked::AlreadyFree);
        };
        // A fenced lock's `free` record, whichever version: nobody holds it.
        if holder.is_free() {
            return Ok(Unlocked::AlreadyFree);
        }
        if current != *etag {
            // Not the version the operator saw: no DELETE is sent (a store that ignores its
            // condition would delete the new holder's lock).
            return Ok(changed(current, holder));
        }
        match holder.fence() {
            Some(fence) => self.free(key, etag, fence),
            None => self.delete(key, etag),
        }
    }

    /// Removes the lock at `key` only if its Terraform lock ID is `id`: what
    /// `terraform force-unlock ID` means, without its race (Terraform reads, compares, then
    /// deletes with no condition, so a lock taken between the two is deleted). This reads the
    /// lock and sends `DELETE If-Match` for the version it read, only when that version's ID
    /// is `id`. A lock sets3lock holds in Terraform's format keeps its ID through renewals: a
    /// renewal between the read and the delete is read again (up to three times).
    ///
    /// [`Unlocked::Changed`] when the lock there has another ID, or none (then nothing was
    /// sent that could change it).
    ///
    /// ```no_run
    /// use sets3lock::{Client, Options, Scheme, Unlocked};
    /// let client = Client::new("s3://state-bucket", &Options::from_env(Scheme::S3)?)?;
    /// let id = "2b6c3a1e-8a5e-4c1d-8f0b-3c4d5e6f7a8b";
    /// match client.unlock_id("env/prod.tfstate.tflock", id)? {
    ///     Unlocked::Deleted => println!("unlocked"),
    ///     other => println!("left alone: {other:?}"),
    /// }
    /// # Ok::<(), sets3lock::Error>(())
    /// ```
    pub fn unlock_id(&self, key: &str, id: &str) -> Result<Unlocked, Error> {
        let mut last = Unlocked::Changed { now: None };
        for _ in 0..3 {
            let Some((etag, holder)) = self.status(key)? else {
                return Ok(Unlocked::AlreadyFree);
            };
            if holder.is_free() {
                return Ok(Unlocked::AlreadyFree);
            }
            if holder.terraform().map(|t| t.id.as_str()) != Some(id) || holder.fence().is_some() {
                return Ok(changed(etag, holder));
            }
            match self.delete(key, &etag)? {
                // Changed since the read: read again, in case only a renewal of the same hold
                // (the same ID) came between.
                Unlocked::Changed { now } => last = Unlocked::Changed { now },
                done => return Ok(done),
            }
        }
        Ok(last)
    }

    /// Removes the lock at `key` if its holder has stopped renewing it: reads it, waits one
    /// lease (the lease its record declares) while its ETag stays the same, then sends
    /// `DELETE If-Match` for that version, as a waiter takes over a stale lock. A resting
    /// (`cooldown`) or let-go (`parked`) record is waited out the same way. Returns as soon as
    /// the lock changes (then nothing was sent that could change it).
    ///
    /// Fails with [`Error::NoLease`] for a lock whose record declares no lease: Terraform's and
    /// OpenTofu's own locks, the Go sets3lock's, a record with lease 0, or a body of another
    /// tool. Those never go stale; [`unlock`](Client::unlock) (by ETag) or
    /// [`unlock_id`](Client::unlock_id) remove them.
    ///
    /// `progress` is called once with the lease about to be waited, before the wait.
    ///
    /// ```no_run
    /// use sets3lock::{Client, Options, Scheme, Unlocked};
    /// let client = Client::new("s3://state-bucket", &Options::from_env(Scheme::S3)?)?;
    /// let unlocked = client.unlock_if_stale("env/prod.tfstate.tflock", |lease| {
    ///     eprintln!("waiting {lease:?} for a renewal");
    /// })?;
    /// println!("{unlocked:?}");
    /// # Ok::<(), sets3lock::Error>(())
    /// ```
    pub fn unlock_if_stale(
        &self,
        key: &str,
        progress: impl FnOnce(Duration),
    ) -> Result<Unlocked, Error> {
        let Some((etag, holder)) = self.status(key)? else {
            return Ok(Unlocked::AlreadyFree);
        };
        if holder.is_free() {
            return Ok(Unlocked::AlreadyFree);
        }
        let lease = match holder.lease() {
            Some(lease) if !lease.is_zero() => lease,
            _ => {
                return Err(Error::NoLease {
                    holder: Box::new(holder),
                    etag,
                })
            }
        };
        // A full lease on our clock from the read's reply, as a waiter counts before taking
        // over: the holder stopped trusting its last write before that.
        let seen = Instant::now();
        progress(lease);
        // Reads meanwhile end the wait early when the lock changes: a tenth of the lease apart,
        // between 1 s and 30 s (360 GETs at most for an hour's lease). A read that fails is
        // not an answer, and the wait goes on (for at most a second lease).
        // The delete goes out only right after a read that showed the same version, as
        // `unlock` does: a store whose DELETE ignores If-Match would delete a newer one.
        let every = (lease / 10).clamp(Duration::from_secs(1), Duration::from_secs(30));
        let mut seen_unchanged = false;
        while !(seen_unchanged && seen.elapsed() >= lease) {
            // Up to the lease, in steps; past it (a read failed), a second between tries.
            let left = lease.saturating_sub(seen.elapsed());
            let pause = if left.is_zero() {
                Duration::from_secs(1)
            } else {
                left.min(every)
            };
            std::thread::sleep(pause);
            seen_unchanged = match self.status(key) {
                Ok(None) => return Ok(Unlocked::AlreadyFree),
                Ok(Some((now, holder))) if now != etag => return Ok(changed(now, holder)),
                Ok(Some(_)) => true,
                // Not an answer: the wait goes on, or past the lease, the read is made again.
                Err(e) if seen.elapsed() >= lease + lease => return Err(e),
                Err(_) => false,
            };
        }
        match holder.fence() {
            Some(fence) => self.free(key, &etag, fence),
            None => self.delete(key, &etag),
        }
    }

    fn delete(&self, key: &str, etag: &ETag) -> Result<Unlocked, Error> {
        match self.send(key, &Intent::DeleteIfMatch { etag: etag.clone() }) {
            Response::Deleted => Ok(Unlocked::Deleted),
            other => self.after_write(key, other),
        }
    }

    /// Replaces the fenced record with ETag `etag` by a `free` record with the same token.
    fn free(&self, key: &str, etag: &ETag, fence: Fence) -> Result<Unlocked, Error> {
        let mut id = [0u8; 16];
        getrandom::fill(&mut id).map_err(Error::no_randomness)?;
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
            terraform: None,
        };
        let put = Intent::PutIfMatch {
            etag: etag.clone(),
            body: record.encode(),
        };
        match self.send(key, &put) {
            Response::Written { .. } => Ok(Unlocked::Freed { token: fence.token }),
            other => self.after_write(key, other),
        }
    }

    /// What a conditional write or delete that did not succeed came to: the lock was gone,
    /// or changed (what is there now, if it can be read), or the store refused, or the outcome
    /// is unknown.
    fn after_write(&self, key: &str, reply: Response) -> Result<Unlocked, Error> {
        match reply {
            Response::Absent => Ok(Unlocked::AlreadyFree),
            // Some stores say 412 for a missing key too: look before saying who holds it.
            Response::Mismatch => Ok(match self.status(key) {
                Ok(None) => Unlocked::AlreadyFree,
                Ok(Some((etag, holder))) => changed(etag, holder),
                Err(_) => Unlocked::Changed { now: None },
            }),
            Response::Refused(e) => Err(Error::Store(e)),
            Response::Ambiguous(why) => Err(unknown(Setback::Ambiguous(why))),
            other => Err(unknown(Setback::Ambiguous(
                sets3lock_proto::Ambiguity::Unexpected {
                    reply: other.name(),
                    request: sets3lock_proto::IntentKind::DeleteIfMatch,
                },
            ))),
        }
    }
}

fn changed(etag: ETag, holder: Holder) -> Unlocked {
    Unlocked::Changed {
        now: Some((etag, Box::new(holder))),
    }
}

/// A request whose outcome stayed unknown.
fn unknown(last: Setback) -> Error {
    Error::Store(sets3lock_proto::Error::GaveUp {
        attempts: 1,
        last: Box::new(last),
    })
}
