#!/usr/bin/env bash
# The Python package's benchmark (bindings/python/bench/cycle.py), side by side with the Rust
# blocking driver on the same local SeaweedFS (started and stopped here): acquire + release
# cycles from Python against the Rust example `cycles`, then memory per held lock. It builds
# the wheel into a fresh virtual environment under .local/ as the test script does.
#   bash scripts/bench-python.sh        (BENCH_CYCLES, BENCH_ROUNDS, BENCH_HELD)
set -euo pipefail
cd "$(dirname "$0")/.."
trap 'bash scripts/s3-server.sh stop seaweedfs' EXIT
bash scripts/s3-server.sh start seaweedfs
# shellcheck disable=SC1091
. .local/seaweedfs/env
venv=.local/py-bench
rm -rf "$venv" .local/wheels-bench
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check maturin==1.16.0
"$venv/bin/maturin" build --quiet --release --locked -m bindings/python/Cargo.toml -o .local/wheels-bench
"$venv/bin/pip" install --quiet --disable-pip-version-check .local/wheels-bench/sets3lock-*.whl
cargo build --quiet --release --locked -p sets3lock --example cycles
"$venv/bin/python" bindings/python/bench/cycle.py target/release/examples/cycles "s3://$SETS3LOCK_SEAWEEDFS_BUCKET"
