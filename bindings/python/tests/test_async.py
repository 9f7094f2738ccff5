"""The asyncio twins, in one process: tasks contending, a loss seen by `await held.lost()`,
the async watch, status and unlock, AsyncLocks, AsyncSemaphore and AsyncElection."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Awaitable, TypeVar

import pytest
import sets3lock

from conftest import S3

T = TypeVar("T")


async def bounded(what: str, aw: Awaitable[T], timeout: float) -> T:
    try:
        return await asyncio.wait_for(aw, timeout)
    except asyncio.TimeoutError:
        pytest.fail(f"{what}: not within {timeout} s", pytrace=False)


def test_async_with_holds_then_releases(url: str) -> None:
    async def main() -> None:
        assert await sets3lock.status_async(url) is None
        async with sets3lock.AsyncLock(url, fenced=True) as held:
            assert isinstance(held, sets3lock.AsyncHeld)
            assert held.url == url and held.token == 1 and held.is_held()
            assert held.health() == "renewing"
            holder = await sets3lock.status_async(url)
            assert holder is not None and holder.owner == held.owner and holder.pid == os.getpid()
            with pytest.raises(sets3lock.Busy) as info:
                await sets3lock.AsyncLock(url, wait=False).acquire()
            assert info.value.holder is not None and info.value.holder.owner == held.owner
            t0 = time.monotonic()
            with pytest.raises(sets3lock.Timeout):
                await sets3lock.AsyncLock(url, timeout="300ms", poll_max="100ms").acquire()
            assert time.monotonic() - t0 < 3.5
        assert not held.is_held()
        after = await sets3lock.status_async(url)
        assert after is None or after.free, str(after)
        async with sets3lock.AsyncLock(url, fenced=True) as again:
            assert again.token == 2

    asyncio.run(main())


def test_an_exception_leaving_the_async_with_block_releases_the_lock(url: str) -> None:
    class Boom(Exception):
        pass

    async def main() -> None:
        with pytest.raises(Boom):
            async with sets3lock.AsyncLock(url) as held:
                assert await sets3lock.status_async(url) is not None
                raise Boom("the body failed")
        assert not held.is_held()
        assert await sets3lock.status_async(url) is None, "the lock is still held"

    asyncio.run(main())


def test_async_tasks_contend(url: str) -> None:
    inside = 0
    most = 0
    done = 0

    async def task() -> None:
        nonlocal inside, most, done
        for _ in range(3):
            async with sets3lock.AsyncLock(url, timeout="30s", poll_max="100ms"):
                inside += 1
                most = max(most, inside)
                await asyncio.sleep(0.05)
                inside -= 1
                done += 1

    async def main() -> None:
        await bounded("four tasks, three sections each", asyncio.gather(*(task() for _ in range(4))), 90)

    asyncio.run(main())
    assert (most, done) == (1, 12)


def test_async_lost_after_unlock(url: str) -> None:
    async def main() -> None:
        with pytest.raises(sets3lock.LockLost) as info:
            async with sets3lock.AsyncLock(url, lease="3s") as held:
                assert await sets3lock.unlock_async(url, held.etag) == "deleted"
                reason = await bounded("held.lost() after the object was deleted", held.lost(), 8)
                assert reason == "deleted"
                assert not held.is_held()
        assert info.value.reason == "deleted"

    asyncio.run(main())


def test_async_release_outcome(url: str) -> None:
    async def main() -> None:
        held = await sets3lock.AsyncLock(url).acquire()
        assert await held.release() == "deleted"
        assert await sets3lock.status_async(url) is None

    asyncio.run(main())


def test_watch_async_sees_free_held_free(url: str) -> None:
    async def main() -> None:
        events = sets3lock.watch_async(url, interval="200ms").__aiter__()
        first = await bounded("the first watch event", events.__anext__(), 10)
        assert first.kind == "free", first.kind
        held = await sets3lock.AsyncLock(url).acquire()
        event = await bounded("the watch event for the hold", events.__anext__(), 10)
        assert event.kind == "held" and event.holder is not None, event.kind
        assert event.holder.owner == held.owner
        await held.release()
        event = await bounded("the watch event for the release", events.__anext__(), 10)
        assert event.kind in ("free", "released"), event.kind

    asyncio.run(main())


def test_async_locks_semaphore_election(s3: S3, url: str) -> None:
    key = url.split("/", 3)[3]

    async def main() -> None:
        locks = sets3lock.AsyncLocks(f"s3://{s3.bucket}")
        held = await locks.acquire(key, wait=False)
        assert held.url == url
        with pytest.raises(sets3lock.Busy):
            await locks.acquire(key, wait=False)
        assert await held.release() == "deleted"
        assert locks.requests() > 0

        sem_url = url + "-sem"
        a = await sets3lock.AsyncSemaphore(sem_url, 2).acquire()
        async with sets3lock.AsyncSemaphore(sem_url, 2) as b:
            assert {a.slot, b.slot} == {0, 1}
            with pytest.raises(sets3lock.Busy):
                await sets3lock.AsyncSemaphore(sem_url, 2, wait=False).acquire()
        await a.release()

        election_url = url + "-election"
        one = sets3lock.AsyncElection(election_url, "one")
        two = sets3lock.AsyncElection(election_url, "two", poll_max="200ms")
        assert await two.leader() is None
        leading = await one.campaign()
        leader = await two.leader()
        assert leader is not None and leader.value == "one"
        waiting = asyncio.ensure_future(two.campaign())
        await asyncio.sleep(0.5)
        assert not waiting.done(), "a second candidate won while the first one led"
        await leading.release()
        now = await bounded("the second candidate elected", waiting, 15)
        leader = await one.leader()
        assert leader is not None and leader.value == "two"
        await now.release()

    asyncio.run(main())
