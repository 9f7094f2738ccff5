#!/usr/bin/env bash
# The whole test suite: unit, scenario, simulation, doc tests, and the fuzz corpora replayed
# on stable. Usage: bash scripts/test.sh   (SIM_CASES=N sets schedules per property; 2000)
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== workspace tests (unit, scenarios, simulation, doc tests)"
cargo test --workspace --locked

echo "== fuzz corpora replayed on stable"
cargo test --manifest-path fuzz/Cargo.toml --no-default-features --locked
