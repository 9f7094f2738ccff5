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
    /// The answers that said nothing, each followed by the create sent again.
    unknown: Vec<Ambiguity>,
}

impl Racer {
    /// Whether one of its creates may have been applied though it was not told so: an answer
    /// lost, late or a 5xx other than a throttle, before the last or as the last.
    fn maybe_applied(&self) -> bool {
        let last = match &self.last {
            Response::Ambiguous(a) => Some(a),
            _ => None,
        };
        self.unknown.iter().chain(last).any(|a| !throttled(a))
    }
}

/// A refusal to do the work at all: S3's and Azure's `503` (SlowDown, ServerBusy), GCS's and
/// others' `429`, or a request never sent. Nothing was applied.
fn throttled(answer: &Ambiguity) -> bool {
    matches!(
        answer,
        Ambiguity::Status {
            status: 503 | 429,
            ..
        } | Ambiguity::NotSent { .. }
    )
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
                unknown.push(a.clone());
                // Apart, as the lock's backoff would: 100, 200, 400, 800 ms, and a jitter.
                let pause = Duration::from_millis((100 << (tries - 1)) + nonce() % 100);
                std::thread::sleep(pause);
            }
            _ => return Racer { last, unknown },
        }
    }
}

/// The distinct answers, in the order first seen.
fn distinct<'a>(answers: impl Iterator<Item = &'a Ambiguity>) -> String {
    let mut seen: Vec<String> = Vec::new();
    for a in answers.map(|a| a.to_string()) {
        if !seen.contains(&a) {
            seen.push(a);
        }
    }
    seen.join(", ")
}

/// The verdict on the racers' answers and on `holder`, the racer whose body the object holds.
///
/// Applied: each racer told "written", and the holder whatever it was told. More than one is
/// a failure. One is a pass only if no other racer may have been applied unseen: a racer
/// whose answer was lost or late (not a throttle) and whose body the object does not hold
/// could have been written and then overwritten, which the object no longer shows.
fn judge(outcomes: &[Racer], holder: Option<usize>) -> Verdict {
    let racers = outcomes.len();
    let written: Vec<usize> = (0..racers)
        .filter(|&i| matches!(outcomes[i].last, Response::Written { .. }))
        .collect();
    let holder_unwritten = holder.filter(|h| !written.contains(h));
    let applied = written.len() + usize::from(holder_unwritten.is_some());
    if applied > 1 {
        return Verdict::Fail(format!(
            "{applied} of {racers} parallel creates were applied: conditional writes are not atomic"
        ));
    }
    if let Some(h) = holder_unwritten.filter(|&h| !outcomes[h].maybe_applied()) {
        return Verdict::Fail(format!(
            "the object holds the body of a create that was told {}: the store's answers cannot be trusted",
            said(&outcomes[h].last)
        ));
    }
    let unresolved: Vec<&Racer> = (0..racers)
        .filter(|&i| Some(i) != holder && !written.contains(&i) && outcomes[i].maybe_applied())
        .map(|i| &outcomes[i])
        .collect();
    if applied == 1 && unresolved.is_empty() {
        let mut detail = format!("1 of {racers} won, {} refused", racers - 1);
        if holder_unwritten.is_some() {
            detail.push_str(" (the winner's answer was lost; the object holds its body)");
        }
        let resent = outcomes.iter().filter(|r| !r.unknown.is_empty()).count();
        if resent > 0 {
            let answers = distinct(outcomes.iter().flat_map(|r| r.unknown.iter()));
            detail.push_str(&format!(
                "; {resent} answered {answers} first and were sent again"
            ));
        }
        return Verdict::Pass(detail);
    }
    let lost = distinct(unresolved.iter().flat_map(|r| {
        let last = match &r.last {
            Response::Ambiguous(a) => Some(a),
            _ => None,
        };
        r.unknown.iter().chain(last).filter(|a| !throttled(a))
    }));
    Verdict::Error(format!(
        "{applied} known to have won, and {} more may have been applied unseen (their answers: {}); a lost or late answer cannot be told apart from a create that was overwritten",
        unresolved.len(),
        if lost.is_empty() { "none".to_owned() } else { lost }
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

    fn racer(last: Response, unknown: &[Ambiguity]) -> Racer {
        Racer {
            last,
            unknown: unknown.to_vec(),
        }
    }

    fn written() -> Response {
        Response::Written {
            etag: ETag::parse("e1").expect("an ETag"),
        }
    }

    fn slow_down() -> Ambiguity {
        Ambiguity::Status {
            status: 503,
            code: Some("SlowDown".into()),
        }
    }

    fn lost() -> Ambiguity {
        Ambiguity::Connection {
            detail: "reset".into(),
        }
    }

    #[test]
    fn two_creates_applied_fail_whatever_the_one_holding_the_object_was_told() {
        // Racer 1's first answer was lost and its retry refused, yet the object holds its
        // body while racer 0 was told it wrote.
        let lost_then_refused = [
            racer(written(), &[]),
            racer(Response::Exists, &[lost()]),
            racer(Response::Exists, &[]),
        ];
        assert!(
            matches!(judge(&lost_then_refused, Some(1)), Verdict::Fail(d) if d.contains("2 of 3"))
        );
        // Racer 2 was only ever told 412, and the object holds its body: applied too (as a
        // retrying proxy in front of the store would make it).
        assert!(
            matches!(judge(&lost_then_refused, Some(2)), Verdict::Fail(d) if d.contains("2 of 3"))
        );
        // Nobody was told "written", and the one holding the object was told 412.
        let lied = [racer(Response::Exists, &[]), racer(Response::Exists, &[])];
        assert!(
            matches!(judge(&lied, Some(0)), Verdict::Fail(d) if d.contains("cannot be trusted"))
        );
    }

    #[test]
    fn a_lost_answer_not_holding_the_object_leaves_the_race_inconclusive() {
        // Racer 1's lost create could have been applied and then overwritten by racer 0's.
        let outcomes = [racer(written(), &[]), racer(Response::Exists, &[lost()])];
        let Verdict::Error(d) = judge(&outcomes, Some(0)) else {
            panic!("inconclusive");
        };
        assert!(
            d.contains("1 more may have been applied") && d.contains("reset"),
            "{d}"
        );
        // A lost answer whose body the object holds is the winner's.
        let lost_winner = [
            racer(Response::Exists, &[Ambiguity::Timeout]),
            racer(Response::Exists, &[]),
        ];
        assert!(matches!(judge(&lost_winner, Some(0)), Verdict::Pass(d) if d.contains("lost")));
        // Without the body to say so, nobody is known to have won.
        assert!(matches!(judge(&lost_winner, None), Verdict::Error(_)));
    }

    #[test]
    fn throttled_creates_were_not_applied_and_are_sent_again() {
        let outcomes = [
            racer(written(), &[slow_down()]),
            racer(Response::Exists, &[slow_down(), slow_down()]),
            // Throttled at every try: never applied.
            racer(
                Response::Ambiguous(slow_down()),
                &[slow_down(), slow_down(), slow_down(), slow_down()],
            ),
        ];
        let Verdict::Pass(d) = judge(&outcomes, Some(0)) else {
            panic!("a pass");
        };
        assert!(
            d.contains("1 of 3 won") && d.contains("3 answered HTTP 503 SlowDown first"),
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
