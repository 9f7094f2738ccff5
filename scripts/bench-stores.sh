#!/usr/bin/env bash
# Benchmarks on Azurite and fake-gcs-server (started and stopped here): an uncontended
# acquire + release through sets3lock against the same requests made by hand, side by side.
# Usage: bash scripts/bench-stores.sh   (BENCH_CYCLES=N, default 200)
set -euo pipefail
cd "$(dirname "$0")/.."
trap 'bash scripts/s3-server.sh stop azurite; bash scripts/s3-server.sh stop fake-gcs' EXIT
for s in azurite fake-gcs; do
  bash scripts/s3-server.sh start "$s"
  # shellcheck disable=SC1090
  . ".local/$s/env"
done
cargo bench -p sets3lock --features azure,gcs --bench stores
