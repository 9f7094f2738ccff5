#!/usr/bin/env bash
# The blocking face of two revisions, side by side on one local SeaweedFS: the same program
# (backends/drivers/examples/blocking_cycles.rs, copied into the older tree) built in release
# from each, its size as built and stripped, the threads it runs while it holds a lock, and
# the median of ROUNDS medians of N acquire + release cycles, the two builds alternating.
#
# Usage: bash scripts/bench-blocking.sh BEFORE [N] [ROUNDS]   (default N = 200, ROUNDS = 6)
#   BENCH_HOST=localhost bash scripts/bench-blocking.sh ...  reaches the server by that name (a
#   lookup per request, as for a real cloud endpoint; /etc/hosts answers it) instead of
#   127.0.0.1, and counts the threads each build starts (strace -f, if installed).
set -euo pipefail
cd "$(dirname "$0")/.."
before=${1:?usage: bash scripts/bench-blocking.sh BEFORE-REVISION [N] [ROUNDS]}
n=${2:-200} rounds=${3:-6}
root=$PWD out=$PWD/.local/bench-blocking tree=$PWD/.local/bench-blocking/tree
mkdir -p "$out"
git worktree remove --force "$tree" 2>/dev/null || true
git worktree add -q --detach "$tree" "$before"
trap 'git worktree remove --force "$tree"; bash scripts/s3-server.sh stop seaweedfs' EXIT
cp backends/drivers/examples/blocking_cycles.rs "$tree/backends/drivers/examples/"
# One target directory: the dependencies both share are built once. Each binary is copied
# out before the other build overwrites it.
cargo build -q --release --locked -p sets3lock --example blocking_cycles
cp target/release/examples/blocking_cycles "$out/new.bin"
(cd "$tree" && cargo build -q --release --locked -p sets3lock --example blocking_cycles --target-dir "$root/target")
cp target/release/examples/blocking_cycles "$out/before.bin"
bash scripts/s3-server.sh start seaweedfs
# shellcheck disable=SC1091
. .local/seaweedfs/env
export AWS_EC2_METADATA_DISABLED=true
if [ -n "${BENCH_HOST:-}" ]; then
  export AWS_ENDPOINT_URL=${AWS_ENDPOINT_URL/127.0.0.1/$BENCH_HOST}
  if command -v strace >/dev/null; then
    for k in new before; do
      starts=$(strace -f -e trace=clone,clone3 -o /dev/stdout "$out/$k.bin" \
        "s3://$SETS3LOCK_SEAWEEDFS_BUCKET/bench/blocking-threads-$k" "$n" 2>/dev/null |
        grep -cE 'clone3?\(' || true)
      echo "$k: $starts threads started for $n cycles through $AWS_ENDPOINT_URL"
    done
  fi
fi
python3 - "$out" "$n" "$rounds" <<'PY'
import os, shutil, statistics, subprocess, sys

out, n, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
bucket = os.environ["SETS3LOCK_SEAWEEDFS_BUCKET"]
runs = {"new": [], "before": []}
for k in runs:
    stripped = f"{out}/{k}.stripped"
    shutil.copy(f"{out}/{k}.bin", stripped)
    subprocess.run(["strip", stripped], check=True)
for r in range(rounds):
    order = ["new", "before"] if r % 2 == 0 else ["before", "new"]
    for k in order:
        line = subprocess.run([f"{out}/{k}.bin", f"s3://{bucket}/bench/blocking-{k}", n],
                              check=True, capture_output=True, text=True).stdout.split()
        runs[k].append(dict(zip(line[0::2], line[1::2])))
for k, rs in runs.items():
    med = statistics.median(float(x["median_ms"]) for x in rs)
    p99 = statistics.median(float(x["p99_ms"]) for x in rs)
    size = os.path.getsize(f"{out}/{k}.bin") / 1e6
    small = os.path.getsize(f"{out}/{k}.stripped") / 1e6
    print(f"{k:7} {size:5.1f} MB ({small:.1f} MB stripped)  threads while held {rs[0]['threads_held']}  "
          f"cycle median {med:.3f} ms, p99 {p99:.3f} ms")
ratio = statistics.median(float(x["median_ms"]) for x in runs["new"]) / \
    statistics.median(float(x["median_ms"]) for x in runs["before"])
print(f"new/before: cycle {ratio:.2f}x ({rounds} rounds of {n} cycles)")
PY
