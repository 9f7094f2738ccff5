"""An interpreter killed mid-hold (SIGKILL: nothing runs, no atexit, no release), with and
without a thread of its own waiting for the same lock: the lock stays held, and a waiter gets
it a lease after it first saw it, never before, on SeaweedFS and on Azurite."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest
import sets3lock

from conftest import S3, server_vars, worker

LEASE = 3.0
# The holder trusts its lock for the lease less the drift margin (1% each way): a waiter that
# first read the record after the kill takes over no sooner than this after the kill.
NEVER_BEFORE = LEASE * 0.98
# Nor much later: a lease, a poll (100 ms here), and a second for a loaded machine.
AT_MOST = LEASE + 1.5


def lock_url(store: str, s3: S3, monkeypatch: pytest.MonkeyPatch) -> str:
    if store == "seaweedfs":
        return s3.url("killed")
    v = server_vars("azurite", "SETS3LOCK_AZURITE", ["CONTAINER", "CONNECTION_STRING"])
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", v["CONNECTION_STRING"])
    return f"az://{v['CONTAINER']}/pytest/killed/{uuid.uuid4().hex}"


@pytest.mark.parametrize("waiting_thread", [False, True], ids=["alone", "with-a-waiting-thread"])
@pytest.mark.parametrize("store", ["seaweedfs", "azurite"])
def test_a_killed_interpreter_leaves_the_lock_to_a_waiter_after_one_lease(
    store: str,
    waiting_thread: bool,
    s3: S3,
    monkeypatch: pytest.MonkeyPatch,
    reap: list[subprocess.Popen[str]],
) -> None:
    url = lock_url(store, s3, monkeypatch)
    holder = subprocess.Popen(
        [sys.executable, *worker("holdforever", url, str(LEASE), "1" if waiting_thread else "0")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    reap.append(holder)
    assert holder.stdout is not None
    line = holder.stdout.readline()  # bounded: the worker prints this, or dies and closes
    if not line:
        pytest.fail(f"the holder printed nothing: {holder.stderr.read() if holder.stderr else ''}")
    owner = json.loads(line)["held"]
    os.kill(holder.pid, signal.SIGKILL)
    killed = time.monotonic()
    holder.wait(timeout=10)
    # Nothing was released: the record is the killed holder's.
    record = sets3lock.status(url)
    assert record is not None and record.owner == owner, record
    with sets3lock.Lock(url, timeout="30s", poll_max="100ms") as held:
        after = time.monotonic() - killed
        assert held.is_held()
    assert after >= NEVER_BEFORE, f"taken over {after:.2f} s after the kill, under a {LEASE} s lease"
    assert after <= AT_MOST, f"taken over only {after:.2f} s after the kill"
