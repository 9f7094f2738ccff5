"""Mutual exclusion between processes: a lock (presence and fenced), the asyncio lock, and a
semaphore. Every critical section checks a witness file on the local disk: created with
O_EXCL on entry, checked and removed on exit, so an overlap is seen by whoever comes second."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import sets3lock

from conftest import finish_workers, is_free, start_workers, wait_for, worker


def _overlaps(results: list[dict[str, Any]]) -> list[str]:
    return [f"pid {r['pid']}: {o}" for r in results for o in r["overlaps"]]


@pytest.mark.parametrize("fenced", [False, True], ids=["presence", "fenced"])
def test_two_processes_never_overlap(url: str, tmp_path: Path, fenced: bool) -> None:
    processes, sections = 2, 5
    witness = str(tmp_path / "witness")
    procs = start_workers(
        [worker("lock", url, witness, str(sections), "0.1", "1" if fenced else "0")] * processes
    )
    results: list[dict[str, Any]] = finish_workers(procs, timeout=90)

    assert _overlaps(results) == []
    assert [r["sections"] for r in results] == [sections] * processes, results
    assert not Path(witness).exists()
    # The grants, in the order they started, never overlap in time either.
    grants = sorted((g for r in results for g in r["grants"]), key=lambda g: g["start"])
    for a, b in zip(grants, grants[1:]):
        assert a["end"] <= b["start"], f"sections overlapped in time: {a} and {b}"
    tokens = [g["token"] for g in grants]
    if fenced:
        # Each grant carries a token larger than every earlier one: 1..10 in time order.
        assert tokens == list(range(1, processes * sections + 1)), tokens
    else:
        assert tokens == [None] * (processes * sections), tokens
    wait_for("the lock free after both processes", lambda: is_free(sets3lock.status(url)), 10)


def test_async_tasks_in_two_processes_never_overlap(url: str, tmp_path: Path) -> None:
    processes, tasks, sections = 2, 3, 2
    witness = str(tmp_path / "witness")
    procs = start_workers([worker("async", url, witness, str(tasks), str(sections), "0.05")] * processes)
    results: list[dict[str, Any]] = finish_workers(procs, timeout=120)

    assert _overlaps(results) == []
    assert [r["sections"] for r in results] == [tasks * sections] * processes, results
    assert not Path(witness).exists()
    # Waiting for the lock never blocked the event loop (a heartbeat ticks every 20 ms).
    gaps = [r["max_loop_gap"] for r in results]
    assert max(gaps) < 1.0, f"the event loop was blocked: longest gap between ticks {gaps} s"
    wait_for("the lock free after both processes", lambda: is_free(sets3lock.status(url)), 10)


def test_semaphore_of_two_with_five_processes(url: str, tmp_path: Path) -> None:
    processes, slots, sections = 5, 2, 2
    directory = tmp_path / "inside"
    directory.mkdir()
    procs = start_workers(
        [worker("sem", url, str(directory), str(slots), str(sections), "0.3")] * processes
    )
    results: list[dict[str, Any]] = finish_workers(procs, timeout=120)

    assert _overlaps(results) == []
    assert [r["sections"] for r in results] == [sections] * processes, results
    most = max(r["most"] for r in results)
    # Never more than two inside, and two at once at some point: a semaphore, not a mutex.
    assert most == slots, f"at most {most} processes were ever inside together, not {slots}"
    used = sorted({s for r in results for s in r["slots"]})
    assert used == list(range(slots)), f"slots used: {used}"
    assert list(directory.iterdir()) == []
