"""The example programs run against SeaweedFS and do what they say."""

from __future__ import annotations

import importlib.util
import json
import uuid
from types import ModuleType

import pytest
import sets3lock

from conftest import EXAMPLES, S3, is_free, python


def test_with_lock(url: str) -> None:
    done = python([str(EXAMPLES / "with_lock.py"), url], timeout=60)
    assert "running the nightly job with fencing token 1" in done.stdout, done.stdout
    assert "done, lock released" in done.stdout
    assert is_free(sets3lock.status(url))


def test_async_lock(url: str) -> None:
    done = python([str(EXAMPLES / "async_lock.py"), url], timeout=90)
    lines = done.stdout.splitlines()
    assert lines[0] == "before: free", done.stdout
    assert sum("holds the lock" in line for line in lines) == 3, done.stdout
    assert lines[-1] == "after: free", done.stdout


def test_semaphore_election(s3: S3) -> None:
    prefix = s3.url("example-semaphore-election")
    done = python([str(EXAMPLES / "semaphore_election.py"), prefix], timeout=120)
    out = done.stdout
    assert sum(" runs in slot " in line for line in out.splitlines()) == 4, out
    # Each thread takes a free slot starting at a random one; threads that do not overlap may
    # all draw the same slot (1 run in 16 drew slot 1 four times), so any of 0 and 1 will do.
    used = [line for line in out.splitlines() if line.startswith("slots used: ")]
    assert used and used[0] in ("slots used: [0]", "slots used: [1]", "slots used: [0, 1]"), out
    assert "no leader yet" in out and "elected: " in out and "stepped down" in out, out


def _load_handler() -> ModuleType:
    spec = importlib.util.spec_from_file_location("lambda_handler_example", EXAMPLES / "lambda_handler.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_lambda_handler(s3: S3, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCK_BUCKET", s3.bucket)
    handler = _load_handler()
    order = f"pytest-{uuid.uuid4().hex}"
    first = handler.lambda_handler({"order_id": order}, None)
    assert first["statusCode"] == 200, first
    assert json.loads(first["body"]) == {"order": order, "token": 1}
    # Another invocation holds it: this one answers 409 at once, naming the holder.
    url = f"s3://{s3.bucket}/locks/orders/{order}"
    with sets3lock.Lock(url, fenced=True) as held:
        busy = handler.lambda_handler({"order_id": order}, None)
        assert busy["statusCode"] == 409, busy
        assert json.loads(busy["body"])["busy"], busy
        assert held.token == 2
    again = handler.lambda_handler({"order_id": order}, None)
    assert again["statusCode"] == 200, again
    assert json.loads(again["body"])["token"] == 3
