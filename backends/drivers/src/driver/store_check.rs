//! The store check: before the first lock on an endpoint and bucket, make sure the store
//! honours the conditional requests a lock stands on. A store that ignores them (Garage,
//! s3rver) would let every client "acquire" at once, silently. The probes are intents sent
//! through the store seam, so the same check runs on every store.
//!
//! First, before anything is written, whether these credentials may delete beside the lock:
//! `DELETE If-Match` on a fresh key where nothing is (so nothing is deleted, whatever the
//! store does with the condition). A `403` there means they may not, if they may read that
//! key (it is absent) or, where reads of missing keys are refused too (S3 without
//! `s3:ListBucket`), write the kept probe below. A presence-mode lock, which releases by
//! deleting, is then refused in one line that names the permission. Nothing is left behind,
//! but for that kept probe where it was needed to tell (it stays, and later checks use it
//! again). Fenced mode never deletes, so it goes on, on a probe kept under one name per lock
//! (`KEY.sets3lock-store-check`) that every such check uses again, since these credentials
//! cannot remove it.
//!
//! Then five requests on a throw-away key beside the lock's key (so a policy on the lock's
//! prefix suffices), and one to remove it:
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
use crate::{Error, StoreCheckError};
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

/// What a check found, as it is remembered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    /// Conditional writes are honoured; this is what `DELETE If-Match` does.
    Honours(ConditionalDelete),
    /// Conditional writes are honoured, and these credentials may not delete: enough for
    /// fenced mode, which never does.
    MayNotDelete,
}

impl Verdict {
    /// As an observer is told: credentials that may not delete see `DELETE If-Match` refused.
    fn seen(self) -> ConditionalDelete {
        match self {
            Verdict::Honours(d) => d,
            Verdict::MayNotDelete => ConditionalDelete::NotImplemented,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Verdict::Honours(ConditionalDelete::Honored) => "honored",
            Verdict::Honours(ConditionalDelete::IgnoresIfMatch) => "ignores-if-match",
            Verdict::Honours(ConditionalDelete::NotImplemented) => "not-implemented",
            Verdict::MayNotDelete => "may-not-delete",
        }
    }

    fn named(name: &str) -> Option<Verdict> {
        Some(match name {
            "honored" => Verdict::Honours(ConditionalDelete::Honored),
            "ignores-if-match" => Verdict::Honours(ConditionalDelete::IgnoresIfMatch),
            "not-implemented" => Verdict::Honours(ConditionalDelete::NotImplemented),
            "may-not-delete" => Verdict::MayNotDelete,
            _ => return None,
        })
    }
}

/// Passed checks in this process, by endpoint, bucket and credentials.
static PASSED: Mutex<Option<HashMap<String, Verdict>>> = Mutex::new(None);

/// Runs the check for the sender's store (beside `key`) as `how` says (unless this process or
/// the cache has passed it already), and refuses a store that cannot hold this lock: one that
/// ignores condition headers, or, for a presence-mode lock (`fenced` false), one whose
/// `DELETE If-Match` does not work or credentials that may not delete. A check that cannot
/// finish (timeouts, 5xx) is not held against the store: the lock goes ahead, and the next
/// lock checks again.
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
    // Credentials found unable to delete are asked again by a presence-mode lock: a
    // permission granted since is seen at once, and one still missing costs two requests.
    let known = remembered(how, &id).filter(|v| fenced || *v != Verdict::MayNotDelete);
    let verdict = match known {
        Some(v) => v,
        None => match probe(key, link, fenced).await.inspect(|found| {
            if let Some(o) = link.observer() {
                o.see(crate::Observation::StoreChecked(found.map(Verdict::seen)));
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
    match verdict {
        Verdict::Honours(d) if !fenced && !d.is_safe_for_presence_mode() => {
            Err(StoreCheckError::DeleteUnsafe {
                endpoint,
                bucket: named(store),
                conditional_delete: d,
            }
            .into())
        }
        _ => Ok(()),
    }
}

/// The bucket or container, as the user calls it: `bucket NAME` (S3, GCS), `container NAME`
/// (Azure).
fn named(store: &crate::StoreId) -> String {
    match store.scheme() {
        sets3lock_proto::Scheme::Azure => format!("container {}", store.bucket()),
        _ => format!("bucket {}", store.bucket()),
    }
}

fn passed() -> std::sync::MutexGuard<'static, Option<HashMap<String, Verdict>>> {
    // Poisoned only by a panic while inserting: the map is still a map.
    PASSED.lock().unwrap_or_else(|e| e.into_inner())
}

fn remembered(how: &StoreCheck, id: &str) -> Option<Verdict> {
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

fn remember(how: &StoreCheck, id: &str, v: Verdict) {
    passed()
        .get_or_insert_with(HashMap::new)
        .insert(id.to_owned(), v);
    if let StoreCheck::Cached(dir) = how {
        // A cache that cannot be written only means checking again next time.
        let _ = write_cache(dir, &cache_file(dir, id), id, v);
    }
}

/// One file per endpoint, bucket and credentials, named by a stable hash of them.
fn cache_file(dir: &Path, id: &str) -> PathBuf {
    // FNV-1a: stable across Rust versions, unlike the standard hasher.
    let hash = id.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    dir.join(format!("store-check-{hash:016x}"))
}

fn read_cache(file: &Path, id: &str) -> Option<Verdict> {
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
    Verdict::named(lines.next()?)
}

fn write_cache(dir: &Path, file: &Path, id: &str, v: Verdict) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let text = format!("sets3lock store check 1\n{id}\n{}\n", v.name());
    // Write aside, then rename: a reader never sees half a file.
    let tmp = file.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, file)
}

/// The check. `Ok(None)`: inconclusive (no reply, 5xx, 409).
async fn probe(key: &str, link: &Sender<'_>, fenced: bool) -> Result<Option<Verdict>, Error> {
    let mut nonce = [0u8; 8];
    getrandom::fill(&mut nonce).map_err(Error::no_randomness)?;
    let nonce = u64::from_le_bytes(nonce);
    let fresh = format!("{key}.sets3lock-store-check-{nonce:016x}");
    let kept = format!("{key}.sets3lock-store-check");
    let probe = Probe {
        link,
        key: &fresh,
        nonce,
    };
    let kept = Probe {
        link,
        key: &kept,
        nonce,
    };
    if let Some(answer) = probe.may_not_delete(&kept).await? {
        if !fenced {
            let store = link.store.id();
            return Err(StoreCheckError::MayNotDelete {
                scheme: store.scheme(),
                endpoint: store.endpoint().to_owned(),
                bucket: named(store),
                answer,
            }
            .into());
        }
        return Ok(kept.run_kept().await?.map(|()| Verdict::MayNotDelete));
    }
    let result = probe.run().await;
    // Past the acquisition's deadline the removal would hold the caller up longer still; a
    // probe object left behind is a few bytes beside the lock's key.
    if !link.past_deadline() {
        probe.remove().await;
    }
    Ok(result?.map(Verdict::Honours))
}

/// How many times the store check tries to remove its probe object.
const REMOVALS: usize = 3;

/// A version no store gave: opaque to S3 and Azure, and to GCS a generation that is neither 0
/// (which would mean "must not exist") nor one it hands out.
fn wrong_etag() -> ETag {
    ETag::parse("1000000000000000001").expect("a valid ETag")
}

struct Probe<'a> {
    link: &'a Sender<'a>,
    key: &'a str,
    /// This check's own: in every body, so that no two checks write the same bytes (on a
    /// kept probe, a body written again would keep its ETag).
    nonce: u64,
}

impl Probe<'_> {
    fn body(&self, n: u8) -> Bytes {
        Bytes::from(format!(
            "{{\"sets3lock-store-check\":{n},\"check\":\"{:016x}\"}}",
            self.nonce
        ))
    }

    /// Whether these credentials may not delete here: `DELETE If-Match` on this key, where
    /// nothing is yet (so nothing is deleted, whatever the store does with the condition),
    /// refused with 403, where they may read (the key is absent) or write (the `kept` probe
    /// is created, or is there). `Some`: the refusal, as the store said it. A policy on the
    /// lock's own key alone refuses everything beside it: that says nothing about deleting,
    /// and the lock's own requests will say what they may do.
    async fn may_not_delete(&self, kept: &Probe<'_>) -> Result<Option<String>, Error> {
        let answer = match self
            .send_raw(&Intent::DeleteIfMatch { etag: wrong_etag() })
            .await?
        {
            Response::Refused(sets3lock_proto::Error::Refused {
                status: 403, code, ..
            }) => match code {
                Some(code) => format!("HTTP 403 {code}"),
                None => "HTTP 403".to_owned(),
            },
            _ => return Ok(None),
        };
        let read = Intent::Get {
            if_none_match: None,
        };
        Ok(match self.send_raw(&read).await? {
            Response::Absent => Some(answer),
            // S3 refuses a read of a missing key without s3:ListBucket: whether they may
            // write is asked on the kept probe, so that nothing new is left behind.
            Response::Refused(sets3lock_proto::Error::Refused { status: 403, .. }) => {
                let create = Intent::PutIfNoneMatch { body: kept.body(1) };
                match kept.send_raw(&create).await? {
                    Response::Written { .. } | Response::Exists => Some(answer),
                    _ => None,
                }
            }
            _ => None,
        })
    }

    async fn run(&self) -> Result<Option<ConditionalDelete>, Error> {
        let wrong = wrong_etag();
        let first = match self
            .send(&Intent::PutIfNoneMatch { body: self.body(1) })
            .await?
        {
            Some(Response::Written { etag }) => etag,
            _ => return Ok(None),
        };
        if !self.second_create_refused().await? {
            return Ok(None);
        }
        if !self.wrong_etag_refused().await? {
            return Ok(None);
        }
        match self.renew(&first).await? {
            Some(Response::Mismatch | Response::Absent) => {
                return Err(self.unusable("refuses If-Match on the ETag it reports (weak ETags, or a proxy that rewrites them): renewals would always fail"))
            }
            Some(Response::Written { .. }) => {}
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

    /// The write probes on a probe object kept between checks (these credentials cannot
    /// remove it), which other checks may be using at the same moment: an answer another
    /// check could have caused is inconclusive, never held against the store. `Some(())`:
    /// conditional writes are honoured.
    async fn run_kept(&self) -> Result<Option<()>, Error> {
        let create = Intent::PutIfNoneMatch { body: self.body(1) };
        let current = match self.send(&create).await? {
            Some(Response::Written { etag }) => {
                if !self.second_create_refused().await? {
                    return Ok(None);
                }
                etag
            }
            // Left by an earlier check, and refused as a create must be: its ETag is read.
            Some(Response::Exists) => {
                let read = Intent::Get {
                    if_none_match: None,
                };
                match self.send(&read).await? {
                    Some(Response::Object { etag, .. }) => etag,
                    _ => return Ok(None),
                }
            }
            _ => return Ok(None),
        };
        if !self.wrong_etag_refused().await? {
            return Ok(None);
        }
        // Refused, it may be another check that replaced it first.
        Ok(match self.renew(&current).await? {
            Some(Response::Written { .. }) => Some(()),
            _ => None,
        })
    }

    /// Probe 2: a second create of the object just written must be refused. `false`:
    /// inconclusive.
    async fn second_create_refused(&self) -> Result<bool, Error> {
        let create = Intent::PutIfNoneMatch { body: self.body(2) };
        match self.send(&create).await? {
            Some(Response::Exists) => Ok(true),
            Some(Response::Written { .. }) => {
                Err(self.unusable("ignores If-None-Match: * (a second create overwrote the first)"))
            }
            _ => Ok(false),
        }
    }

    /// Probe 3: a replacement naming a version no store gave must be refused. `false`:
    /// inconclusive.
    async fn wrong_etag_refused(&self) -> Result<bool, Error> {
        let replace = Intent::PutIfMatch {
            etag: wrong_etag(),
            body: self.body(3),
        };
        match self.send(&replace).await? {
            Some(Response::Mismatch) => Ok(true),
            Some(Response::Written { .. }) => {
                Err(self
                    .unusable("ignores If-Match (a PUT with a wrong ETag overwrote the object)"))
            }
            _ => Ok(false),
        }
    }

    /// Probe 4: a replacement naming the ETag the store gave, with a new body. Renewals and
    /// grants need If-Match to accept it, and the new body to get a new ETag (or a waiter
    /// would never see a renewal). The answer, unless it is an error.
    async fn renew(&self, current: &ETag) -> Result<Option<Response>, Error> {
        let renew = Intent::PutIfMatch {
            etag: current.clone(),
            body: self.body(4),
        };
        match self.send(&renew).await? {
            Some(Response::Written { etag }) if etag == *current => Err(self.unusable(
                "gives the same ETag to different bodies (renewals would look like no change)",
            )),
            other => Ok(other),
        }
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
        StoreCheckError::IgnoresConditions {
            endpoint: store.endpoint().to_owned(),
            bucket: named(store),
            what,
        }
        .into()
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
            Verdict::Honours(ConditionalDelete::Honored),
            Verdict::Honours(ConditionalDelete::IgnoresIfMatch),
            Verdict::Honours(ConditionalDelete::NotImplemented),
            Verdict::MayNotDelete,
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
