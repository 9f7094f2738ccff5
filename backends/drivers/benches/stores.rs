//! Benchmarks on the two other stores' local emulators, side by side in one run: an
//! uncontended acquire + release through sets3lock against the floor of the same requests
//! made by hand with reqwest on one pooled connection.
//! - Azurite (Azure Blob Storage): presence mode (Put Blob `If-None-Match: *`, Delete Blob
//!   `If-Match`) and fenced mode (Get Blob, then two Put Blob `If-Match`), both with one SAS.
//! - fake-gcs-server (GCS): fenced mode (a download, then two multipart uploads with
//!   `ifGenerationMatch`); presence mode is not safe there (its DELETE ignores the condition).
//!
//! `bash scripts/bench-stores.sh` starts both emulators and runs this. Environment:
//! SETS3LOCK_AZURITE_* and SETS3LOCK_FAKEGCS_* (the servers' env files), BENCH_CYCLES.

#[path = "../tests/support/sas.rs"]
#[allow(unreachable_pub)] // shared with the tests
mod sas;

use sets3lock::{blocking::Locker, AzureSettings, GcsSettings, Options, StoreCheck, Wait};
use std::time::Instant;

fn var(name: &str) -> String {
    std::env::var(name)
        .unwrap_or_else(|_| panic!("{name} is not set: run bash scripts/bench-stores.sh"))
}

fn median(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    let at = |p: f64| v[(((v.len() - 1) as f64) * p).round() as usize];
    (at(0.5), at(0.99))
}

/// The async face of a locker: its own lock beside the blocking one's, cycled on a
/// current-thread tokio runtime driven from this thread.
struct AsyncFace {
    runtime: tokio::runtime::Runtime,
    locker: sets3lock::Locker,
}

impl AsyncFace {
    fn new(url: &str, options: Options) -> AsyncFace {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let locker = runtime
            .block_on(async { sets3lock::Locker::new(&format!("{url}-async"), options) })
            .expect("async locker");
        AsyncFace { runtime, locker }
    }

    fn cycle(&self) {
        self.runtime.block_on(async {
            let held = self.locker.acquire(Wait::No).await.expect("acquire");
            held.release().await.expect("release");
        })
    }
}

/// One row group: the floor, sets3lock's blocking face and its async face, in alternating
/// batches.
fn side_by_side(
    name: &str,
    cycles: usize,
    mut floor: impl FnMut(u64),
    locker: &Locker,
    face: &AsyncFace,
    floor_requests: u64,
) {
    floor(0); // warm the connection
    let (mut f, mut l, mut a) = (Vec::new(), Vec::new(), Vec::new());
    let _ = locker.acquire(Wait::No).and_then(|h| h.release()); // and the lockers'
    face.cycle();
    let (before, async_before) = (locker.requests(), face.locker.requests());
    for batch in 0..10u64 {
        for i in 0..cycles / 10 {
            let t = Instant::now();
            floor(batch * cycles as u64 + i as u64 + 1);
            f.push(t.elapsed().as_secs_f64() * 1e3);
        }
        for _ in 0..cycles / 10 {
            let t = Instant::now();
            let held = locker.acquire(Wait::No).expect("acquire");
            held.release().expect("release");
            l.push(t.elapsed().as_secs_f64() * 1e3);
        }
        for _ in 0..cycles / 10 {
            let t = Instant::now();
            face.cycle();
            a.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    let per_cycle = (locker.requests() - before) as f64 / l.len() as f64;
    let async_per_cycle = (face.locker.requests() - async_before) as f64 / a.len() as f64;
    let ((fm, fp), (lm, lp), (am, ap)) = (median(f), median(l), median(a));
    println!("| {name}: floor by hand | {fm:.2} | {fp:.2} | {floor_requests} |");
    println!("| {name}: sets3lock blocking driver | {lm:.2} | {lp:.2} | {per_cycle:.2} |");
    println!(
        "| {name}: ratio (blocking / floor, median) | {:.2}x | | |",
        lm / fm
    );
    println!("| {name}: sets3lock async driver (tokio, current thread) | {am:.2} | {ap:.2} | {async_per_cycle:.2} |");
    println!(
        "| {name}: ratio (async / floor, median) | {:.2}x | | |",
        am / fm
    );
}

fn azure_floor<'a>(
    client: &'a reqwest::blocking::Client,
    base: &'a str,
    sas: &'a str,
    fenced: bool,
    run: &'a str,
) -> impl FnMut(u64) + use<'a> {
    let put = move |etag: Option<&str>, n: u64, key: &str| {
        let mut r = client
            .put(format!("{base}/{key}?{sas}"))
            .header("x-ms-version", "2023-11-03")
            .header("x-ms-blob-type", "BlockBlob")
            .header("content-type", "application/json")
            .body(format!("{{\"n\":{n}}}"));
        r = match etag {
            Some(e) => r.header("if-match", e),
            None => r.header("if-none-match", "*"),
        };
        let reply = r.send().expect("put");
        assert_eq!(reply.status(), 201, "floor Put Blob");
        reply.headers()["etag"].to_str().expect("etag").to_owned()
    };
    let fenced_key = format!("bench/{run}/floor-fenced");
    let key = format!("bench/{run}/floor");
    if fenced {
        put(None, 0, &fenced_key);
    }
    move |n| {
        if fenced {
            let reply = client
                .get(format!("{base}/{fenced_key}?{sas}"))
                .header("x-ms-version", "2023-11-03")
                .send()
                .expect("get");
            assert_eq!(reply.status(), 200, "floor Get Blob");
            let etag = reply.headers()["etag"].to_str().expect("etag").to_owned();
            let etag = put(Some(&etag), n, &fenced_key);
            put(Some(&etag), n, &fenced_key);
        } else {
            let etag = put(None, n, &key);
            let reply = client
                .delete(format!("{base}/{key}?{sas}"))
                .header("x-ms-version", "2023-11-03")
                .header("if-match", etag)
                .send()
                .expect("delete");
            assert_eq!(reply.status(), 202, "floor Delete Blob");
        }
    }
}

fn gcs_floor<'a>(
    client: &'a reqwest::blocking::Client,
    endpoint: &'a str,
    bucket: &'a str,
    run: &'a str,
) -> impl FnMut(u64) + use<'a> {
    let name = format!("bench/{run}/floor-fenced");
    let key = name.replace('/', "%2F");
    let path = format!("{endpoint}/storage/v1/b/{bucket}/o/{key}?alt=media");
    let upload = move |generation: &str, n: u64| {
        let boundary = "bench-boundary";
        let body = format!(
            "--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n{{\"name\":\"{name}\",\"contentType\":\"application/json\"}}\r\n--{boundary}\r\nContent-Type: application/json\r\n\r\n{{\"n\":{n}}}\r\n--{boundary}--\r\n"
        );
        let reply = client
            .post(format!(
                "{endpoint}/upload/storage/v1/b/{bucket}/o?uploadType=multipart&name={key}&ifGenerationMatch={generation}"
            ))
            .header("content-type", format!("multipart/related; boundary={boundary}"))
            .body(body)
            .send()
            .expect("upload");
        assert_eq!(reply.status(), 200, "floor upload");
        let json: serde_json::Value =
            serde_json::from_slice(&reply.bytes().expect("body")).expect("json");
        json["generation"].as_str().expect("generation").to_owned()
    };
    upload("0", 0);
    move |n| {
        let reply = client.get(&path).send().expect("get");
        assert_eq!(reply.status(), 200, "floor download");
        let generation = reply.headers()["x-goog-generation"]
            .to_str()
            .expect("generation")
            .to_owned();
        let generation = upload(&generation, n);
        upload(&generation, n);
    }
}

fn main() {
    let cycles: usize = std::env::var("BENCH_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let run = format!("{:08x}", std::process::id());
    let client = reqwest::blocking::Client::new();
    println!("{cycles} cycles each, side by side in 10 alternating batches");
    println!();
    println!("| uncontended acquire + release | median ms | p99 ms | requests/cycle |");
    println!("|---|---|---|---|");

    let (account, key, container) = (
        var("SETS3LOCK_AZURITE_ACCOUNT"),
        var("SETS3LOCK_AZURITE_KEY"),
        var("SETS3LOCK_AZURITE_CONTAINER"),
    );
    let endpoint = var("SETS3LOCK_AZURITE_ENDPOINT");
    let sas = sas::service_sas(&account, &key, &container, "rwd");
    let base = format!("{endpoint}/{container}");
    for fenced in [false, true] {
        let mut azure = AzureSettings::default();
        azure.account = Some(account.clone());
        azure.sas = Some(sas.clone());
        azure.endpoint = Some(sets3lock::parse_endpoint(&endpoint).expect("endpoint"));
        let mut options = Options::default();
        options.azure = azure;
        options.store_check = StoreCheck::Off;
        options.lock.fenced = fenced;
        let mode = if fenced { "fenced" } else { "presence" };
        let url = format!("az://{container}/bench/{run}/{mode}");
        let face = AsyncFace::new(&url, options.clone());
        let locker = Locker::new(&url, options).expect("locker");
        let floor_requests = if fenced { 3 } else { 2 };
        side_by_side(
            &format!("Azurite, {mode}"),
            cycles,
            azure_floor(&client, &base, &sas, fenced, &run),
            &locker,
            &face,
            floor_requests,
        );
    }

    let (endpoint, bucket) = (
        var("SETS3LOCK_FAKEGCS_ENDPOINT"),
        var("SETS3LOCK_FAKEGCS_BUCKET"),
    );
    let mut gcs = GcsSettings::default();
    gcs.endpoint = Some(sets3lock::parse_endpoint(&endpoint).expect("endpoint"));
    gcs.anonymous = true;
    let mut options = Options::default();
    options.gcs = gcs;
    options.store_check = StoreCheck::Off;
    options.lock.fenced = true;
    // The store alone (no core, no driver thread): the same three requests through the
    // library's client, to tell the store's cost from the driver's.
    let store = sets3lock::Client::in_store(sets3lock::proto::Scheme::Gcs, &bucket, &options)
        .expect("client");
    let store_key = format!("bench/{run}/store-only");
    let body = |n: u64| bytes::Bytes::from(format!("{{\"n\":{n}}}"));
    let first = store.send(
        &store_key,
        &sets3lock::proto::Intent::PutIfNoneMatch { body: body(0) },
    );
    assert!(
        matches!(first, sets3lock::proto::Response::Written { .. }),
        "{first:?}"
    );
    let mut times = Vec::new();
    for n in 1..=cycles as u64 {
        let t = Instant::now();
        let sets3lock::proto::Response::Object { etag, .. } = store.send(
            &store_key,
            &sets3lock::proto::Intent::Get {
                if_none_match: None,
            },
        ) else {
            panic!("store-only GET")
        };
        let mut etag = etag;
        for _ in 0..2 {
            match store.send(
                &store_key,
                &sets3lock::proto::Intent::PutIfMatch {
                    etag,
                    body: body(n),
                },
            ) {
                sets3lock::proto::Response::Written { etag: e } => etag = e,
                other => panic!("store-only PUT: {other:?}"),
            }
        }
        let _ = etag;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let (m, p) = median(times);
    println!(
        "| fake-gcs-server, fenced: the store alone (Client::send x3) | {m:.2} | {p:.2} | 3 |"
    );
    let url = format!("gs://{bucket}/bench/{run}/fenced");
    let face = AsyncFace::new(&url, options.clone());
    let locker = Locker::new(&url, options).expect("locker");
    side_by_side(
        "fake-gcs-server, fenced",
        cycles,
        gcs_floor(&client, &endpoint, &bucket, &run),
        &locker,
        &face,
        3,
    );
}
