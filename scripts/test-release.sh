#!/usr/bin/env bash
# Proves each artifact scripts/release.sh built (default dist/) by installing it the way a user
# would, somewhere fresh, and taking and releasing a lock with it on SeaweedFS:
#   - the wheel, into a fresh virtualenv (pip install FILE.whl);
#   - the sdist, into another, built from source there by pip (maturin from PyPI, cargo);
#   - the command's tarball, unpacked into a fresh directory.
# Each one's `sets3lock --version` must be the workspace's version, and SHA256SUMS must match.
#
#   bash scripts/test-release.sh [DIR]
#
# SeaweedFS: its SETS3LOCK_SEAWEEDFS_* variables (scripts/test.sh exports them), else the
# server of `bash scripts/s3-server.sh start seaweedfs` (.local/seaweedfs/env).
# The sdist is built with the dev profile and the workspace's target directory, so that the
# test build's compiled dependencies are reused: what is proven is that the sdist holds
# everything a build needs (a user's `pip install` builds it with the release profile).
set -euo pipefail
cd "$(dirname "$0")/.."

dir=$(cd "${1:-dist}" && pwd)
root=$(pwd)
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export PYTHONDONTWRITEBYTECODE=1

if [ -z "${SETS3LOCK_SEAWEEDFS_ENDPOINT:-}" ]; then
  # shellcheck disable=SC1091
  . .local/seaweedfs/env
fi
# The command and the package read the store from the environment, as a user's would.
export AWS_ACCESS_KEY_ID=$SETS3LOCK_SEAWEEDFS_ACCESS_KEY
export AWS_SECRET_ACCESS_KEY=$SETS3LOCK_SEAWEEDFS_SECRET
export AWS_ENDPOINT_URL=$SETS3LOCK_SEAWEEDFS_ENDPOINT
export AWS_REGION=us-east-1
export AWS_EC2_METADATA_DISABLED=true
export XDG_CACHE_HOME=$scratch/cache
bucket=$SETS3LOCK_SEAWEEDFS_BUCKET

echo "== SHA256SUMS"
(cd "$dir" && sha256sum --check --strict SHA256SUMS)

# `sets3lock` (the path given) says the workspace's version, takes a lock around a program
# that sees it held, and leaves it free.
command_works() {
  local bin=$1 what=$2 key
  key=s3://$bucket/release-test/$what-$RANDOM$RANDOM
  [ "$("$bin" --version)" = "sets3lock $version" ] ||
    { echo "$what: sets3lock --version says $("$bin" --version), not $version" >&2; exit 1; }
  "$bin" "$key" sh -c '[ -n "$SETS3LOCK_ETAG" ]' ||
    { echo "$what: the command did not run its program under the lock" >&2; exit 1; }
  "$bin" status "$key" > /dev/null ||
    { echo "$what: the lock was not left free" >&2; exit 1; }
  echo "$what: sets3lock $version took and released $key"
}

# The package, imported from outside the source tree, takes and releases a lock.
package_works() {
  local python=$1 what=$2
  (cd / && "$python" - "$bucket" "$what" "$version" <<'PY'
import sys, uuid
import sets3lock
bucket, what, version = sys.argv[1:]
assert sets3lock.__version__ == version, (sets3lock.__version__, version)
url = f"s3://{bucket}/release-test/{what}-{uuid.uuid4().hex}"
with sets3lock.Lock(url, wait=False) as held:
    assert held.is_held()
assert sets3lock.status(url) is None
print(f"{what}: the package {version} took and released {url}")
PY
  )
}

wheel=$(ls "$dir"/sets3lock-"$version"-*.whl)
sdist=$dir/sets3lock-$version.tar.gz
tarball=$dir/sets3lock-$version-x86_64-unknown-linux-gnu.tar.gz

echo "== the wheel, into a fresh virtualenv: $(basename "$wheel")"
python3 -m venv "$scratch/wheel"
"$scratch/wheel/bin/pip" install -q --disable-pip-version-check "$wheel"
package_works "$scratch/wheel/bin/python" wheel
command_works "$scratch/wheel/bin/sets3lock" wheel

echo "== the sdist, built from source into a fresh virtualenv: $(basename "$sdist")"
python3 -m venv "$scratch/sdist"
CARGO_TARGET_DIR=$root/target MATURIN_PEP517_ARGS="--profile dev" \
  "$scratch/sdist/bin/pip" install -q --disable-pip-version-check --no-binary sets3lock "$sdist"
package_works "$scratch/sdist/bin/python" sdist
command_works "$scratch/sdist/bin/sets3lock" sdist
# What a registry shows.
metadata=$("$scratch/sdist/bin/python" -c 'import importlib.metadata as m; print(m.metadata("sets3lock"))')
for field in "License-Expression: MIT OR Apache-2.0" "License-File: LICENSE-MIT" \
  "License-File: LICENSE-APACHE" "Requires-Python: >=3.9" "Project-URL: Source" \
  "Classifier: Operating System :: POSIX :: Linux"; do
  grep -qF "$field" <<< "$metadata" || { echo "the package's metadata lacks '$field'" >&2; exit 1; }
done

echo "== the command, unpacked into a fresh directory: $(basename "$tarball")"
mkdir "$scratch/bin"
tar -C "$scratch/bin" -xzf "$tarball"
unpacked=$scratch/bin/sets3lock-$version-x86_64-unknown-linux-gnu
for f in sets3lock README.md LICENSE-MIT LICENSE-APACHE; do
  [ -e "$unpacked/$f" ] || { echo "the tarball lacks $f" >&2; exit 1; }
done
(cd "$scratch" && command_works "$unpacked/sets3lock" binary)
echo "== every artifact installs and locks"
