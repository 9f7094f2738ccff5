#!/usr/bin/env bash
# The whole test suite: unit, scenario, simulation, doc tests, the conformance suite against
# the mock, SeaweedFS and MiniStack (installed and started here, stopped at the end), and the
# fuzz corpora replayed on stable.
#   bash scripts/test.sh          (SIM_CASES=N sets the schedules per property; default 2000)
set -euo pipefail
cd "$(dirname "$0")/.."

cleanup() {
  bash scripts/s3-server.sh stop seaweedfs || true
  bash scripts/s3-server.sh stop ministack || true
}
trap cleanup EXIT

echo "== starting the local S3-compatible servers"
bash scripts/s3-server.sh start seaweedfs
bash scripts/s3-server.sh start ministack
# shellcheck disable=SC1091
. .local/seaweedfs/env
# shellcheck disable=SC1091
. .local/ministack/env
export SETS3LOCK_REQUIRE_S3=1

echo "== workspace tests (unit, scenarios, simulation, conformance, doc tests)"
cargo test --workspace --locked

echo "== fuzz corpora replayed on stable"
cargo test --manifest-path fuzz/Cargo.toml --no-default-features --locked
