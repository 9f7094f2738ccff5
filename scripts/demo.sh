#!/usr/bin/env bash
# The main job, end to end on this machine: start a local S3-compatible server (SeaweedFS,
# installed into .local/), build sets3lock, and run two programs under the same lock at
# once: the second waits for the first. Then show the lock's status and stop the server.
set -euo pipefail
cd "$(dirname "$0")/.."
trap 'bash scripts/s3-server.sh stop seaweedfs' EXIT
bash scripts/s3-server.sh start seaweedfs
# shellcheck disable=SC1091
. .local/seaweedfs/env
cargo build --release --locked -p sets3lock-cli --bin sets3lock 2>&1 | tail -1
bin=target/release/sets3lock
url=s3://$SETS3LOCK_SEAWEEDFS_BUCKET/demo/job

job='echo "  [$(date +%T.%N | cut -c1-12)] $1 starts (pid $$, lock ETag $SETS3LOCK_ETAG)"; sleep 2; echo "  [$(date +%T.%N | cut -c1-12)] $1 ends"'
echo "== two runs of: sets3lock $url sh -c '...'"
"$bin" "$url" sh -c "$job" sh first &
sleep 0.3
"$bin" "$url" sh -c "$job" sh second &
sleep 1
echo "== while they run: sets3lock status $url"
"$bin" status "$url" || true
wait
echo "== after: sets3lock status $url"
"$bin" status "$url"
