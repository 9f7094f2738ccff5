//! The store check: before the first lock on an endpoint and bucket, make sure the store
//! honours the conditional requests a lock stands on. A store that ignores them (Garage,
//! s3rver) would let every client "acquire" at once, silently. The probes are intents sent
//! through the store seam, so the same check runs on every store.
//!
//! Five requests on a throw-away key beside the lock's key (so a policy on the lock's prefix
//! suffices), and one to remove it:
//! 1. `PUT If-None-Match: *` on the fresh key (written);
//! 2. the same again: it must be refused (412), or creates are not conditional;
//! 3. `PUT If-Match` with a wrong ETag: refused, or replacements are not conditional;
//! 4. `PUT If-Match` with the ETag of 1 and a new body: written, with a new ETag (or renewals
//!    would always fail, or look like no change);
//! 5. `DELETE If-Match` with a wrong ETag: refused (conditional deletes work), applied (the
//!    store ignores the condition: MinIO CE) or refused as unsupported (501: LocalStack; or
//!    403 without s3:DeleteObject). Presence mode needs the first; fenced mode sends no
//!    DELETE and works with all three.
//!
//! A passed check is remembered for the process, and with [`StoreCheck::Cached`] for a day in
//! a file, so that a command run every minute pays for it once a day.

use crate::driver::store::Sender;
use crate::Error;
use bytes::Bytes;
use sets3lock_proto::{ConditionalDelete, ETag, Intent, Response};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// How a [`Locker`](crate::Locker) makes sure its store honours conditional requests before
/// its first lock.
///
/// ```
/// use sets3lock::{Options, StoreCheck};
/// let mut options = Options::default();
/// options.store_check = StoreCheck::Off;
/// assert_eq!(Options::default().store_check, StoreCheck::Once);
/// # let _ = options;
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreCheck {
    /// No check: the store is known to honour conditional requests.
    Off,
    /// Check once per process for each endpoint and bucket.
    #[default]
    Once,
    /// Check once a day for each endpoint and bucket, remembering a passed check in this
    /// directory (the command uses `$XDG_CACHE_HOME/sets3lock`, or `~/.cache/sets3lock`).
    Cached(PathBuf),
}

impl StoreCheck {
    /// A check remembered a day in the user's cache, as the command and the Python package
    /// keep it: `Cached($XDG_CACHE_HOME/sets3lock)`, or `Cached(~/.cache/sets3lock)`; without
    /// either variable, [`Once`](StoreCheck::Once).
    pub fn in_user_cache() -> StoreCheck {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let base = var("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".cache")));
        match base {
            Some(dir) => StoreCheck::Cached(dir.join("sets3lock")),
            None => StoreCheck::Once,
        }
    }
}

/// How long a passed check is trusted with [`StoreCheck::Cached`].
const CACHE_FOR: Duration = Duration::from_secs(24 * 3600);

/// Passed checks in this process, by endpoint and bucket.
static PASSED: Mutex<Option<HashMap<String, ConditionalDelete>>> = Mutex::new(None);

/// Runs the check for the sender's store (beside `key`) as `how` says (unless this process or the cache has passed it
/// already), and refuses a store that cannot hold this lock: one that ignores condition
/// headers, or, for a presence-mode lock (`fenced` false), one whose `DELETE If-Match` does
/// not work. A check that cannot finish (timeouts, 5xx) is not held against the store: the
/// lock goes ahead, and the next lock checks again.
///
/// Each request ends at the sender's time limit, and no probe is sent past its deadline; an
/// inconclusive check that ran into the deadline ends the acquisition ([`Error::TimedOut`]):
/// nothing was locked.
pub(crate) async fn ensure(
    how: &StoreCheck,
    key: &str,
    link: &Sender<'_>,
    fenced: bool,
) -> Result<(), Error> {
    if *how == StoreCheck::Off {
        return Ok(());
    }
    let store = link.store.id();
    let endpoint = store.endpoint().to_owned();
    let bucket = store.bucket().to_owned();
    // A verdict holds for the credentials it was found with: another key, SAS or role may
    // not be allowed to do what the check did (a SAS without delete permission, say).
    let who = link.store.identity().unwrap_or_default();
    let id = format!("{}|{endpoint}|{bucket}|{who}", store.scheme());
    let verdict = match remembered(how, &id) {
        Some(v) => v,
        None => match probe(key, link).await.inspect(|found| {
            if let Some(o) = link.observer() {
                o.see(crate::Observation::StoreChecked(*found));
            }
        })? {
            Some(v) => {
                remember(how, &id, v);
                v
            }
            None if link.past_deadline() => return Err(Error::TimedOut { holder: None }),
            None => return Ok(()),
        },
    };
    if !fenced && !verdict.is_safe_for_presence_mode() {
        return Err(Error::ConditionalDeleteUnsafe {
            endpoint,
            bucket: named(store),
            conditional_delete: verdict,
        });
    }
    Ok(())
}

/// The bucket or container, as the user calls it: `bucket NAME` (S3, GCS), `container NAME`
/// (Azure).
fn named(store: &crate::StoreId) -> String {
    match store.scheme() {
        sets3lock_proto::Scheme::Azure => format!("container {}", store.bucket()),
        _ => format!("bucket {}", store.bucket()),
    }
}

fn passed() -> std::sync::MutexGuard<'static, Option<HashMap<String, ConditionalDelete>>> {
    // Poisoned only by a panic while inserting: the map is still a map.
    PASSED.lock().unwrap_or_else(|e| e.into_inner())
}

fn remembered(how: &StoreCheck, id: &str) -> Option<ConditionalDelete> {
    if let Some(v) = passed().as_ref().and_then(|m| m.get(id).copied()) {
        return Some(v);
    }
    let StoreCheck::Cached(dir) = how else {
        return None;
    };
    let v = read_cache(&cache_file(dir, id), id)?;
    passed()
        .get_or_insert_with(HashMap::new)
        .insert(id.to_owned(), v);
    Some(v)
}

fn remember(how: &StoreCheck, id: &str, v: ConditionalDelete) {
    passed()
        .get_or_insert_with(HashMap::new)
        .insert(id.to_owned(), v);
    if let StoreCheck::Cached(dir) = how {
        // A cache that cannot be written only means checking again next time.
        let _ = write_cache(dir, &cache_file(dir, id), id, v);
    }
}

/// One file per endpoint and bucket, named by a stable hash of both.
fn cache_file(dir: &Path, id: &str) -> PathBuf {
    // FNV-1a: stable across Rust versions, unlike the standard hasher.
    let hash = id.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    dir.join(format!("store-check-{hash:016x}"))
}

fn verdict_name(v: ConditionalDelete) -> &'static str {
    match v {
        ConditionalDelete::Honored => "honored",
        ConditionalDelete::IgnoresIfMatch => "ignores-if-match",
        ConditionalDelete::NotImplemented => "not-implemented",
    }
}

fn read_cache(file: &Path, id: &str) -> Option<ConditionalDelete> {
    let age = std::fs::metadata(file)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())?;
    if age > CACHE_FOR {
        return None;
    }
    let text = std::fs::read_to_string(file).ok()?;
    let mut lines = text.lines();
    if lines.next()? != "sets3lock store check 1" || lines.next()? != id {
        return None;
    }
    match lines.next()? {
        "honored" => Some(ConditionalDelete::Honored),
        "ignores-if-match" => Some(ConditionalDelete::IgnoresIfMatch),
        "not-implemented" => Some(ConditionalDelete::NotImplemented),
        _ => None,
    }
}

fn write_cache(dir: &Path, file: &Path, id: &str, v: ConditionalDelete) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let text = format!("sets3lock store check 1\n{id}\n{}\n", verdict_name(v));
    // Write aside, then rename: a reader never sees half a file.
    let tmp = file.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, file)
}

/// The five probes and the clean-up. `Ok(None)`: inconclusive (no reply, 5xx, 409).
async fn probe(key: &str, link: &Sender<'_>) -> Result<Option<ConditionalDelete>, Error> {
    let mut nonce = [0u8; 8];
    getrandom::fill(&mut nonce).map_err(Error::no_randomness)?;
    let key = format!(
        "{key}.sets3lock-store-check-{:016x}",
        u64::from_le_bytes(nonce)
    );
    let probe = Probe { link, key: &key };
    let result = probe.run().await;
    // Past the acquisition's deadline the removal would hold the caller up longer still; a
    // probe object left behind is a few bytes beside the lock's key.
    if !link.past_deadline() {
        probe.remove().await;
    }
    result
}

/// How many times the store check tries to remove its probe object.
const REMOVALS: usize = 3;

struct Probe<'a> {
    link: &'a Sender<'a>,
    key: &'a str,
}

impl Probe<'_> {
    async fn run(&self) -> Result<Option<ConditionalDelete>, Error> {
        let body = |n: u8| Bytes::from(format!("{{\"sets3lock-store-check\":{n}}}"));
        // A version no store gave: opaque to S3 and Azure, and to GCS a generation that is
        // neither 0 (which would mean "must not exist") nor one it hands out.
        let wrong = ETag::parse("1000000000000000001").expect("a valid ETag");
        let first = match self.send(&Intent::PutIfNoneMatch { body: body(1) }).await? {
            Some(Response::Written { etag }) => etag,
            _ => return Ok(None),
        };
        match self.send(&Intent::PutIfNoneMatch { body: body(2) }).await? {
            Some(Response::Exists) => {}
            Some(Response::Written { .. }) => {
                return Err(
                    self.unusable("ignores If-None-Match: * (a second create overwrote the first)")
                )
            }
            _ => return Ok(None),
        }
        let replace = Intent::PutIfMatch {
            etag: wrong.clone(),
            body: body(3),
        };
        match self.send(&replace).await? {
            Some(Response::Mismatch) => {}
            Some(Response::Written { .. }) => {
                return Err(self
                    .unusable("ignores If-Match (a PUT with a wrong ETag overwrote the object)"))
            }
            _ => return Ok(None),
        }
        // Renewals and grants need If-Match to accept the ETag the store gave, and a new body
        // to get a new ETag (or a waiter would never see a renewal).
        let renew = Intent::PutIfMatch {
            etag: first.clone(),
            body: body(4),
        };
        match self.send(&renew).await? {
            Some(Response::Written { etag }) if etag != first => {}
            Some(Response::Written { .. }) => {
                return Err(self.unusable("gives the same ETag to different bodies (renewals would look like no change)"))
            }
            Some(Response::Mismatch | Response::Absent) => {
                return Err(self.unusable("refuses If-Match on the ETag it reports (weak ETags, or a proxy that rewrites them): renewals would always fail"))
            }
            _ => return Ok(None),
        }
        // Anything but a refusal of the wrong ETag makes DELETE If-Match unusable for presence
        // mode, which fenced mode does not need: a verdict, not an error.
        Ok(
            match self
                .send_raw(&Intent::DeleteIfMatch { etag: wrong })
                .await?
            {
                Response::Mismatch => Some(ConditionalDelete::Honored),
                Response::Deleted => Some(ConditionalDelete::IgnoresIfMatch),
                Response::Refused(e @ sets3lock_proto::Error::Clock { .. }) => {
                    return Err(Error::Store(e))
                }
                Response::Refused(_) => Some(ConditionalDelete::NotImplemented),
                _ => None,
            },
        )
    }

    /// Sends one probe: `None` when the answer says nothing (no reply, 5xx, 409; or 403: a
    /// policy may cover only the lock's own key, not the probe beside it, and if the
    /// credentials are wrong the lock's own request says so next). Other refusals (404
    /// NoSuchBucket, 501, ...) are the lock's error too.
    async fn send(&self, intent: &Intent) -> Result<Option<Response>, Error> {
        match self.send_raw(intent).await? {
            Response::Refused(sets3lock_proto::Error::Refused { status: 403, .. }) => Ok(None),
            Response::Refused(e) => Err(Error::Store(e)),
            Response::Ambiguous(_) | Response::Conflict { .. } => Ok(None),
            other => Ok(Some(other)),
        }
    }

    /// Sends one probe: the reply as the store reads it. Past the deadline nothing is sent,
    /// and the answer is "no reply".
    async fn send_raw(&self, intent: &Intent) -> Result<Response, Error> {
        if self.link.past_deadline() {
            return Ok(Response::Ambiguous(sets3lock_proto::Ambiguity::NotSent {
                detail: "the acquisition's deadline has passed".into(),
            }));
        }
        Ok(self.link.send(self.key, intent).await)
    }

    /// Removes the probe object with a plain DELETE (the one request that works on every
    /// store, whatever it does with `If-Match`), reading back that it is gone, [`REMOVALS`]
    /// times at most while the deadline allows; a probe that stays is said
    /// ([`Observation::ProbeLeftBehind`](crate::Observation::ProbeLeftBehind)).
    async fn remove(&self) {
        // Said only when a read found it still there: with a store that does not answer at
        // all, the probe was most likely never written.
        let mut seen = false;
        for _ in 0..REMOVALS {
            if self.link.past_deadline() {
                break;
            }
            self.link.store.discard(self.key, self.link.limit()).await;
            let read = Intent::Get {
                if_none_match: None,
            };
            match self.link.send(self.key, &read).await {
                Response::Absent => return,
                Response::Object { .. } => seen = true,
                _ => {}
            }
        }
        if !seen {
            return;
        }
        if let Some(o) = self.link.observer() {
            o.see(crate::Observation::ProbeLeftBehind { key: self.key });
        }
    }

    fn unusable(&self, what: &'static str) -> Error {
        let store = self.link.store.id();
        Error::StoreIgnoresConditions {
            endpoint: store.endpoint().to_owned(),
            bucket: named(store),
            what,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cached_verdict_is_read_back_for_its_own_endpoint_and_bucket_only() {
        let dir =
            std::env::temp_dir().join(format!("sets3lock-store-check-test-{}", std::process::id()));
        let id = "http://127.0.0.1:1/|bucket";
        let file = cache_file(&dir, id);
        assert_eq!(read_cache(&file, id), None);
        for v in [
            ConditionalDelete::Honored,
            ConditionalDelete::IgnoresIfMatch,
            ConditionalDelete::NotImplemented,
        ] {
            write_cache(&dir, &file, id, v).expect("writable temp dir");
            assert_eq!(read_cache(&file, id), Some(v));
        }
        // Another id that would land in the same file (it cannot, but a hand-edited or
        // truncated file must not be trusted either).
        assert_eq!(read_cache(&file, "http://other/|bucket"), None);
        std::fs::write(&file, "sets3lock store check 1\n").expect("write");
        assert_eq!(read_cache(&file, id), None);
        assert_ne!(
            cache_file(&dir, id),
            cache_file(&dir, "http://127.0.0.1:1/|other")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
