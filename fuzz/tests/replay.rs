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
