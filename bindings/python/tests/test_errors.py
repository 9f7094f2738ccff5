"""Each bad input raises its own exception with a one-line message: URLs, durations, types,
options; and each store failure its class: no bucket, access denied, nothing listening."""

from __future__ import annotations

import json
import socket
import time
import uuid
from typing import TYPE_CHECKING, Callable

import pytest
import sets3lock

from conftest import S3, python, worker

if TYPE_CHECKING:
    from sets3lock._native import StoreCheck

DURATION_HELP = "write it like 30s, 5m, 1h30m or 250ms"


def one_line(e: BaseException) -> str:
    text = str(e)
    assert text.strip(), f"{type(e).__name__} with an empty message"
    assert "\n" not in text, f"{type(e).__name__}'s message is more than one line: {text!r}"
    return text


@pytest.mark.parametrize(
    "bad",
    ["http://x/y", "s3://b", "s3://b/", "s3:///key", "ftp://bucket/key", "bucket/key", ""],
)
def test_bad_url(bad: str) -> None:
    with pytest.raises(ValueError) as info:
        sets3lock.Lock(bad).acquire()
    one_line(info.value)
    with pytest.raises(ValueError):
        sets3lock.status(bad)


@pytest.mark.parametrize(
    "use",
    [
        lambda: sets3lock.Semaphore("http://x/y", 2).acquire(),
        lambda: sets3lock.Election("s3://b", "v").campaign(),
        lambda: next(sets3lock.watch("http://x/y")),
        lambda: sets3lock.unlock("s3://b", '"etag"'),
        lambda: sets3lock.Locks("http://x"),
    ],
    ids=["Semaphore", "Election", "watch", "unlock", "Locks"],
)
def test_bad_url_for_the_other_shapes(use: Callable[[], object]) -> None:
    with pytest.raises(ValueError) as info:
        use()
    one_line(info.value)


@pytest.mark.parametrize("bad", ["nonsense", "tomorrow", "5 parsecs", "-1s", "1.5.s", ""])
def test_bad_duration(bad: str) -> None:
    with pytest.raises(ValueError) as info:
        sets3lock.Lock("s3://bucket/key", lease=bad)
    text = one_line(info.value)
    assert f'invalid duration "{bad}": {DURATION_HELP}' in text, text


def test_bad_duration_in_each_parameter() -> None:
    for name in ("timeout", "lease", "poll_max", "foreign_lease", "request_timeout"):
        with pytest.raises(ValueError) as info:
            sets3lock.Lock("s3://bucket/key", **{name: "soon"})  # type: ignore[arg-type]
        assert f'invalid duration "soon": {DURATION_HELP}' in one_line(info.value), name


@pytest.mark.parametrize("bad", [[1], b"30s", object(), {"s": 1}], ids=["list", "bytes", "object", "dict"])
def test_bad_duration_type(bad: object) -> None:
    with pytest.raises(TypeError) as info:
        sets3lock.Lock("s3://bucket/key", lease=bad)  # type: ignore[arg-type]
    one_line(info.value)
    with pytest.raises(TypeError):
        sets3lock.Lock("s3://bucket/key", timeout=bad)  # type: ignore[arg-type]


def test_bad_argument_types() -> None:
    with pytest.raises(TypeError):
        sets3lock.Lock(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        sets3lock.Lock("s3://bucket/key", 30)  # type: ignore[misc]


def test_bad_store_check() -> None:
    with pytest.raises(ValueError) as info:
        sets3lock.Lock("s3://bucket/key", store_check="sometimes")  # type: ignore[arg-type]
    text = one_line(info.value)
    assert "sometimes" in text, text
    goods: list[StoreCheck] = ["cached", "once", "off"]
    for good in goods:
        sets3lock.Lock("s3://bucket/key", store_check=good)


def test_no_such_bucket(s3: S3) -> None:
    url = f"s3://sets3lock-missing-{uuid.uuid4().hex[:16]}/key"
    with pytest.raises(sets3lock.NoSuchBucket) as info:
        sets3lock.Lock(url, wait=False, retry_limit=1, request_timeout="5s").acquire()
    assert isinstance(info.value, sets3lock.Error)
    one_line(info.value)
    with pytest.raises(sets3lock.NoSuchBucket):
        sets3lock.status(url)


def test_access_denied(url: str) -> None:
    # The credentials are read from the environment: a child with a wrong secret.
    done = python(worker("try", url), timeout=60, env={"AWS_SECRET_ACCESS_KEY": "wrong-" + uuid.uuid4().hex})
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["outcome"] == "error", result
    assert result["type"] == "AccessDenied", result
    assert "Error" in result["classes"], result
    assert result["message"] and "\n" not in result["message"], result
    # Nothing was written: the key is still free.
    assert sets3lock.status(url) is None


def test_unreachable(s3: S3) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # (closed again: nothing listens on the port)
    endpoint = f"http://127.0.0.1:{port}"
    url = f"s3://{s3.bucket}/pytest/unreachable/{uuid.uuid4().hex}"
    t0 = time.monotonic()
    with pytest.raises(sets3lock.Unreachable) as info:
        sets3lock.Lock(
            url, endpoint=endpoint, wait=False, request_timeout="1s", retry_limit=1
        ).acquire()
    elapsed = time.monotonic() - t0
    assert isinstance(info.value, sets3lock.Error)
    one_line(info.value)
    assert elapsed < 30, f"Unreachable after {elapsed:.1f} s"
    with pytest.raises(sets3lock.Unreachable):
        sets3lock.Lock(url, endpoint=endpoint, timeout="2s", request_timeout="1s", retry_limit=1).acquire()
    with pytest.raises(sets3lock.Unreachable):
        sets3lock.status(url, endpoint=endpoint, request_timeout="1s")


def test_bad_endpoint() -> None:
    with pytest.raises(ValueError) as info:
        sets3lock.Lock("s3://bucket/key", endpoint="not a url")
    one_line(info.value)
