#!/usr/bin/env bash
# Benchmarks against real local S3-compatible servers (started and stopped here): the table
# for docs/BENCHMARKS.md and docs/handoff-gap.svg. Usage: bash scripts/bench-s3.sh [seaweedfs|ministack]
set -euo pipefail
cd "$(dirname "$0")/.."
server=${1:-seaweedfs}
trap 'bash scripts/s3-server.sh stop "$server"' EXIT
bash scripts/s3-server.sh start "$server"
# shellcheck disable=SC1090
. ".local/$server/env"
BENCH_SERVER=$server BENCH_SVG=${BENCH_SVG:-$PWD/docs/handoff-gap.svg} cargo bench -p sets3lock --bench s3
