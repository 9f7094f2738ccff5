//! Benchmarks against a real local S3-compatible server, side by side in one run:
//! - an uncontended acquire + release through sets3lock, against the floor of one plain
//!   conditional PUT plus one conditional DELETE sent with reqwest on the same connection;
//! - contended handoff with 2, 4 and 8 contenders: sections per second, requests per
//!   acquisition, and the gap between one release and the next acquisition.
//!
//! `bash scripts/bench-s3.sh` starts the server and runs this; it prints a table and writes
//! `docs/handoff-gap.svg`. Environment: BENCH_SERVER (seaweedfs or ministack), BENCH_CYCLES.

use rusty_s3::actions::S3Action;
use rusty_s3::{Bucket, Credentials, UrlStyle};
use sets3lock::{blocking::Locker, Options, Wait};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Each contended section holds the lock this long...
const HOLD: Duration = Duration::from_millis(10);
/// ...and its contender waits this long before asking again, as real jobs do.
const THINK: Duration = Duration::from_millis(50);

struct Server {
    name: String,
    endpoint: String,
    key: String,
    secret: String,
    bucket: String,
}

fn server() -> Server {
    let name = std::env::var("BENCH_SERVER").unwrap_or_else(|_| "seaweedfs".into());
    let var = |s: &str| {
        let v = format!("SETS3LOCK_{}_{s}", name.to_uppercase());
        std::env::var(&v).unwrap_or_else(|_| panic!("{v} is not set: run bash scripts/bench-s3.sh"))
    };
    Server {
        endpoint: var("ENDPOINT"),
        key: var("ACCESS_KEY"),
        secret: var("SECRET"),
        bucket: var("BUCKET"),
        name,
    }
}

fn options(s: &Server) -> Options {
    let mut options = Options::default();
    options.s3.endpoint = Some(sets3lock::parse_endpoint(&s.endpoint).expect("endpoint"));
    options.s3.credentials = sets3lock::Credentials::Fixed(sets3lock::AwsCredentials::new(
        s.key.clone(),
        s.secret.clone(),
    ));
    options.request_timeout = Duration::from_secs(60);
    options
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn sorted(mut v: Vec<f64>) -> Vec<f64> {
    v.sort_by(|a, b| a.total_cmp(b));
    v
}

/// A table row of sorted samples: median, p99, requests per cycle.
fn row(label: &str, samples: &[f64], requests: f64) {
    let (median, p99) = (percentile(samples, 0.5), percentile(samples, 0.99));
    println!("| {label} | {median:.2} | {p99:.2} | {requests:.2} |");
}

/// A table row of the ratio of two sets of samples' medians.
fn ratio(label: &str, of: &[f64], to: &[f64]) {
    let r = percentile(of, 0.5) / percentile(to, 0.5);
    println!("| {label} | {r:.2}x | | |");
}

/// The floor: the two requests a lock cycle needs, sent by hand on one pooled connection.
fn floor_cycle(
    client: &reqwest::blocking::Client,
    bucket: &Bucket,
    creds: &Credentials,
    key: &str,
    n: u64,
) {
    let mut put = bucket.put_object(Some(creds), key);
    put.headers_mut().insert("if-none-match", "*");
    let reply = client
        .put(put.sign(Duration::from_secs(60)))
        .header("if-none-match", "*")
        .body(format!("{{\"n\":{n}}}"))
        .send()
        .expect("put");
    assert_eq!(reply.status(), 200, "floor PUT");
    let etag = reply.headers()["etag"].to_str().expect("etag").to_owned();
    let mut del = bucket.delete_object(Some(creds), key);
    del.headers_mut().insert("if-match", etag.clone());
    let reply = client
        .delete(del.sign(Duration::from_secs(60)))
        .header("if-match", etag)
        .send()
        .expect("delete");
    assert!(reply.status().is_success(), "floor DELETE");
}

/// The fenced floor: what a fenced cycle on a free key needs, by hand: read the free record
/// (its ETag), write the held record with If-Match on it, write the free record with If-Match
/// on that.
fn fenced_floor_cycle(
    client: &reqwest::blocking::Client,
    bucket: &Bucket,
    creds: &Credentials,
    key: &str,
    n: u64,
) {
    let get = bucket.get_object(Some(creds), key);
    let reply = client
        .get(get.sign(Duration::from_secs(60)))
        .send()
        .expect("get");
    assert_eq!(reply.status(), 200, "fenced floor GET");
    let mut etag = reply.headers()["etag"].to_str().expect("etag").to_owned();
    for state in ["held", "free"] {
        let mut put = bucket.put_object(Some(creds), key);
        put.headers_mut().insert("if-match", etag.clone());
        let reply = client
            .put(put.sign(Duration::from_secs(60)))
            .header("if-match", etag.clone())
            .body(format!("{{\"state\":\"{state}\",\"n\":{n}}}"))
            .send()
            .expect("put");
        assert_eq!(reply.status(), 200, "fenced floor PUT");
        etag = reply.headers()["etag"].to_str().expect("etag").to_owned();
    }
}

fn main() {
    let s = server();
    let cycles: usize = std::env::var("BENCH_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let run = format!("{:08x}", std::process::id());

    // ---- uncontended, side by side, in alternating batches ----
    let bucket = Bucket::new(
        s.endpoint.parse().expect("url"),
        UrlStyle::Path,
        s.bucket.clone(),
        "us-east-1",
    )
    .expect("bucket");
    let creds = Credentials::new(s.key.clone(), s.secret.clone());
    let client = reqwest::blocking::Client::new();
    let floor_key = format!("bench/{run}/floor");
    let locker = Locker::new(
        &format!("s3://{}/bench/{run}/uncontended", s.bucket),
        options(&s),
    )
    .expect("locker");
    // The async face too, on a current-thread tokio runtime driven from this thread.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let async_locker = runtime
        .block_on(async {
            sets3lock::Locker::new(
                &format!("s3://{}/bench/{run}/uncontended-async", s.bucket),
                options(&s),
            )
        })
        .expect("async locker");
    let async_cycle = || {
        runtime.block_on(async {
            let held = async_locker.acquire(Wait::No).await.expect("acquire");
            held.release().await.expect("release");
        })
    };
    async_cycle(); // warm: the connection and the store check
    let (mut floor, mut lock, mut alock) = (Vec::new(), Vec::new(), Vec::new());
    floor_cycle(&client, &bucket, &creds, &floor_key, 0); // warm the connection
    let (before, async_before) = (locker.requests(), async_locker.requests());
    for batch in 0..10 {
        for i in 0..cycles / 10 {
            let t = Instant::now();
            floor_cycle(
                &client,
                &bucket,
                &creds,
                &floor_key,
                (batch * cycles + i) as u64,
            );
            floor.push(t.elapsed().as_secs_f64() * 1e3);
        }
        for _ in 0..cycles / 10 {
            let t = Instant::now();
            let held = locker.acquire(Wait::No).expect("acquire");
            held.release().expect("release");
            lock.push(t.elapsed().as_secs_f64() * 1e3);
        }
        for _ in 0..cycles / 10 {
            let t = Instant::now();
            async_cycle();
            alock.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    let requests_per_cycle = (locker.requests() - before) as f64 / lock.len() as f64;
    let (floor, lock, alock) = (sorted(floor), sorted(lock), sorted(alock));
    println!(
        "server: {} ({}), {} cycles each, run side by side in 10 alternating batches",
        s.name,
        s.endpoint,
        lock.len()
    );
    println!();
    println!("| uncontended acquire + release | median ms | p99 ms | requests/cycle |");
    println!("|---|---|---|---|");
    let async_requests = (async_locker.requests() - async_before) as f64 / alock.len() as f64;
    row(
        "reqwest: PUT If-None-Match + DELETE If-Match (floor)",
        &floor,
        2.0,
    );
    row("sets3lock blocking driver", &lock, requests_per_cycle);
    ratio("ratio (sets3lock / floor, median)", &lock, &floor);
    row(
        "sets3lock async driver (tokio, current thread)",
        &alock,
        async_requests,
    );
    ratio("ratio (async / floor, median)", &alock, &floor);
    println!();

    // ---- fenced, uncontended, side by side with its own floor ----
    let fenced_floor_key = format!("bench/{run}/fenced-floor");
    let mut put = bucket.put_object(Some(&creds), &fenced_floor_key);
    put.headers_mut().insert("if-none-match", "*");
    client
        .put(put.sign(Duration::from_secs(60)))
        .header("if-none-match", "*")
        .body("{\"state\":\"free\"}")
        .send()
        .expect("seed the fenced floor's free record");
    let mut fenced_options = options(&s);
    fenced_options.lock.fenced = true;
    let fenced = Locker::new(
        &format!("s3://{}/bench/{run}/fenced", s.bucket),
        fenced_options,
    )
    .expect("locker");
    let first = fenced.acquire(Wait::No).expect("first fenced grant");
    first.release().expect("release"); // the key now holds a free record, as in use
    let (mut ffloor, mut flock) = (Vec::new(), Vec::new());
    let before = fenced.requests();
    for batch in 0..10 {
        for i in 0..cycles / 10 {
            let t = Instant::now();
            fenced_floor_cycle(
                &client,
                &bucket,
                &creds,
                &fenced_floor_key,
                (batch * cycles + i) as u64,
            );
            ffloor.push(t.elapsed().as_secs_f64() * 1e3);
        }
        for _ in 0..cycles / 10 {
            let t = Instant::now();
            let held = fenced.acquire(Wait::No).expect("acquire");
            held.release().expect("release");
            flock.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    let fenced_requests = (fenced.requests() - before) as f64 / flock.len() as f64;
    let (ffloor, flock) = (sorted(ffloor), sorted(flock));
    println!("| fenced acquire + release of a free key | median ms | p99 ms | requests/cycle |");
    println!("|---|---|---|---|");
    let floor_label = "reqwest: GET + PUT If-Match (held) + PUT If-Match (free) (floor)";
    row(floor_label, &ffloor, 3.0);
    row(
        "sets3lock blocking driver, --fenced",
        &flock,
        fenced_requests,
    );
    ratio("ratio (sets3lock / floor, median)", &flock, &ffloor);
    ratio("fenced / presence, sets3lock (median)", &flock, &lock);
    println!();

    // ---- contended handoff ----
    println!("contended: each section holds {HOLD:?}, each contender waits {THINK:?} before asking again; default polling (100 ms to 3 s, full jitter)");
    println!();
    println!("| contenders | sections | sections/s | requests/acquisition | handoff gap median ms | handoff gap p99 ms |");
    println!("|---|---|---|---|---|---|");
    let mut curves = Vec::new();
    for k in [2usize, 4, 8] {
        let per = 100 / k;
        let url = format!("s3://{}/bench/{run}/contended-{k}", s.bucket);
        let log = Arc::new(Mutex::new(Vec::<(Instant, Instant, usize)>::new()));
        let started = Instant::now();
        let threads: Vec<_> = (0..k)
            .map(|me| {
                let (url, options, log) = (url.clone(), options(&s), log.clone());
                std::thread::spawn(move || {
                    let locker = Locker::new(&url, options).expect("locker");
                    for _ in 0..per {
                        let held = locker.acquire(Wait::Forever).expect("acquire");
                        let acquired = Instant::now();
                        std::thread::sleep(HOLD);
                        held.release().expect("release");
                        log.lock()
                            .expect("log")
                            .push((acquired, Instant::now(), me));
                        std::thread::sleep(THINK);
                    }
                    locker.requests()
                })
            })
            .collect();
        let requests: u64 = threads.into_iter().map(|t| t.join().expect("thread")).sum();
        let elapsed = started.elapsed().as_secs_f64();
        let mut sections = log.lock().expect("log").clone();
        sections.sort_by_key(|(a, _, _)| *a);
        // A handoff: the next section belongs to another contender. (A contender that
        // releases and asks again at once often wins again: that is counted apart.)
        let handoffs: Vec<_> = sections.windows(2).filter(|w| w[0].2 != w[1].2).collect();
        let gaps = sorted(
            handoffs
                .iter()
                .map(|w| w[1].0.saturating_duration_since(w[0].1).as_secs_f64() * 1e3)
                .collect(),
        );
        let same = sections.len().saturating_sub(1) - handoffs.len();
        let n = sections.len();
        // Requests per acquisition: everything sent (polls, losing PUTs, releases) over sections.
        println!(
            "| {k} | {n} ({same} by the same contender) | {:.1} | {:.1} | {:.1} | {:.1} |",
            n as f64 / elapsed,
            requests as f64 / n as f64,
            percentile(&gaps, 0.5),
            percentile(&gaps, 0.99)
        );
        curves.push((k, gaps));
    }
    let svg = plot(&s.name, &curves);
    let path = std::env::var("BENCH_SVG").unwrap_or_else(|_| "handoff-gap.svg".into());
    std::fs::write(&path, svg).expect("write svg");
    println!();
    println!("handoff-gap distribution written to {path}");
}

/// The cumulative distribution of handoff gaps, one line per contender count.
fn plot(server: &str, curves: &[(usize, Vec<f64>)]) -> String {
    let (w, h, left, bottom, top, right) = (640.0, 360.0, 60.0, 40.0, 30.0, 20.0);
    let max = curves
        .iter()
        .flat_map(|(_, g)| g.last().copied())
        .fold(1.0f64, f64::max);
    let x = |ms: f64| left + (ms / max) * (w - left - right);
    let y = |p: f64| h - bottom - p * (h - bottom - top);
    let colours = ["#1f77b4", "#ff7f0e", "#2ca02c"];
    let mut svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">"#
    );
    svg += &format!(
        r#"<rect width="{w}" height="{h}" fill="white"/><text x="{left}" y="18">Gap from one release to the next acquisition ({server}, default polling)</text>"#
    );
    svg += &format!(
        r#"<line x1="{left}" y1="{}" x2="{}" y2="{}" stroke="black"/><line x1="{left}" y1="{top}" x2="{left}" y2="{}" stroke="black"/>"#,
        y(0.0),
        w - right,
        y(0.0),
        y(0.0)
    );
    for i in 0..=4 {
        let p = i as f64 / 4.0;
        svg += &format!(
            r#"<text x="{}" y="{}" text-anchor="end">{p:.2}</text>"#,
            left - 6.0,
            y(p) + 4.0
        );
        let ms = max * p;
        svg += &format!(
            r#"<text x="{}" y="{}" text-anchor="middle">{ms:.0}</text>"#,
            x(ms),
            h - bottom + 16.0
        );
    }
    svg += &format!(
        r#"<text x="{}" y="{}" text-anchor="middle">gap (ms)</text>"#,
        (w + left) / 2.0,
        h - 6.0
    );
    svg += &format!(
        r#"<text x="14" y="{}" transform="rotate(-90 14 {})" text-anchor="middle">fraction of handoffs</text>"#,
        (h) / 2.0,
        h / 2.0
    );
    for (i, (k, gaps)) in curves.iter().enumerate() {
        let n = gaps.len().max(1) as f64;
        let points: Vec<String> = gaps
            .iter()
            .enumerate()
            .map(|(j, g)| format!("{:.1},{:.1}", x(*g), y((j + 1) as f64 / n)))
            .collect();
        let c = colours[i % colours.len()];
        svg += &format!(
            r#"<polyline fill="none" stroke="{c}" stroke-width="2" points="{}"/>"#,
            points.join(" ")
        );
        svg += &format!(
            r#"<text x="{}" y="{}" fill="{c}">{k} contenders</text>"#,
            w - right - 110.0,
            y(0.3) - 16.0 * i as f64
        );
    }
    svg += "</svg>\n";
    svg
}
