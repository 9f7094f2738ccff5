#!/usr/bin/env bash
# The cost of the instruments (feature metrics) on an uncontended acquire + release cycle,
# side by side: the `cycles` example built without the feature and with it (a recorder that
# keeps every series installed), run in alternating rounds against one local SeaweedFS
# (started and stopped here). Prints each round, the medians and their ratio.
#   bash scripts/bench-metrics.sh        (BENCH_CYCLES per round, default 300; BENCH_ROUNDS, 7)
set -euo pipefail
cd "$(dirname "$0")/.."
cycles=${BENCH_CYCLES:-300}
rounds=${BENCH_ROUNDS:-7}
trap 'bash scripts/s3-server.sh stop seaweedfs' EXIT
bash scripts/s3-server.sh start seaweedfs
# shellcheck disable=SC1091
. .local/seaweedfs/env
mkdir -p .local/bench
cargo build --quiet --release --locked -p sets3lock --example cycles
cp target/release/examples/cycles .local/bench/cycles-off
cargo build --quiet --release --locked -p sets3lock --example cycles --features metrics
cp target/release/examples/cycles .local/bench/cycles-on
url="s3://$SETS3LOCK_SEAWEEDFS_BUCKET/bench/metrics-$$"
off=() on=()
for r in $(seq 1 "$rounds"); do
  a=$(.local/bench/cycles-off "$url" "$cycles" | awk '/mean_us/ {print $4}')
  b=$(.local/bench/cycles-on "$url" "$cycles" | awk '/mean_us/ {print $4}')
  echo "round $r: off ${a} us, on ${b} us"
  off+=("$a") on+=("$b")
done
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
m_off=$(median "${off[@]}") m_on=$(median "${on[@]}")
echo "median cycle: off ${m_off} us, on ${m_on} us, ratio $(awk -v a="$m_on" -v b="$m_off" 'BEGIN {printf "%.3f", a/b}') (goal: within 1.05)"
