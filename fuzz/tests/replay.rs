//! Replays every committed corpus file through its target on stable Rust, so that CI keeps
//! every input the fuzzer ever found interesting (and every crash it ever found) passing.

use std::path::Path;

fn replay(target: &str, run: fn(&[u8])) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target);
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("readable corpus entry").path();
        let data = std::fs::read(&path).expect("readable corpus file");
        run(&data);
        n += 1;
    }
    for (t, seed) in sets3lock_fuzz::seeds() {
        if t == target {
            run(&seed);
            n += 1;
        }
    }
    assert!(n > 0, "no corpus for {target}");
    eprintln!("{target}: {n} inputs");
    n
}

#[test]
fn classify() {
    replay("classify", sets3lock_fuzz::classify);
}

/// Azure's and GCS's tables also get every input found for S3's.
#[test]
fn classify_azure() {
    replay("classify_azure", sets3lock_fuzz::classify_azure);
    replay("classify", sets3lock_fuzz::classify_azure);
}

#[test]
fn classify_gcs() {
    replay("classify_gcs", sets3lock_fuzz::classify_gcs);
    replay("classify", sets3lock_fuzz::classify_gcs);
}

#[test]
fn record() {
    replay("record", sets3lock_fuzz::record);
}

#[test]
fn url() {
    replay("url", sets3lock_fuzz::url);
}

#[test]
fn machine() {
    replay("machine", sets3lock_fuzz::machine);
}

/// Random inputs on stable, from a fixed seed (the fuzzer proper needs nightly): the machine
/// target with every step kind, handles' adoption and detach included, never panics and
/// never reports a grant that no write of its own produced; handle parsing round-trips.
#[test]
fn random_inputs_on_stable() {
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for i in 0..8_000 {
        let len = 16 + (next() % 600) as usize;
        let data: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        sets3lock_fuzz::machine(&data);
        if i % 4 == 0 {
            let handle = format!(
                "s3://bucket/k{}#sets3lock-hold:owner={:032x},lease_ms={}{}",
                i,
                u128::from(next()),
                next() % 100_000,
                if i % 8 == 0 {
                    format!(",token={}", next() % 50)
                } else {
                    String::new()
                }
            );
            sets3lock_fuzz::url(handle.as_bytes());
            sets3lock_fuzz::url(&data);
        }
    }
}

/// The wire layer's builders also get every input found for the reply tables.
#[test]
fn wire() {
    for (target, run) in [
        ("wire_s3", sets3lock_fuzz::wire_s3 as fn(&[u8])),
        ("wire_azure", sets3lock_fuzz::wire_azure),
        ("wire_gcs", sets3lock_fuzz::wire_gcs),
    ] {
        replay(target, run);
        replay("classify", run);
        replay("url", run);
    }
}
