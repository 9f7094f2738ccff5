//! `sets3lock doctor s3://bucket/prefix/`: can this store protect a lock? Probes with
//! throw-away keys under the prefix, prints a verdict per check, cleans up.
//!
//! Some stores ignore condition headers (Garage, s3rver, older SeaweedFS) or apply them
//! non-atomically; a lock on such a store protects nothing, and this is how a user finds out.

use crate::exit_codes::{CANNOT_LOCK, NO, OK};
use bytes::Bytes;
use sets3lock::proto::{Ambiguity, ETag, Intent, LockUrl, Response};
use sets3lock::{Client, Options};
use std::time::{Duration, Instant};

/// A request is not sent with less than this left before the deadline.
const MIN_WAIT: Duration = Duration::from_millis(100);

/// The store, asked within the run's deadline (`--timeout`): no request waits past it, and
/// none is sent once it has passed.
#[derive(Clone)]
struct Probe {
    client: Client,
    /// The longest one request waits (the request timeout).
    limit: Duration,
    deadline: Instant,
}

impl Probe {
    /// What is left before the deadline, if enough to send a request.
    fn left(&self) -> Option<Duration> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        (left >= MIN_WAIT).then_some(left.min(self.limit))
    }

    fn send(&self, key: &str, intent: &Intent) -> Response {
        match self.left() {
            Some(left) => self.client.with_timeout(left).send(key, intent),
            None => out_of_time(),
        }
    }

    fn send_versioned(&self, key: &str, intent: &Intent) -> (Response, Option<String>) {
        match self.left() {
            Some(left) => self.client.with_timeout(left).send_versioned(key, intent),
            None => (out_of_time(), None),
        }
    }
}

fn out_of_time() -> Response {
    Response::Ambiguous(Ambiguity::NotSent {
        detail: "not sent: --timeout ran out".into(),
    })
}

/// What one check found.
enum Verdict {
    Pass(String),
    Fail(String),
    /// The store refused or failed: no verdict.
    Error(String),
}

/// Where the probe keys go: `s3://bucket/prefix/` (or `az://`, `gs://`).
#[derive(Clone, Debug)]
pub(crate) struct ProbeUrl {
    scheme: sets3lock::proto::Scheme,
    bucket: String,
    /// Empty, or ending in `/`.
    prefix: String,
}

impl ProbeUrl {
    /// The store it names.
    pub(crate) fn scheme(&self) -> sets3lock::proto::Scheme {
        self.scheme
    }

    /// Parses `s3://bucket/prefix/` (the trailing `/` may be left out; `az://container/…`
    /// and `gs://bucket/…` likewise).
    pub(crate) fn parse(url: &str) -> Result<ProbeUrl, String> {
        let not_a_url = || {
            format!("{url:?} is not a store URL: write it as s3://BUCKET/PREFIX/ (or az://CONTAINER/PREFIX/, gs://BUCKET/PREFIX/)")
        };
        let (_, rest) = url.split_once("://").ok_or_else(not_a_url)?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        // Reuse the lock URL's checks for the scheme and the bucket name.
        let scheme = url.split_once("://").map(|(s, _)| s).unwrap_or("");
        let probe =
            LockUrl::parse(&format!("{scheme}://{bucket}/probe")).map_err(|e| e.to_string())?;
        let prefix = if prefix.is_empty() || prefix.ends_with('/') {
            prefix.to_owned()
        } else {
            format!("{prefix}/")
        };
        Ok(ProbeUrl {
            scheme: probe.scheme(),
            bucket: bucket.to_owned(),
            prefix,
        })
    }
}

/// Runs the checks, all within `timeout` (`--timeout`).
pub(crate) fn doctor(url: &ProbeUrl, options: &Options, racers: u16, timeout: Duration) -> u8 {
    let deadline = Instant::now() + timeout;
    let ProbeUrl {
        scheme,
        bucket,
        prefix,
    } = url;
    let client = match Client::in_store(*scheme, bucket, options) {
        Ok(client) => Probe {
            client,
            limit: options.request_timeout,
            deadline,
        },
        Err(e) => {
            say!("{e}");
            return CANNOT_LOCK;
        }
    };
    let run = format!("{:016x}", nonce());
    let key = |name: &str| format!("{prefix}sets3lock-doctor-{run}-{name}");
    let checks: Vec<(&str, Verdict)> = vec![
        (
            "a second If-None-Match: * PUT is refused",
            second_create(&client, &key("create")),
        ),
        (
            "PUT If-Match with a wrong ETag is refused",
            put_if_match(&client, &key("put-if-match")),
        ),
        (
            "DELETE If-Match with a wrong ETag is refused",
            delete_if_match(&client, &key("delete-if-match")),
        ),
        (
            "exactly one of many parallel conditional PUTs wins",
            race(&client, &key("race"), usize::from(racers)),
        ),
    ];
    let (mut failed, mut errors) = (0, 0);
    out!("sets3lock doctor: {scheme}://{bucket}/{prefix}");
    if let Some(signer) = client.client.sign_in() {
        out!("  signed  by {signer}");
    }
    for (name, verdict) in &checks {
        match verdict {
            Verdict::Pass(detail) => out!("  ok      {name}: {detail}"),
            Verdict::Fail(detail) => {
                failed += 1;
                out!("  FAILED  {name}: {detail}");
            }
            Verdict::Error(detail) => {
                errors += 1;
                out!("  ERROR   {name}: {detail}");
            }
        }
    }
    let versioned = client
        .send_versioned(
            &key("versioned"),
            &Intent::PutIfNoneMatch { body: body("v") },
        )
        .1
        .is_some();
    if versioned {
        out!("  note    {}", versioning_note(prefix));
    }
    for name in [
        "create",
        "put-if-match",
        "delete-if-match",
        "race",
        "versioned",
    ] {
        cleanup(&client, &key(name));
    }
    if client.left().is_none() {
        out!(
            "  note    --timeout {} ran out: what was not sent by then counts as an error, and probe keys named {prefix}sets3lock-doctor-{run}-* may be left (remove them by hand)",
            crate::output::human(timeout)
        );
    }
    let delete_failed = matches!(checks[2].1, Verdict::Fail(_));
    if failed == 1 && delete_failed && errors == 0 {
        out!("verdict: this store can hold fenced locks only (its DELETE If-Match is not safe): use --fenced");
        NO
    } else if failed > 0 {
        out!("verdict: this store cannot protect a lock ({failed} check(s) failed): do not use sets3lock on it");
        NO
    } else if errors > 0 {
        out!("verdict: inconclusive ({errors} check(s) could not run)");
        CANNOT_LOCK
    } else {
        out!("verdict: this store honours conditional writes atomically: sets3lock can use it");
        OK
    }
}

/// What a versioned bucket costs a lock, and the lifecycle rule that keeps it in check.
fn versioning_note(prefix: &str) -> String {
    let scope = if prefix.is_empty() {
        "the whole bucket (better: keep locks under a prefix of their own)".to_string()
    } else {
        format!("Prefix {prefix:?}")
    };
    format!(
        "the bucket is versioned: every renewal leaves a noncurrent version of the lock object \
         (with the default 60s lease, 4,320 a day for each held lock; AWS warns of throttling \
         past a few million versions of a key); add a lifecycle rule with \
         NoncurrentVersionExpiration (1 day) scoped to {scope}"
    )
}

fn nonce() -> u64 {
    let mut b = [0u8; 8];
    let _ = getrandom::fill(&mut b);
    u64::from_le_bytes(b)
}

fn body(tag: &str) -> Bytes {
    Bytes::from(format!(
        "{{\"sets3lock-doctor\":\"{tag}\",\"n\":{}}}",
        nonce()
    ))
}

fn create(client: &Probe, key: &str) -> Result<ETag, Verdict> {
    match client.send(
        key,
        &Intent::PutIfNoneMatch {
            body: body("first"),
        },
    ) {
        Response::Written { etag } => Ok(etag),
        Response::Refused(e) => Err(Verdict::Error(e.to_string())),
        other => Err(Verdict::Error(format!(
            "the first create of a fresh key got {other:?}"
        ))),
    }
}

fn current(client: &Probe, key: &str) -> Option<ETag> {
    match client.send(
        key,
        &Intent::Get {
            if_none_match: None,
        },
    ) {
        Response::Object { etag, .. } => Some(etag),
        _ => None,
    }
}

fn wrong_etag() -> ETag {
    ETag::parse("1000000000000000001").expect("a valid ETag")
}

fn second_create(client: &Probe, key: &str) -> Verdict {
    let first = match create(client, key) {
        Ok(e) => e,
        Err(v) => return v,
    };
    match client.send(
        key,
        &Intent::PutIfNoneMatch {
            body: body("second"),
        },
    ) {
        Response::Exists => Verdict::Pass("refused (412)".into()),
        Response::Written { .. } => {
            Verdict::Fail("the second PUT overwrote the object: If-None-Match is ignored".into())
        }
        Response::Refused(e) => Verdict::Error(e.to_string()),
        other => match current(client, key) {
            Some(e) if e == first => Verdict::Pass(format!("not applied ({other:?})")),
            _ => Verdict::Error(format!("{other:?}")),
        },
    }
}

fn put_if_match(client: &Probe, key: &str) -> Verdict {
    let first = match create(client, key) {
        Ok(e) => e,
        Err(v) => return v,
    };
    match client.send(
        key,
        &Intent::PutIfMatch {
            etag: wrong_etag(),
            body: body("wrong"),
        },
    ) {
        Response::Mismatch => {}
        Response::Written { .. } => {
            return Verdict::Fail("a PUT with a wrong If-Match overwrote the object".into())
        }
        Response::Refused(e) => return Verdict::Error(e.to_string()),
        other => return Verdict::Error(format!("{other:?}")),
    }
    match client.send(
        key,
        &Intent::PutIfMatch {
            etag: first,
            body: body("right"),
        },
    ) {
        Response::Written { .. } => {
            Verdict::Pass("wrong ETag refused (412), right ETag accepted".into())
        }
        Response::Refused(e) => Verdict::Error(format!("the right ETag was refused too: {e}")),
        other => Verdict::Fail(format!("the right ETag was not accepted: {other:?}")),
    }
}

fn delete_if_match(client: &Probe, key: &str) -> Verdict {
    let first = match create(client, key) {
        Ok(e) => e,
        Err(v) => return v,
    };
    match client.send(key, &Intent::DeleteIfMatch { etag: wrong_etag() }) {
        Response::Mismatch => {}
        Response::Deleted => {
            return if current(client, key).is_none() {
                Verdict::Fail("a DELETE with a wrong If-Match deleted the object (as MinIO CE does): a presence-mode release could delete another holder's lock; use --fenced, which never deletes".into())
            } else {
                Verdict::Fail("a DELETE with a wrong If-Match answered success; use --fenced, which never deletes".into())
            }
        }
        Response::Refused(sets3lock::proto::Error::ConditionalUnsupported { status, .. }) => {
            return Verdict::Fail(format!("the store refuses DELETE If-Match (HTTP {status}): a presence-mode lock cannot be released; use --fenced, which never deletes"))
        }
        Response::Refused(e) => return Verdict::Error(e.to_string()),
        other => return Verdict::Error(format!("{other:?}")),
    }
    if current(client, key).as_ref() != Some(&first) {
        return Verdict::Fail("the object changed after a refused DELETE".into());
    }
    match client.send(key, &Intent::DeleteIfMatch { etag: first }) {
        Response::Deleted if current(client, key).is_none() => {
            Verdict::Pass("wrong ETag refused (412), right ETag deleted".into())
        }
        Response::Refused(e) => Verdict::Error(format!("the right ETag was refused: {e}")),
        other => Verdict::Fail(format!("the right ETag did not delete: {other:?}")),
    }
}

fn race(client: &Probe, key: &str, racers: usize) -> Verdict {
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(racers));
    let outcomes: Vec<Response> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..racers)
            .map(|i| {
                let (client, barrier) = (client.clone(), barrier.clone());
                scope.spawn(move || {
                    barrier.wait();
                    client.send(
                        key,
                        &Intent::PutIfNoneMatch {
                            body: body(&format!("racer-{i}")),
                        },
                    )
                })
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    let winners = outcomes
        .iter()
        .filter(|r| matches!(r, Response::Written { .. }))
        .count();
    let losers = outcomes
        .iter()
        .filter(|r| matches!(r, Response::Exists | Response::Conflict { .. }))
        .count();
    let unknown = outcomes.len() - winners - losers;
    if let Some(Response::Refused(e)) = outcomes.iter().find(|r| matches!(r, Response::Refused(_)))
    {
        return Verdict::Error(e.to_string());
    }
    match (winners, unknown) {
        (1, 0) => Verdict::Pass(format!("1 of {racers} won, {losers} refused")),
        (w, _) if w > 1 => Verdict::Fail(format!(
            "{w} of {racers} parallel creates won: conditional writes are not atomic"
        )),
        (_, u) => Verdict::Error(format!(
            "{winners} won, {losers} refused, {u} unknown (timeouts or errors)"
        )),
    }
}

fn cleanup(client: &Probe, key: &str) {
    if let Some(etag) = current(client, key) {
        let _ = client.send(key, &Intent::DeleteIfMatch { etag });
    }
}

#[cfg(test)]
mod tests {
    use super::{versioning_note, ProbeUrl};

    #[test]
    fn the_versioning_note_names_the_cost_and_a_rule_scoped_to_the_prefix() {
        let note = versioning_note("locks/");
        assert!(note.contains("4,320 a day"), "{note}");
        assert!(note.contains("NoncurrentVersionExpiration"), "{note}");
        assert!(note.contains("Prefix \"locks/\""), "{note}");
        assert!(versioning_note("").contains("prefix of their own"));
    }

    #[test]
    fn the_probe_prefix_is_a_directory_and_the_bucket_is_checked() {
        let p = ProbeUrl::parse("s3://my-bucket/probes").expect("parses");
        assert_eq!(
            (p.bucket.as_str(), p.prefix.as_str()),
            ("my-bucket", "probes/")
        );
        let p = ProbeUrl::parse("s3://my-bucket").expect("parses");
        assert_eq!(p.prefix, "");
        assert!(
            ProbeUrl::parse("s3://b/probes/").is_err(),
            "bucket too short"
        );
        assert!(ProbeUrl::parse("https://my-bucket/").is_err());
    }
}
