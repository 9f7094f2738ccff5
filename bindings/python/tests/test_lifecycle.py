"""The process around a lock: the GIL while waiting, threads, exceptions in flight when a
hold is dropped, asyncio cancellation and tasks, interpreter exit with work pending, and a
forked child's exit. Against SeaweedFS."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import threading
import time
import warnings
from typing import Any, AsyncGenerator

import pytest
import sets3lock

from conftest import python, wait_for, worker


def test_the_gil_is_released_while_an_acquisition_waits(url: str) -> None:
    ticks = 0
    stop = threading.Event()

    def heartbeat() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            time.sleep(0.01)

    with sets3lock.Lock(url):
        beat = threading.Thread(target=heartbeat)
        beat.start()
        try:
            with pytest.raises(sets3lock.Timeout):
                sets3lock.Lock(url, timeout=1, poll_max="100ms").acquire()
        finally:
            stop.set()
            beat.join(5)
    # A thread that runs Python every 10 ms ran throughout the one-second wait.
    assert ticks >= 40, f"the heartbeat ran {ticks} times in a 1 s wait: the GIL was held"


def test_one_lock_object_entered_by_several_threads_at_once(url: str) -> None:
    lock = sets3lock.Lock(url, timeout=30, poll_max="50ms")
    inside = 0
    most = 0
    done = 0
    errors: list[BaseException] = []
    guard = threading.Lock()

    def section() -> None:
        nonlocal inside, most, done
        try:
            for _ in range(3):
                with lock as held:
                    with guard:
                        inside += 1
                        most = max(most, inside)
                    assert held.is_held()
                    time.sleep(0.02)
                    with guard:
                        inside -= 1
                        done += 1
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=section) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert all(not t.is_alive() for t in threads), "a thread is still in the lock after 60 s"
    assert (most, done) == (1, 9), f"at most {most} inside at once, {done} of 9 sections run"
    assert sets3lock.status(url) is None


def test_a_hold_dropped_while_an_exception_propagates_keeps_that_exception(url: str) -> None:
    lock = sets3lock.Lock(url)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with pytest.raises(IndexError):
            [lock.acquire()][5]
        gc.collect()
    assert any(issubclass(w.category, ResourceWarning) for w in seen), [str(w.message) for w in seen]
    wait_for("the dropped hold's release", lambda: sets3lock.status(url) is None, timeout=10)


def test_an_async_with_entry_cancelled_as_it_succeeds_leaves_nothing_held(url: str) -> None:
    async def main() -> None:
        lock = sets3lock.AsyncLock(url)
        entering = asyncio.ensure_future(lock.__aenter__())
        warnings.simplefilter("always")
        # The acquisition completes on the lock's threads while the event loop is blocked,
        # so its result waits to be delivered when the task is cancelled.
        await asyncio.sleep(0)
        time.sleep(1.5)
        entering.cancel()
        with pytest.raises(asyncio.CancelledError):
            await entering
        deadline = time.monotonic() + 10
        while await sets3lock.status_async(url) is not None:
            assert time.monotonic() < deadline, "the cancelled entry's hold is still held"
            await asyncio.sleep(0.05)
        # And the lock object is usable: nothing entered is left on it.
        async with lock as held:
            assert held.is_held()

    with warnings.catch_warnings(record=True) as seen:
        asyncio.run(main())
        gc.collect()
    # The hold never reached the task: released quietly, not as one the program dropped.
    dropped = [str(w.message) for w in seen if issubclass(w.category, ResourceWarning)]
    assert not dropped, dropped


def test_a_block_left_elsewhere_never_releases_a_hold_a_living_task_uses(url: str) -> None:
    async def holding(sem: sets3lock.AsyncSemaphore) -> AsyncGenerator[sets3lock.AsyncHeld, None]:
        async with sem as held:
            yield held

    async def main() -> None:
        sem = sets3lock.AsyncSemaphore(url, 2)
        gen = holding(sem)
        release_b = asyncio.Event()

        async def task_b() -> sets3lock.AsyncHeld:
            held = await gen.__anext__()  # entered in task B, which stays alive
            await release_b.wait()
            return held

        b = asyncio.create_task(task_b())
        await asyncio.sleep(0.5)
        async with sem as mine:  # entered by this task, which is inside its block
            async def close() -> None:
                await gen.aclose()  # left by a third task, which entered nothing

            with pytest.raises(sets3lock.Error):
                await asyncio.create_task(close())
            assert mine.is_held(), "a hold another task is using was released"
        release_b.set()
        await b

    asyncio.run(main())


def test_async_with_entered_in_one_task_and_left_in_another_releases(url: str) -> None:
    async def holding() -> AsyncGenerator[sets3lock.AsyncHeld, None]:
        async with sets3lock.AsyncLock(url) as held:
            yield held

    async def main() -> None:
        gen = holding()

        async def enter() -> sets3lock.AsyncHeld:
            return await gen.__anext__()

        held = await asyncio.create_task(enter())  # entered in this task
        assert held.is_held()

        async def close() -> None:
            await gen.aclose()  # left in this one

        await asyncio.create_task(close())
        assert not held.is_held()
        assert await sets3lock.status_async(url) is None

    asyncio.run(main())


def test_exit_releases_the_lock_and_gives_up_a_waiting_acquisition(url: str) -> None:
    started = time.monotonic()
    done = python(worker("exitpending", url), timeout=60)
    took = time.monotonic() - started
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    assert result["pid"] > 0
    # Nothing of the exited process holds the lock: neither its hold nor the daemon thread's
    # acquisition, which could have won the lock during the exit.
    holder = sets3lock.status(url)
    assert holder is None, f"after the exit the lock is held by {holder}"
    assert took < 5, f"the exit took {took:.2f} s"


def test_a_forked_child_exits_at_once(url: str) -> None:
    done = python(worker("forkexit", url), timeout=60)
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    assert result["status"] == 0, result
    # Its exit does not wait for the parent's drivers, which never finish in the child.
    assert result["took"] < 2, f"the forked child took {result['took']:.2f} s to exit"
    assert result["parent"] == "renewing", result
