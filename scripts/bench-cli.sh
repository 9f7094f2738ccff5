#!/usr/bin/env bash
# Side by side, in one run, on the same local SeaweedFS: lock + `true` + unlock with
#   1. the seed's recipe, the AWS CLI: put-object --if-none-match '*', run, delete-object --if-match
#   2. sets3lock s3://bucket/key true
#   3. flock on a local file (the floor: no network at all)
# Runs are interleaved (one of each, N times); prints medians and ratios.
# Usage: bash scripts/bench-cli.sh [N]     (awscli is installed from PyPI into .local/)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-30}
trap 'bash scripts/s3-server.sh stop seaweedfs' EXIT
bash scripts/s3-server.sh start seaweedfs
# shellcheck disable=SC1091
. .local/seaweedfs/env
[ -x .local/venv/bin/aws ] || .local/venv/bin/pip install --quiet --disable-pip-version-check awscli
cargo build --release --locked -p sets3lock-cli --bin sets3lock 2>&1 | tail -1
export AWS_EC2_METADATA_DISABLED=true
python3 - "$n" <<'PY'
import json, os, statistics, subprocess, sys, tempfile, time
n = int(sys.argv[1])
bucket = os.environ["SETS3LOCK_SEAWEEDFS_BUCKET"]
endpoint = os.environ["AWS_ENDPOINT_URL"]
aws = [".local/venv/bin/aws", "--endpoint-url", endpoint, "s3api"]
body = tempfile.NamedTemporaryFile(delete=False); body.write(b'{"lock":1}'); body.close()
lockfile = tempfile.NamedTemporaryFile(delete=False).name

def awscli():
    out = subprocess.run(aws + ["put-object", "--bucket", bucket, "--key", "bench/awscli",
                                "--if-none-match", "*", "--body", body.name],
                         check=True, capture_output=True, text=True).stdout
    etag = json.loads(out)["ETag"]
    subprocess.run(["true"], check=True)
    subprocess.run(aws + ["delete-object", "--bucket", bucket, "--key", "bench/awscli", "--if-match", etag],
                   check=True, capture_output=True)

def sets3lock():
    subprocess.run(["target/release/sets3lock", f"s3://{bucket}/bench/sets3lock", "true"], check=True)

def flock():
    subprocess.run(["flock", lockfile, "true"], check=True)

runs = {"AWS CLI recipe": [], "sets3lock": [], "flock (local floor)": []}
for _ in range(n):
    for name, f in (("AWS CLI recipe", awscli), ("sets3lock", sets3lock), ("flock (local floor)", flock)):
        t = time.perf_counter(); f(); runs[name].append((time.perf_counter() - t) * 1e3)
med = {k: statistics.median(v) for k, v in runs.items()}
print(f"\nlock + true + unlock, {n} interleaved runs each, SeaweedFS on 127.0.0.1\n")
print("| method | median ms | min ms | max ms | vs sets3lock |")
print("|---|---|---|---|---|")
for k, v in runs.items():
    print(f"| {k} | {med[k]:.1f} | {min(v):.1f} | {max(v):.1f} | {med[k] / med['sets3lock']:.2f}x |")
PY
