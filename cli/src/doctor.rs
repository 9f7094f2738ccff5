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
    /// No request reached the store (no connection, a refused certificate).
    Unreachable(String),
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
    out!("sets3lock doctor: {scheme}://{bucket}/{prefix}");
    if let Some(signer) = client.client.sign_in() {
        out!("  signed  by {signer}");
    }
    let first = second_create(&client, &key("create"));
    if let Verdict::Unreachable(detail) = &first {
        // Nothing was sent: every other check would say the same.
        out!("  ERROR   the store could not be asked: {detail}");
        out!("verdict: inconclusive (no request reached the store)");
        return CANNOT_LOCK;
    }
    let checks: Vec<(&str, Verdict)> = vec![
        ("a second If-None-Match: * PUT is refused", first),
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
    for (name, verdict) in &checks {
        match verdict {
            Verdict::Pass(detail) => out!("  ok      {name}: {detail}"),
            Verdict::Fail(detail) => {
                failed += 1;
                out!("  FAILED  {name}: {detail}");
            }
            Verdict::Error(detail) | Verdict::Unreachable(detail) => {
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
        Response::Ambiguous(Ambiguity::NotSent { detail }) => Err(Verdict::Unreachable(detail)),
        other => Err(Verdict::Error(format!(
            "the first create of a fresh key got {}",
            said(&other)
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

/// A reply as a line of the report says it.
fn said(reply: &Response) -> String {
    match reply {
        Response::Ambiguous(a) => a.to_string(),
        Response::Refused(e) => e.to_string(),
        Response::Written { .. } => "written".into(),
        Response::Deleted => "deleted".into(),
        Response::Object { .. } => "the object".into(),
        Response::NotModified => "not modified (304)".into(),
        Response::Exists => "exists (412)".into(),
        Response::Mismatch => "ETag mismatch (412)".into(),
        Response::Absent => "absent (404)".into(),
        Response::Conflict { code } => format!("conflict (409 {})", code.as_deref().unwrap_or("")),
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
            Some(e) if e == first => Verdict::Pass(format!("not applied ({})", said(&other))),
            _ => Verdict::Error(said(&other)),
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
        other => return Verdict::Error(said(&other)),
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
        other => Verdict::Fail(format!("the right ETag was not accepted: {}", said(&other))),
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
        other => return Verdict::Error(said(&other)),
    }
    if current(client, key).as_ref() != Some(&first) {
        return Verdict::Fail("the object changed after a refused DELETE".into());
    }
    match client.send(key, &Intent::DeleteIfMatch { etag: first }) {
        Response::Deleted if current(client, key).is_none() => {
            Verdict::Pass("wrong ETag refused (412), right ETag deleted".into())
        }
        Response::Refused(e) => Verdict::Error(format!("the right ETag was refused: {e}")),
        other => Verdict::Fail(format!("the right ETag did not delete: {}", said(&other))),
    }
}

/// How many times a racer sends its create while the answer is unknown.
const RACE_TRIES: u32 = 5;

/// Many simultaneous creates of one key: exactly one may be applied. An answer that says
/// nothing (S3 answers simultaneous PUTs to one key with `503 SlowDown`; a 429; a reply lost
/// or slow past the request timeout) is not a verdict: that racer sends its create again, as
/// the lock does, and the object's body then says whose create was applied.
fn race(client: &Probe, key: &str, racers: usize) -> Verdict {
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(racers));
    let outcomes: Vec<Racer> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..racers)
            .map(|i| {
                let (client, barrier) = (client.clone(), barrier.clone());
                scope.spawn(move || {
                    barrier.wait();
                    racer(&client, key, i)
                })
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    if let Some(e) = outcomes.iter().find_map(|r| match &r.last {
        Response::Refused(e) => Some(e),
        _ => None,
    }) {
        return Verdict::Error(e.to_string());
    }
    let holder = match client.send(
        key,
        &Intent::Get {
            if_none_match: None,
        },
    ) {
        Response::Object { body, .. } => (0..racers).find(|&i| {
            let tag = format!("\"racer-{i}\"");
            body.windows(tag.len()).any(|w| w == tag.as_bytes())
        }),
        _ => None,
    };
    judge(&outcomes, holder)
}

/// What one racer ended with.
struct Racer {
    /// Its last answer.
    last: Response,
    /// What the answers that said nothing said (a try among them may have been applied).
    unknown: Vec<String>,
}

fn racer(client: &Probe, key: &str, i: usize) -> Racer {
    let mut unknown = Vec::new();
    loop {
        let last = client.send(
            key,
            &Intent::PutIfNoneMatch {
                body: body(&format!("racer-{i}")),
            },
        );
        let tries = unknown.len() as u32 + 1;
        match &last {
            Response::Ambiguous(a) if tries < RACE_TRIES && client.left().is_some() => {
                unknown.push(a.to_string());
                // Apart, as the lock's backoff would: 100, 200, 400, 800 ms, and a jitter.
                let pause = Duration::from_millis((100 << (tries - 1)) + nonce() % 100);
                std::thread::sleep(pause);
            }
            _ => return Racer { last, unknown },
        }
    }
}

/// The verdict on the racers' answers and on `holder`, the racer whose body the object holds.
fn judge(outcomes: &[Racer], holder: Option<usize>) -> Verdict {
    let racers = outcomes.len();
    let written: Vec<usize> = (0..racers)
        .filter(|&i| matches!(outcomes[i].last, Response::Written { .. }))
        .collect();
    // A racer whose answer was lost, though its create was applied, holds the object.
    let lost_winner = holder.filter(|h| !written.contains(h) && !outcomes[*h].unknown.is_empty());
    let applied = written.len() + usize::from(lost_winner.is_some());
    let still_unknown: Vec<&Racer> = outcomes
        .iter()
        .filter(|r| matches!(r.last, Response::Ambiguous(_)))
        .collect();
    let resent = outcomes.iter().filter(|r| !r.unknown.is_empty()).count();
    let answers = |rs: &mut dyn Iterator<Item = &String>| {
        let mut seen: Vec<&String> = Vec::new();
        for a in rs {
            if !seen.contains(&a) {
                seen.push(a);
            }
        }
        seen.iter()
            .map(|a| a.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if applied > 1 {
        return Verdict::Fail(format!(
            "{applied} of {racers} parallel creates were applied: conditional writes are not atomic"
        ));
    }
    if applied == 1 && still_unknown.is_empty() {
        let refused = racers - 1;
        let mut detail = format!("1 of {racers} won, {refused} refused");
        if lost_winner.is_some() {
            detail.push_str(" (the winner's answer was lost; the object holds its body)");
        }
        if resent > 0 {
            let said = answers(&mut outcomes.iter().flat_map(|r| r.unknown.iter()));
            detail.push_str(&format!(
                "; {resent} answered {said} first and were sent again"
            ));
        }
        return Verdict::Pass(detail);
    }
    let last = still_unknown
        .iter()
        .find_map(|r| match &r.last {
            Response::Ambiguous(a) => Some(a.to_string()),
            _ => None,
        })
        .unwrap_or_else(|| "none".into());
    Verdict::Error(format!(
        "{applied} won, {} refused, {} still unknown after {RACE_TRIES} tries each (the last answer: {last})",
        racers - applied - still_unknown.len(),
        still_unknown.len()
    ))
}

fn cleanup(client: &Probe, key: &str) {
    if let Some(etag) = current(client, key) {
        let _ = client.send(key, &Intent::DeleteIfMatch { etag });
    }
}

#[cfg(test)]
mod tests {
    use super::{judge, versioning_note, ProbeUrl, Racer, Verdict};
    use sets3lock::proto::{Ambiguity, ETag, Response};

    fn racer(last: Response, unknown: &[&str]) -> Racer {
        Racer {
            last,
            unknown: unknown.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    fn written() -> Response {
        Response::Written {
            etag: ETag::parse("e1").expect("an ETag"),
        }
    }

    fn slow_down() -> Response {
        Response::Ambiguous(Ambiguity::Status {
            status: 503,
            code: Some("SlowDown".into()),
        })
    }

    #[test]
    fn a_racer_whose_lost_create_holds_the_object_beside_a_written_one_fails_the_race() {
        // Racer 1's first answer was lost and its retry refused, yet the object holds its
        // body while racer 0 was told it wrote: two creates applied.
        let outcomes = [
            racer(written(), &[]),
            racer(Response::Exists, &["connection failed: reset"]),
            racer(Response::Exists, &[]),
        ];
        assert!(matches!(judge(&outcomes, Some(1)), Verdict::Fail(d) if d.contains("2 of 3")));
        // The same answers with racer 0's body in the object: one applied, and a pass.
        let Verdict::Pass(d) = judge(&outcomes, Some(0)) else {
            panic!("a pass");
        };
        assert!(d.contains("1 of 3 won") && d.contains("sent again"), "{d}");
    }

    #[test]
    fn a_lost_winner_passes_and_answers_still_unknown_leave_it_inconclusive() {
        let lost_winner = [
            racer(Response::Exists, &["no reply before the request timeout"]),
            racer(Response::Exists, &[]),
        ];
        assert!(matches!(judge(&lost_winner, Some(0)), Verdict::Pass(d) if d.contains("lost")));
        // Without the body to say so, nobody is known to have won.
        assert!(matches!(judge(&lost_winner, None), Verdict::Error(_)));
        let throttled = [
            racer(written(), &[]),
            racer(slow_down(), &["HTTP 503 SlowDown"; 4]),
        ];
        let Verdict::Error(d) = judge(&throttled, Some(0)) else {
            panic!("inconclusive");
        };
        assert!(
            d.contains("1 still unknown") && d.contains("HTTP 503 SlowDown"),
            "{d}"
        );
    }

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
