#!/usr/bin/env bash
# The Python package's tests. Builds the wheel with maturin (the dev profile, or
# SETS3LOCK_WHEEL_PROFILE) into .local/wheels and installs it into a fresh virtualenv,
# .local/py-venv, recreated on every run (so a missing build or packaging step fails here, not
# on a user's machine); checks that
# `pip install ./bindings/python` works too (.local/py-venv-pip); type-checks the examples, the
# tests and the package's own Python and stubs with mypy --strict; then runs the pytest suite
# (bindings/python/tests) with a per-test timeout, against the wheel as installed; and again on
# CPython 3.9 (the oldest the abi3 wheel supports) and 3.13, where pyenv has them.
#
#   bash scripts/test-python.sh
#
# Servers: this script starts none. scripts/test.sh starts SeaweedFS, Azurite and
# fake-gcs-server, exports their variables (SETS3LOCK_SEAWEEDFS_*, SETS3LOCK_AZURITE_*,
# SETS3LOCK_FAKEGCS_*) and SETS3LOCK_REQUIRE_S3=1, then calls this. Run by hand, a server whose
# variables are not set is taken from its .local/NAME/env if that file exists (a server started
# with `bash scripts/s3-server.sh start NAME`); the tests of a server still missing are skipped,
# or fail under SETS3LOCK_REQUIRE_S3=1.
#
# The command's tests compare the installed `sets3lock` console script with the Rust binary,
# built here (cargo build --release -p sets3lock-cli) unless SETS3LOCK_RUST_BIN names one.
# SETS3LOCK_BUILD_LOCK=FILE runs each build under `flock FILE` (to share a machine's cores).
# SETS3LOCK_PYTEST_ARGS adds arguments to pytest (e.g. "-k fork -x"). SETS3LOCK_WHEEL tests a
# wheel built elsewhere (scripts/release.sh's) instead of building one.
set -euo pipefail
cd "$(dirname "$0")/.."

maturin_version=1.16.0
pytest_version=8.4.2
pytest_timeout_version=2.4.0
mypy_version=1.18.2

root=$(pwd)
venv=$root/.local/py-venv
wheels=$root/.local/wheels
export PYTHONDONTWRITEBYTECODE=1

build() {
  if [ -n "${SETS3LOCK_BUILD_LOCK:-}" ]; then flock "$SETS3LOCK_BUILD_LOCK" "$@"; else "$@"; fi
}

for pair in seaweedfs:SEAWEEDFS azurite:AZURITE fake-gcs:FAKEGCS; do
  name=${pair%%:*} prefix=${pair#*:}
  var=SETS3LOCK_${prefix}_ENDPOINT
  if [ -z "${!var:-}" ] && [ -f ".local/$name/env" ]; then
    echo "== $var is not set: using .local/$name/env"
    # shellcheck disable=SC1090
    . ".local/$name/env"
  fi
done

echo "== a fresh virtualenv: .local/py-venv (maturin $maturin_version, pytest $pytest_version, mypy $mypy_version)"
rm -rf "$venv" "$wheels"
python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check \
  "maturin==$maturin_version" "pytest==$pytest_version" \
  "pytest-timeout==$pytest_timeout_version" "mypy==$mypy_version"

# SETS3LOCK_WHEEL names a wheel to test (scripts/test.sh gives the release's, from
# scripts/release.sh). Without it a wheel is built with the dev profile, on the artifacts the
# Rust tests built (SETS3LOCK_WHEEL_PROFILE=release for a release build).
profile=${SETS3LOCK_WHEEL_PROFILE:-dev}
if [ -n "${SETS3LOCK_WHEEL:-}" ]; then
  echo "== the wheel: $SETS3LOCK_WHEEL"
  mkdir -p "$wheels"
  cp "$SETS3LOCK_WHEEL" "$wheels/"
else
  echo "== the wheel: maturin build --profile $profile"
  build "$venv/bin/maturin" build --profile "$profile" --locked -m bindings/python/Cargo.toml \
    -i "$venv/bin/python" -o "$wheels"
fi
wheel=$(ls "$wheels"/sets3lock-*.whl)
[ "$(echo "$wheel" | wc -l)" = 1 ] || { echo "expected one wheel in $wheels, found: $wheel" >&2; exit 1; }
"$venv/bin/pip" install -q --disable-pip-version-check "$wheel"
# From outside the source tree: the installed package, with its native module and stubs.
(cd / && "$venv/bin/python" -c 'import sets3lock, sets3lock._native; print("installed sets3lock", sets3lock.__version__, "from", sets3lock.__file__)')
[ -x "$venv/bin/sets3lock" ] || { echo "the wheel installed no sets3lock command" >&2; exit 1; }

echo "== pip install ./bindings/python (the other way in: pip runs maturin itself) into .local/py-venv-pip"
rm -rf "$venv-pip"
python3 -m venv "$venv-pip"
MATURIN_PEP517_ARGS="--profile $profile" \
  build "$venv-pip/bin/pip" install -q --disable-pip-version-check ./bindings/python
(cd / && "$venv-pip/bin/python" -c 'import sets3lock, sets3lock._native; assert sets3lock.__version__')
[ "$("$venv-pip/bin/sets3lock" --version)" = "$("$venv/bin/sets3lock" --version)" ] ||
  { echo "pip install ./bindings/python and the wheel disagree on sets3lock --version" >&2; exit 1; }

if [ -z "${SETS3LOCK_RUST_BIN:-}" ]; then
  echo "== the Rust command, to compare the console script with: cargo build --release -p sets3lock-cli"
  build cargo build --release --locked -p sets3lock-cli
  export SETS3LOCK_RUST_BIN=$root/target/release/sets3lock
fi

# The same abi3 wheel on the oldest CPython it supports (3.9) and the newest here, where this
# machine has them (pyenv's versions; the kind's image carries 3.9 to 3.13): the suite again,
# in the background beside mypy and the suite on this interpreter (it mostly waits on leases).
pids=()
for minor in 3.9 3.13; do
  interpreter=$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$minor".*/bin/python 2>/dev/null | sort -V | tail -1 || true)
  if [ -z "$interpreter" ]; then
    echo "== CPython $minor: not on this machine (no ${PYENV_ROOT:-$HOME/.pyenv}/versions/$minor.*): the wheel is not run on it here"
    continue
  fi
  echo "== the wheel on CPython $minor ($interpreter): pytest in the background (its output follows the suite below)"
  (
    rm -rf "$venv-$minor"
    "$interpreter" -m venv "$venv-$minor"
    "$venv-$minor/bin/pip" install -q --disable-pip-version-check \
      "pytest==$pytest_version" "pytest-timeout==$pytest_timeout_version" "$wheel"
    # shellcheck disable=SC2086
    timeout --signal=INT --kill-after=30 900 \
      "$venv-$minor/bin/python" -m pytest -q -p no:cacheprovider --timeout=180 \
      -W "ignore:This process:DeprecationWarning" bindings/python/tests ${SETS3LOCK_PYTEST_ARGS:-}
  ) > "$root/.local/pytest-$minor.log" 2>&1 &
  pids+=("$minor:$!")
done
echo "== mypy --strict: the examples (as Python 3.9, the oldest supported), the tests"
mypy=("$venv/bin/mypy" --config-file "$root/bindings/python/mypy.ini")
"${mypy[@]}" --python-version 3.9 --cache-dir "$root/.local/mypy-cache/examples" bindings/python/examples
"${mypy[@]}" --cache-dir "$root/.local/mypy-cache/tests" bindings/python/tests
echo "== mypy --strict: the package's Python and its stubs (_native.pyi)"
(cd bindings/python/python && "${mypy[@]}" --python-version 3.9 \
  --cache-dir "$root/.local/mypy-cache/package" sets3lock)

echo "== pytest bindings/python/tests"
# -p no:cacheprovider: nothing written into the source tree. The per-test timeout ends a test
# that hangs (SIGALRM: the waits check for signals); `timeout` bounds the whole run.
# shellcheck disable=SC2086
timeout --signal=INT --kill-after=30 1800 \
  "$venv/bin/python" -m pytest -q -ra -p no:cacheprovider --timeout=180 \
  bindings/python/tests ${SETS3LOCK_PYTEST_ARGS:-}

failed=
for job in ${pids[@]+"${pids[@]}"}; do
  minor=${job%%:*}
  wait "${job#*:}" || failed="$failed $minor"
  echo "== CPython $minor:"
  cat "$root/.local/pytest-$minor.log"
done
[ -z "$failed" ] || { echo "pytest failed on CPython$failed (the output is above)" >&2; exit 1; }
