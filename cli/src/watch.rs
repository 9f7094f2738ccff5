//! `sets3lock watch`: the holder now, then one line per change, until interrupted (like
//! `etcdctl elect --listen`, or client-go's `OnNewLeader`).

use crate::exit_codes::{CANNOT_LOCK, OK};
use crate::status::quote;
use sets3lock::proto::{Holder, LockUrl, Sighting, WatchConfig, WatchEvent};
use sets3lock::{Options, Watcher};
use std::time::Duration;
use tokio::signal::unix::{signal, SignalKind};

pub(crate) fn watch(locks: Vec<(LockUrl, Options)>, json: bool, interval: Duration) -> u8 {
    let Some(runtime) = crate::runtime() else {
        return CANNOT_LOCK;
    };
    let cfg = WatchConfig {
        interval,
        ..WatchConfig::default()
    };
    let code = runtime.block_on(watch_until_interrupted(locks, cfg, json));
    runtime.shutdown_background();
    code
}

/// What one lock's watcher reports: its event, and how long it has seen the holder.
struct Report {
    lock: usize,
    event: WatchEvent,
    seen: Option<Duration>,
}

async fn watch_until_interrupted(
    locks: Vec<(LockUrl, Options)>,
    cfg: WatchConfig,
    json: bool,
) -> u8 {
    let (mut int, mut term) = match (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) {
        (Ok(i), Ok(t)) => (i, t),
        (Err(e), _) | (_, Err(e)) => {
            say!("cannot handle signals: {e}");
            return CANNOT_LOCK;
        }
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut gauges = Vec::new();
    for (i, (url, options)) in locks.iter().enumerate() {
        let mut watcher = match Watcher::new(&url.to_string(), options.clone(), cfg.clone()) {
            Ok(w) => w,
            Err(e) => {
                say!("{url}: {e}");
                return CANNOT_LOCK;
            }
        };
        gauges.push(crate::textfile::Watched::new(url));
        let tx = tx.clone();
        tokio::spawn(async move {
            while let Some(event) = watcher.next().await {
                let seen = watcher.current().and_then(|s| match s {
                    Sighting::Held { since, .. } | Sighting::Stale { since, .. } => {
                        Some(watcher.now().saturating_duration_since(*since))
                    }
                    _ => None,
                });
                let failed = matches!(event, WatchEvent::Failed { .. });
                if tx
                    .send(Report {
                        lock: i,
                        event,
                        seen,
                    })
                    .is_err()
                    || failed
                {
                    break;
                }
            }
        });
    }
    drop(tx);
    // The textfile's ages move on between changes: it is written again every interval (at
    // least every minute).
    let mut tick = tokio::time::interval(cfg.interval.min(Duration::from_secs(60)));
    let mut failed = 0;
    loop {
        tokio::select! {
            report = rx.recv() => match report {
                Some(Report { lock, event: WatchEvent::Failed { error }, .. }) => {
                    // That lock is given up (unreadable for good); the others are watched on
                    // until they all are.
                    say!("{}: {error}", locks[lock].0);
                    gauges[lock].given_up();
                    crate::textfile::changed();
                    failed += 1;
                    if failed == locks.len() {
                        return CANNOT_LOCK;
                    }
                }
                Some(Report { lock, event, seen }) => {
                    print(&locks[lock].0, &event, json, seen);
                    gauges[lock].saw(&event, seen);
                    crate::textfile::changed();
                }
                None => return CANNOT_LOCK,
            },
            _ = tick.tick() => {
                for g in &mut gauges {
                    g.tick();
                }
                crate::textfile::changed();
            }
            // Interrupted: the normal way to end a watch.
            _ = int.recv() => return OK,
            _ = term.recv() => return OK,
        }
    }
}

fn print(url: &LockUrl, event: &WatchEvent, json: bool, seen: Option<Duration>) {
    let at = jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%S%.3fZ");
    if json {
        out!("{}", event_json(url, &at.to_string(), event, seen));
        return;
    }
    let what = match event {
        WatchEvent::Changed(Sighting::Free) => "free".to_string(),
        WatchEvent::Changed(Sighting::Released { holder, .. }) => format!(
            "free, last token {} (fenced)",
            holder.fence().map_or(0, |f| f.token)
        ),
        WatchEvent::Changed(Sighting::Held { holder, .. }) => {
            format!("held by {}", crate::holder::describe(holder))
        }
        WatchEvent::Changed(Sighting::Stale { holder, .. }) => format!(
            "stale: unchanged for a full lease, a waiter may take it over (held by {})",
            crate::holder::describe(holder)
        ),
        WatchEvent::Unreachable { setback } => format!("cannot read the lock, retrying: {setback}"),
        WatchEvent::Reachable => "readable again".to_string(),
        other => format!("{other:?}"),
    };
    out!("{at} {url}: {what}");
}

/// One JSON line: `at`, `url`, `state` (free, held, stale, released, unreachable, readable),
/// and for a record: `etag`, `holder` (an object, as `status --json` gives it: `kind` and the
/// record's fields), `describe` (the holder as people read it), `owner`, `host`, `pid`, `since`
/// (the holder's acquisition, by its clock), `lease_ms`, `value` (the holder's `--value`),
/// `token` (fenced), `seen_ms` (how long this watcher has seen this holder).
fn event_json(url: &LockUrl, at: &str, event: &WatchEvent, seen: Option<Duration>) -> String {
    let mut s = format!("{{\"at\":{},\"url\":{}", quote(at), quote(&url.to_string()));
    let sighting = match event {
        WatchEvent::Changed(sighting) => sighting,
        WatchEvent::Unreachable { setback } => {
            s.push_str(&format!(
                ",\"state\":\"unreachable\",\"error\":{}}}",
                quote(&setback.to_string())
            ));
            return s;
        }
        _ => {
            s.push_str(",\"state\":\"readable\"}");
            return s;
        }
    };
    let state = match sighting {
        Sighting::Free => "free",
        Sighting::Released { .. } => "released",
        Sighting::Held { .. } => "held",
        Sighting::Stale { .. } => "stale",
    };
    s.push_str(&format!(",\"state\":\"{state}\""));
    if let Some(etag) = sighting.etag() {
        s.push_str(&format!(",\"etag\":{}", quote(etag.as_str())));
    }
    if let Some(holder) = sighting.holder() {
        s.push_str(&format!(
            ",\"holder\":{},\"describe\":{}",
            crate::status::holder_object(holder),
            quote(&crate::holder::describe(holder))
        ));
        if let Holder::Sets3lock(r) = holder {
            let since = jiff::Timestamp::from_millisecond(r.acquired_unix_ms as i64)
                .map(|t| t.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
                .unwrap_or_default();
            s.push_str(&format!(
                ",\"owner\":{},\"host\":{},\"pid\":{},\"since\":{},\"lease_ms\":{}",
                quote(&r.owner.to_string()),
                quote(&r.host),
                r.pid,
                quote(&since),
                r.lease.as_millis()
            ));
            if let Some(v) = &r.value {
                s.push_str(&format!(",\"value\":{}", quote(v)));
            }
        }
        if let Some(f) = holder.fence() {
            s.push_str(&format!(",\"token\":{}", f.token));
        }
    }
    if let Some(seen) = seen {
        s.push_str(&format!(",\"seen_ms\":{}", seen.as_millis()));
    }
    s.push('}');
    s
}
