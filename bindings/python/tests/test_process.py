"""The process boundary: Ctrl-C while waiting for a lock, and os.fork() while holding one."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Callable

import pytest
import sets3lock

from conftest import WORKER, python, worker


def _read_line(p: subprocess.Popen[str], timeout: float) -> str:
    assert p.stdout is not None
    ready, _, _ = select.select([p.stdout], [], [], timeout)
    if not ready:
        p.kill()
        _, err = p.communicate()
        pytest.fail(f"the child printed nothing in {timeout} s; stderr: {err}", pytrace=False)
    return p.stdout.readline().strip()


@pytest.mark.parametrize("delay", [0.05, 0.5, 2.0])
def test_ctrl_c_during_a_wait(url: str, delay: float, reap: list[subprocess.Popen[str]]) -> None:
    with sets3lock.Lock(url) as held:
        p = subprocess.Popen(
            [sys.executable, str(WORKER), "sigint", url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        reap.append(p)
        assert _read_line(p, 30) == "waiting"
        # `delay` after the child starts to acquire: in the store check or first write
        # (0.05 s), or in the wait between polls.
        time.sleep(delay)
        assert p.poll() is None, "the child ended before the signal"
        sent = time.monotonic()
        p.send_signal(signal.SIGINT)
        try:
            out, err = p.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            pytest.fail(f"the child did not exit within 20 s of SIGINT; stderr: {err}", pytrace=False)
        assert p.returncode == 0, f"exit {p.returncode}; stdout {out!r}; stderr {err}"
        result = json.loads(out.strip().splitlines()[-1])
        assert result["outcome"] == "KeyboardInterrupt", result
        # time.monotonic() is one clock for every process (CLOCK_MONOTONIC).
        latency = result["caught_at"] - sent
        assert 0 <= latency < 0.2, f"KeyboardInterrupt {latency * 1000:.0f} ms after SIGINT"
        # No stray write: the lock is still ours, the same object.
        holder = sets3lock.status(url)
        assert holder is not None, "the lock was deleted by the interrupted waiter"
        assert holder.owner == held.owner, f"the holder is now {holder.owner}, not {held.owner}"
        assert holder.etag == held.etag
        assert held.is_held()
    assert sets3lock.status(url) is None


def _read_all(fd: int, timeout: float) -> bytes:
    deadline = time.monotonic() + timeout
    data = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            pytest.fail(f"the forked child wrote no report in {timeout} s (got {data!r})", pytrace=False)
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            chunk = os.read(fd, 65536)
            if not chunk:
                return data
            data += chunk


def _reap(pid: int, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail(f"the forked child did not exit in {timeout} s", pytrace=False)


def _bounded(call: Callable[[], object], timeout: float) -> str:
    """What `call` did, run on a thread and given `timeout` seconds (a hang is an outcome)."""
    outcome: list[str] = []

    def run() -> None:
        try:
            call()
            outcome.append("no error")
        except sets3lock.Error as e:
            outcome.append(f"sets3lock.Error: {e}")
        except BaseException as e:
            outcome.append(f"{type(e).__name__}: {e}")

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout)
    return outcome[0] if outcome else f"hung: no answer in {timeout} s"


def _in_child(work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Forks; the child runs `work` and reports its dict through a pipe; bounded."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        try:
            os.close(r)
            try:
                report = work()
            except BaseException as e:
                report = {"crashed": f"{type(e).__name__}: {e}"}
            os.write(w, json.dumps(report).encode())
        finally:
            os._exit(0)
    os.close(w)
    try:
        report = json.loads(_read_all(r, 60) or b"{}")
    finally:
        os.close(r)
        code = _reap(pid, 30)
    assert code == 0
    assert "crashed" not in report, report
    assert isinstance(report, dict)
    return report


def _refused_for_fork(report: dict[str, Any], names: list[str]) -> None:
    wrong = {n: report.get(n) for n in names if not str(report.get(n, "")).startswith("sets3lock.Error: ")}
    wrong.update({n: report[n] for n in names if n not in wrong and "fork" not in str(report[n]).lower()})
    assert wrong == {}, f"in the forked child, not a sets3lock.Error naming the fork: {wrong}"


def test_fork_held_in_the_child_and_parent_keeps_it(url: str) -> None:
    held = sets3lock.Lock(url, lease="3s").acquire()
    first_etag = held.etag

    def child() -> dict[str, Any]:
        report: dict[str, Any] = {
            "Held.release": _bounded(held.release, 10),
            "Held.wait_lost": _bounded(lambda: held.wait_lost(timeout=0.5), 10),
            "Held.ensure": _bounded(held.ensure, 10),
        }
        # New objects work in the child.
        holder = sets3lock.status(url)
        report["status owner"] = holder.owner if holder is not None else None
        with sets3lock.Lock(url + "-child", wait=False, fenced=True) as mine:
            report["child token"] = mine.token
        report["child lock free after"] = sets3lock.status(url + "-child") is None
        return report

    report = _in_child(child)
    _refused_for_fork(report, ["Held.release", "Held.wait_lost", "Held.ensure"])
    assert report["status owner"] == held.owner, report
    assert report["child token"] == 1, report
    assert report["child lock free after"] is True, report
    # The parent still holds, and goes on renewing past the 3 s lease.
    time.sleep(4)
    assert held.is_held(), f"health {held.health()}"
    holder = sets3lock.status(url)
    assert holder is not None and holder.owner == held.owner
    assert holder.etag == held.etag and held.etag != first_etag, "no renewal since the fork"
    assert held.release() == "deleted"


def test_fork_lock_objects_made_before_it(url: str) -> None:
    bucket, key = url.split("/", 3)[2:]
    # Made and used before the fork (so their connections are the parent's).
    lock = sets3lock.Lock(url, wait=False)
    lock.acquire().release()
    locks = sets3lock.Locks(f"s3://{bucket}")
    locks.acquire(key + "-locks", wait=False).release()
    semaphore = sets3lock.Semaphore(url + "-sem", 2, wait=False)
    semaphore.acquire().release()

    def child() -> dict[str, Any]:
        return {
            "Lock.acquire": _bounded(lock.acquire, 10),
            "Locks.acquire": _bounded(lambda: locks.acquire(key + "-locks", wait=False), 10),
            "Semaphore.acquire": _bounded(semaphore.acquire, 10),
        }

    report = _in_child(child)
    _refused_for_fork(report, ["Lock.acquire", "Locks.acquire", "Semaphore.acquire"])
    # The parent's objects still work.
    with lock as held:
        assert held.is_held()
    assert sets3lock.status(url) is None


def test_exit_is_clean_after_asyncio(url: str) -> None:
    # A program that used the async API exits 0, every time: nothing of the lock's runs into
    # the interpreter's finalization (10 short runs: watch_async, AsyncLock, status_async).
    codes = []
    for i in range(10):
        done = python(worker("asyncexit", f"{url}-{i}"), timeout=60, check_exit=None)
        codes.append(done.returncode)
        if done.returncode == 0:
            result = json.loads(done.stdout.splitlines()[-1])
            assert result == {"first": "free", "owner_seen": True, "free_after": True}, result
        else:
            print(f"run {i}: exit {done.returncode}; stderr: {done.stderr}")
    assert codes == [0] * 10, f"exit codes of 10 runs (-11: SIGSEGV, -6: SIGABRT): {codes}"
