#!/usr/bin/env bash
# Two builds of the command, side by side on one local SeaweedFS: lock + `true` + unlock, N
# pairs in shuffled order (so neither always runs after the other), with keys in the
# environment. Wall from posix_spawn to wait4 (median), CPU from wait4's rusage (mean).
# Run it once with two copies of one binary to see the noise.
#
# Usage: bash scripts/bench-ab.sh NEW BEFORE [N]      (default N = 100)
set -euo pipefail
cd "$(dirname "$0")/.."
new=$1 before=$2 n=${3:-100}
trap 'bash scripts/s3-server.sh stop seaweedfs' EXIT
bash scripts/s3-server.sh start seaweedfs
# shellcheck disable=SC1091
. .local/seaweedfs/env
export AWS_EC2_METADATA_DISABLED=true
export XDG_CACHE_HOME="$PWD/.local/bench-cache"
python3 - "$new" "$before" "$n" <<'PY'
import os, random, statistics, sys, time

new, before, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
bucket = os.environ["SETS3LOCK_SEAWEEDFS_BUCKET"]
devnull = os.open(os.devnull, os.O_RDWR)
bins = {"new": new, "before": before}
runs = {k: ([], []) for k in bins}

def run(binary, key):
    argv = [binary, f"s3://{bucket}/bench/ab-{key}", "true"]
    t = time.perf_counter()
    pid = os.posix_spawn(binary, argv, os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1)])
    _, status, ru = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{argv} failed: {status}")
    return (time.perf_counter() - t) * 1e3, (ru.ru_utime + ru.ru_stime) * 1e3

for k, b in bins.items():  # warm up: page cache, the store check's verdict
    run(b, k)
random.seed(7)
for _ in range(n):
    order = list(bins.items())
    random.shuffle(order)
    for k, b in order:
        wall, cpu = run(b, k)
        runs[k][0].append(wall)
        runs[k][1].append(cpu)
for k, (wall, cpu) in runs.items():
    size = os.path.getsize(bins[k]) / 1e6
    print(f"{k:7} {size:5.1f} MB  wall median {statistics.median(wall):.2f} ms  CPU mean {statistics.mean(cpu):.2f} ms")
w = statistics.median(runs["new"][0]) / statistics.median(runs["before"][0])
c = statistics.mean(runs["new"][1]) / statistics.mean(runs["before"][1])
print(f"new/before: wall {w:.2f}x, CPU {c:.2f}x ({n} pairs)")
PY
