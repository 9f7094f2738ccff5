"""Shared fixtures: the servers (from the environment scripts/test.sh exports), fresh keys,
bounded waits and the helper scripts the tests spawn.

The servers are never started here. Each is described by its `SETS3LOCK_<SERVER>_*`
variables (written by `bash scripts/s3-server.sh start NAME` into `.local/NAME/env`); a
missing server skips its tests, or fails them when `SETS3LOCK_REQUIRE_S3=1`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence, TypeVar

import pytest

TESTS = Path(__file__).resolve().parent
WORKER = TESTS / "_worker.py"
EXAMPLES = TESTS.parent / "examples"
ROOT = TESTS.parent.parent.parent

T = TypeVar("T")


def _required() -> bool:
    return os.environ.get("SETS3LOCK_REQUIRE_S3") == "1"


def server_vars(name: str, prefix: str, suffixes: Sequence[str]) -> dict[str, str]:
    """The server's variables, or a skip (a failure under SETS3LOCK_REQUIRE_S3=1)."""
    values = {s: os.environ.get(f"{prefix}_{s}", "") for s in suffixes}
    missing = [f"{prefix}_{s}" for s, v in values.items() if not v]
    if missing:
        message = (
            f"no {name} server: {', '.join(missing)} not set (start it with "
            f"bash scripts/s3-server.sh start {name} and source .local/{name}/env; "
            "bash scripts/test.sh does both)"
        )
        if _required():
            pytest.fail(message + " [SETS3LOCK_REQUIRE_S3=1]", pytrace=False)
        pytest.skip(message)
    return values


# The S3 credentials come from the environment (AWS_*), as with the command. scripts/test.sh
# unsets AWS_* (they pointed at the last server it started) and exports SETS3LOCK_SEAWEEDFS_*:
# point AWS_* at SeaweedFS here, before any test or child process reads them.
if os.environ.get("SETS3LOCK_SEAWEEDFS_ENDPOINT"):
    os.environ["AWS_ACCESS_KEY_ID"] = os.environ.get("SETS3LOCK_SEAWEEDFS_ACCESS_KEY", "")
    os.environ["AWS_SECRET_ACCESS_KEY"] = os.environ.get("SETS3LOCK_SEAWEEDFS_SECRET", "")
    os.environ["AWS_REGION"] = "us-east-1"
    os.environ["AWS_ENDPOINT_URL"] = os.environ["SETS3LOCK_SEAWEEDFS_ENDPOINT"]
    for _name in ("AWS_ENDPOINT_URL_S3", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_REGION"):
        os.environ.pop(_name, None)
# The store check's verdicts go to a scratch cache, not the user's ~/.cache.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="sets3lock-pytest-cache-")


@dataclasses.dataclass(frozen=True)
class S3:
    endpoint: str
    access_key: str
    secret: str
    bucket: str

    def url(self, name: str) -> str:
        """A key no other test (or earlier run) uses."""
        return f"s3://{self.bucket}/pytest/{name}/{uuid.uuid4().hex}"


@pytest.fixture(scope="session")
def s3() -> S3:
    v = server_vars(
        "seaweedfs", "SETS3LOCK_SEAWEEDFS", ["ENDPOINT", "ACCESS_KEY", "SECRET", "BUCKET"]
    )
    return S3(v["ENDPOINT"], v["ACCESS_KEY"], v["SECRET"], v["BUCKET"])


@pytest.fixture
def url(s3: S3, request: pytest.FixtureRequest) -> str:
    """A fresh key on SeaweedFS, named after the test."""
    name = request.node.name.replace("[", "-").replace("]", "").replace("/", "-")
    return s3.url(name)


def wait_for(
    what: str, check: Callable[[], Optional[T]], timeout: float, every: float = 0.1
) -> T:
    """Calls `check` until it returns something other than None (or False), at most
    `timeout` seconds; fails naming `what` and the last value seen."""
    deadline = time.monotonic() + timeout
    last: Optional[T] = None
    while True:
        last = check()
        if last is not None and last is not False:
            return last
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {timeout} s (last seen: {last!r})", pytrace=False)
        time.sleep(every)


def is_free(holder: object) -> bool:
    """`status` of a free lock: None (presence mode) or a record marked free (fenced)."""
    return holder is None or bool(getattr(holder, "free", False))


def python(
    args: Sequence[str],
    *,
    timeout: float,
    env: Optional[Mapping[str, str]] = None,
    check_exit: Optional[int] = 0,
) -> subprocess.CompletedProcess[str]:
    """Runs this interpreter (the test virtualenv's) with `args`, bounded by `timeout`."""
    full_env = dict(os.environ)
    if env is not None:
        full_env.update(env)
    try:
        done = subprocess.run(
            [sys.executable, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=full_env,
        )
    except subprocess.TimeoutExpired as e:
        pytest.fail(
            f"{args} did not finish in {timeout} s; stdout {e.stdout!r}, stderr {e.stderr!r}",
            pytrace=False,
        )
    if check_exit is not None and done.returncode != check_exit:
        pytest.fail(
            f"{args} exited {done.returncode}, not {check_exit}\n"
            f"stdout: {done.stdout}\nstderr: {done.stderr}",
            pytrace=False,
        )
    return done


def worker(*args: str) -> list[str]:
    """The argv that runs tests/_worker.py with `args`."""
    return [str(WORKER), *args]


def start_workers(argvs: Sequence[Sequence[str]]) -> list[subprocess.Popen[str]]:
    return [
        subprocess.Popen(
            [sys.executable, *a],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for a in argvs
    ]


def finish_workers(procs: Sequence[subprocess.Popen[str]], timeout: float) -> list[dict[str, Any]]:
    """Waits for every worker (all within `timeout` seconds in total), checks each exited 0,
    and returns the JSON object each printed as its last line."""
    deadline = time.monotonic() + timeout
    results: list[dict[str, Any]] = []
    failures: list[str] = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            failures.append(f"pid {p.pid} did not finish in {timeout} s\nstdout: {out}\nstderr: {err}")
            continue
        if p.returncode != 0:
            failures.append(f"pid {p.pid} exited {p.returncode}\nstdout: {out}\nstderr: {err}")
            continue
        lines = [line for line in out.splitlines() if line.strip()]
        try:
            result = json.loads(lines[-1])
        except (IndexError, ValueError):
            failures.append(f"pid {p.pid} printed no JSON result\nstdout: {out}\nstderr: {err}")
            continue
        assert isinstance(result, dict)
        result["stderr"] = err
        results.append(result)
    if failures:
        for p in procs:
            if p.poll() is None:
                p.kill()
        pytest.fail("\n\n".join(failures), pytrace=False)
    return results


@pytest.fixture
def reap() -> Iterator[list[subprocess.Popen[str]]]:
    """Child processes a test started: killed at its end if still running."""
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=10)
