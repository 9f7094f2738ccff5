#!/usr/bin/env bash
# Mutation testing: how many small changes to the code (a `<` for a `<=`, a deleted match
# arm, a function returning a default) the tests notice. Not run by CI (a full run of the core
# takes about an hour on two cores); its summary goes into docs/VERIFICATION.md ("Mutation testing").
#
#   bash scripts/mutants.sh core                  # src/ (the core), against the core's tests
#   bash scripts/mutants.sh core src/rng.rs ...   # only these files of the core
#   bash scripts/mutants.sh engine                # the drivers' engine, http and signing
#   bash scripts/mutants.sh cli                   # the command's argument handling
#   bash scripts/mutants.sh signin                # AWS profile parsing and chain resolution
#   bash scripts/mutants.sh refresh               # the credentials cache (its score is reported,
#                                                 # not held to a bar: see VERIFICATION.md)
#
#   ITERATE=1 bash scripts/mutants.sh core       # again, testing only what was not caught
#
# cargo-mutants is installed from crates.io if missing. SIM_CASES is CI's value (2000) unless
# set. Results: mutants.out/<target>/ (caught.txt, missed.txt, timeout.txt, unviable.txt), and
# a one-line summary with the score caught / (caught + missed).
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:-core}
shift || true
command -v cargo-mutants >/dev/null || cargo install cargo-mutants --locked
export SIM_CASES=${SIM_CASES:-2000}
# Release builds with incremental compilation: rebuilds take seconds, and the simulation runs
# at release speed. (Release has no overflow checks: a mutant that wraps a counter is judged
# by the tests' assertions, not by a debug panic.)
export CARGO_PROFILE_RELEASE_INCREMENTAL=true
out="mutants.out/$target"
mkdir -p "$out"
files=()
case "$target" in
  core)
    package=sets3lock-proto
    if [ $# -gt 0 ]; then for f in "$@"; do files+=(--file "$f"); done
    else files=(--file 'src/**/*.rs'); fi ;;
  engine)
    package=sets3lock
    files=(--file backends/drivers/src/driver/engine.rs --file backends/drivers/src/driver/http.rs
           --file backends/drivers/src/driver/server_time.rs) ;;
  cli)
    package=sets3lock-cli
    files=(--file cli/src/cli.rs) ;;
  signin)
    package=sets3lock
    files=(--file backends/drivers/src/signin/aws/profile/parse.rs
           --file backends/drivers/src/signin/aws/profile/mod.rs
           --file backends/drivers/src/signin/aws/profile/chain.rs
           --file backends/drivers/src/signin/aws/resolve.rs) ;;
  refresh)
    package=sets3lock
    files=(--file backends/drivers/src/signin/refresh.rs) ;;
  *) echo "unknown target $target: core, engine, cli, signin or refresh" >&2; exit 2 ;;
esac
# Sign-in's unit tests need no server and build fastest unoptimized: the library's own tests of
# sign-in, nothing else. The rest: the test targets only (`--tests`: the doc tests add minutes
# per mutant and little else), and not the exhaustive exploration (a minute per mutant; its
# teeth are shown by planted bugs, docs/VERIFICATION.md): the score is a lower bound.
case "$target" in
  signin | refresh) build=() tests=(--lib -- signin::) ;;
  *) build=(--profile release) tests=(--tests -- --skip every_interleaving) ;;
esac
# The drivers' and the command's tests need the servers (as in scripts/test.sh).
case "$target" in
  engine | cli)
    trap 'for s in seaweedfs ministack; do bash scripts/s3-server.sh stop "$s" || true; done' EXIT
    for s in seaweedfs ministack; do
      bash scripts/s3-server.sh start "$s"
      # shellcheck disable=SC1090
      . ".local/$s/env"
    done
    unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_ENDPOINT_URL AWS_REGION ;;
esac
cargo mutants -p "$package" --test-package "$package" "${files[@]}" \
  ${ITERATE:+--iterate} "${build[@]}" --timeout-multiplier 3 -j 1 -o "$out" \
  -- "${tests[@]}" || true
count() { [ -f "$out/mutants.out/$1.txt" ] && wc -l < "$out/mutants.out/$1.txt" || echo 0; }
caught=$(count caught) missed=$(count missed) timeout=$(count timeout) unviable=$(count unviable)
score=$(python3 -c "c,m=$caught,$missed; print(f'{100*c/(c+m):.1f}%' if c+m else 'n/a')")
echo "$target: $caught caught, $missed missed, $timeout timeouts, $unviable unviable: $score caught of viable (caught / (caught + missed))"
if [ -n "${ITERATE:-}" ]; then
  echo "this pass only; earlier passes caught (or found unviable) $(count previously_caught) more"
fi
echo "missed mutants: $out/mutants.out/missed.txt"
