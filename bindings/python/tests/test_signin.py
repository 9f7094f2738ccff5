"""Signing in without keys from Python, as the command does: an EC2 role from moto's instance
metadata (IMDSv2), and a container endpoint served here. Each runs in a child interpreter
whose environment has no AWS keys (the chain reads the process environment)."""

from __future__ import annotations

import http.client
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from datetime import datetime, timedelta, timezone
from typing import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest

from conftest import server_vars

CHILD = """
import sys, sets3lock
with sets3lock.Lock(sys.argv[1], wait=False) as held:
    assert held.is_held()
print("held and released")
"""


def _run_without_keys(
    url: str, extra: dict[str, str], child: str = CHILD
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        AWS_REGION="us-east-1",
        AWS_EC2_METADATA_DISABLED="true",
        HOME=tempfile.mkdtemp(prefix="sets3lock-pytest-home-"),
    )
    env.update(extra)
    return subprocess.run(
        [sys.executable, "-c", child, url],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )


@pytest.fixture(scope="module")
def moto() -> dict[str, str]:
    v = server_vars("moto", "SETS3LOCK_MOTO", ["ENDPOINT", "BUCKET", "METADATA"])
    return v


def test_an_ec2_role_from_instance_metadata_signs(moto: dict[str, str]) -> None:
    url = f"s3://{moto['BUCKET']}/pytest/imds/{uuid.uuid4().hex}"
    done = _run_without_keys(
        url,
        {
            "AWS_ENDPOINT_URL": moto["ENDPOINT"],
            "AWS_EC2_METADATA_DISABLED": "false",
            "AWS_EC2_METADATA_SERVICE_ENDPOINT": moto["METADATA"],
        },
    )
    assert done.returncode == 0, done.stderr
    assert "held and released" in done.stdout


class _Container(http.server.BaseHTTPRequestHandler):
    asked: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 (the handler's name is http.server's)
        _Container.asked.append(self.headers.get("Authorization", ""))
        expires = datetime.now(timezone.utc) + timedelta(hours=1)
        body = json.dumps(
            {
                "AccessKeyId": "ASIACONTAINER",
                "SecretAccessKey": "secret",
                "Token": "session",
                "Expiration": expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def container() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Container)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1/credentials"
    finally:
        server.shutdown()


def test_a_container_endpoint_signs(moto: dict[str, str], container: str) -> None:
    url = f"s3://{moto['BUCKET']}/pytest/container/{uuid.uuid4().hex}"
    _Container.asked.clear()
    done = _run_without_keys(
        url,
        {
            "AWS_ENDPOINT_URL": moto["ENDPOINT"],
            "AWS_CONTAINER_CREDENTIALS_FULL_URI": container,
            "AWS_CONTAINER_AUTHORIZATION_TOKEN": "pod-token",
        },
    )
    assert done.returncode == 0, done.stderr
    assert _Container.asked == ["pod-token"]


class _SlowContainer(_Container):
    """A container endpoint that holds each answer for 3 s."""

    def do_GET(self) -> None:  # noqa: N802 (the handler's name is http.server's)
        time.sleep(3)
        super().do_GET()


@pytest.fixture
def slow_container() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _SlowContainer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1/credentials"
    finally:
        server.shutdown()


ASYNC_CHILD = """
import asyncio, json, sys, time, sets3lock

async def main() -> None:
    longest = 0.0
    stop = False

    async def tick() -> None:
        nonlocal longest
        last = time.monotonic()
        while not stop:
            await asyncio.sleep(0.01)
            now = time.monotonic()
            longest = max(longest, now - last)
            last = now

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0.05)
    started = time.monotonic()
    lock = sets3lock.AsyncLock(sys.argv[1], wait=False)
    opened = time.monotonic() - started
    async with lock as held:
        acquired = time.monotonic() - started
        assert held.is_held()
    stop = True
    await ticker
    print(json.dumps({"opened": opened, "acquired": acquired, "longest": longest}))

asyncio.run(main())
"""


def test_an_async_lock_opens_without_stalling_the_event_loop(
    moto: dict[str, str], slow_container: str
) -> None:
    url = f"s3://{moto['BUCKET']}/pytest/async-open/{uuid.uuid4().hex}"
    _Container.asked.clear()
    done = _run_without_keys(
        url,
        {
            "AWS_ENDPOINT_URL": moto["ENDPOINT"],
            "AWS_CONTAINER_CREDENTIALS_FULL_URI": slow_container,
        },
        child=ASYNC_CHILD,
    )
    assert done.returncode == 0, done.stderr
    took = json.loads(done.stdout)
    # The constructor returned at once; the acquisition waited for the credentials (3 s)
    # without blocking the loop: its other task never stalled half a second.
    assert took["opened"] < 0.2, took
    assert took["acquired"] >= 2.9, took
    assert took["longest"] < 0.5, took
    assert len(_Container.asked) == 1, _Container.asked


def test_with_no_credentials_the_error_names_what_was_tried() -> None:
    done = _run_without_keys("s3://bucket/key", {"AWS_ENDPOINT_URL": "http://127.0.0.1:9"})
    assert done.returncode != 0
    assert "no AWS credentials: tried the environment" in done.stderr, done.stderr
    assert "instance metadata (turned off by AWS_EC2_METADATA_DISABLED)" in done.stderr


class _Forward(http.server.BaseHTTPRequestHandler):
    """Forwards every request to `upstream` (moto), noting the access key that signed it, and
    holding the answer to the first request `hold` seconds."""

    upstream: tuple[str, int] = ("127.0.0.1", 0)
    hold = 0.0
    keys: list[str] = []
    count = 0
    lock = threading.Lock()
    protocol_version = "HTTP/1.1"

    def _forward(self) -> None:
        with _Forward.lock:
            first = _Forward.count == 0
            _Forward.count += 1
        if first and _Forward.hold:
            time.sleep(_Forward.hold)
        credential = parse_qs(urlsplit(self.path).query).get("X-Amz-Credential", [""])[0]
        if credential:
            _Forward.keys.append(credential.split("/")[0])
        length = int(self.headers.get("Content-Length", "0") or "0")
        body = self.rfile.read(length) if length else None
        upstream = http.client.HTTPConnection(*_Forward.upstream, timeout=30)
        headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
        upstream.request(self.command, self.path, body=body, headers=headers)
        reply = upstream.getresponse()
        data = reply.read()
        self.send_response(reply.status)
        for k, v in reply.getheaders():
            if k.lower() not in ("content-length", "transfer-encoding", "connection"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        upstream.close()

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def forward(moto: dict[str, str]) -> Iterator[str]:
    """A forwarding proxy in front of moto: its URL."""
    target = urlsplit(moto["ENDPOINT"])
    _Forward.upstream = (target.hostname or "127.0.0.1", target.port or 80)
    _Forward.hold = 0.0
    _Forward.keys = []
    _Forward.count = 0
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Forward)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def test_a_comment_after_a_profile_header_never_signs_with_another_profiles_keys(
    moto: dict[str, str], forward: str
) -> None:
    home = tempfile.mkdtemp(prefix="sets3lock-pytest-profiles-")
    credentials = os.path.join(home, "credentials")
    with open(credentials, "w") as f:
        f.write(
            "[default]\naws_access_key_id = AKIADEFAULTKEY\naws_secret_access_key = d\n\n"
            "[prod]   # production account\naws_access_key_id = AKIAPRODKEY\n"
            "aws_secret_access_key = p\n"
        )
    for profile, key in ((None, "AKIADEFAULTKEY"), ("prod", "AKIAPRODKEY")):
        _Forward.keys = []
        extra = {"AWS_ENDPOINT_URL": forward, "AWS_SHARED_CREDENTIALS_FILE": credentials}
        if profile:
            extra["AWS_PROFILE"] = profile
        url = f"s3://{moto['BUCKET']}/pytest/comment/{uuid.uuid4().hex}"
        done = _run_without_keys(url, extra)
        assert done.returncode == 0, done.stderr
        assert _Forward.keys and set(_Forward.keys) == {key}, _Forward.keys


def test_a_source_profile_with_keys_and_a_role_signs_the_next_role_with_its_keys(
    moto: dict[str, str], forward: str
) -> None:
    home = tempfile.mkdtemp(prefix="sets3lock-pytest-chain-")
    config = os.path.join(home, "config")
    credentials = os.path.join(home, "credentials")
    with open(credentials, "w") as f:
        f.write("[base]\naws_access_key_id = AKIABASE\naws_secret_access_key = base-secret\n")
    with open(config, "w") as f:
        f.write(
            "[profile deploy]\nrole_arn = arn:aws:iam::123456789012:role/deploy\n"
            "source_profile = base\n\n"
            "[profile base]\nrole_arn = arn:aws:iam::123456789012:role/base-only\n"
        )
    url = f"s3://{moto['BUCKET']}/pytest/chain/{uuid.uuid4().hex}"
    done = _run_without_keys(
        url,
        {
            "AWS_ENDPOINT_URL_S3": forward,
            "AWS_ENDPOINT_URL_STS": moto["ENDPOINT"],
            "AWS_SHARED_CREDENTIALS_FILE": credentials,
            "AWS_CONFIG_FILE": config,
            "AWS_PROFILE": "deploy",
        },
    )
    assert done.returncode == 0, done.stderr
    # Signed with the role's temporary keys (moto's STS hands out ASIA…), not base's.
    assert _Forward.keys and all(k.startswith("ASIA") for k in _Forward.keys), _Forward.keys


def test_instance_metadata_that_holds_its_first_answer_3_s_is_asked_again(
    moto: dict[str, str], forward: str
) -> None:
    _Forward.hold = 3.0
    url = f"s3://{moto['BUCKET']}/pytest/imds-slow/{uuid.uuid4().hex}"
    started = time.monotonic()
    done = _run_without_keys(
        url,
        {
            "AWS_ENDPOINT_URL": moto["ENDPOINT"],
            "AWS_EC2_METADATA_DISABLED": "false",
            "AWS_EC2_METADATA_SERVICE_ENDPOINT": forward,
        },
    )
    assert done.returncode == 0, done.stderr
    assert "held and released" in done.stdout
    assert time.monotonic() - started < 15
