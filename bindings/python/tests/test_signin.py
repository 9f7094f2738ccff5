"""Signing in without keys from Python, as the command does: an EC2 role from moto's instance
metadata (IMDSv2), and a container endpoint served here. Each runs in a child interpreter
whose environment has no AWS keys (the chain reads the process environment)."""

from __future__ import annotations

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
