"""The lock's semantics in one process, against SeaweedFS: holding, try-once, timeouts, fenced
tokens, a lock deleted behind the holder's back, watching, garbage collection, and the
operator calls (status, unlock) and the other shapes (Locks, Semaphore, Election)."""

from __future__ import annotations

import datetime
import gc
import os
import queue
import threading
import time
import warnings
from typing import TYPE_CHECKING, Union

import pytest
import sets3lock

from conftest import S3, is_free, wait_for

if TYPE_CHECKING:
    from sets3lock._native import Duration

Event = Union[sets3lock.WatchEvent, BaseException]


def describe(h: object) -> str:
    if isinstance(h, sets3lock.WatchEvent):
        return f"WatchEvent(kind={h.kind!r}, holder={describe(h.holder)}, etag={h.etag!r}, error={h.error!r})"
    if isinstance(h, sets3lock.Holder):
        return f"Holder(owner={h.owner!r}, pid={h.pid!r}, token={h.token!r}, free={h.free!r}, etag={h.etag!r})"
    return repr(h)


def test_with_holds_then_releases(url: str) -> None:
    assert sets3lock.status(url) is None
    with sets3lock.Lock(url) as held:
        assert isinstance(held, sets3lock.Held)
        assert held.url == url
        assert isinstance(held.owner, str) and held.owner
        assert isinstance(held.etag, str) and held.etag
        assert held.token is None, "presence mode has no token"
        assert held.slot is None
        assert held.is_held()
        assert held.health() == "renewing"
        remaining = held.remaining()
        assert remaining is not None and 0 < remaining <= 60.5, remaining
        held.ensure()
        now = sets3lock.status(url)
        assert now is not None, "status says free while the lock is held"
        assert now.owner == held.owner, describe(now)
        assert now.etag == held.etag, describe(now)
        assert now.pid == os.getpid(), describe(now)
        assert not now.free
    assert not held.is_held()
    assert held.health() == "ended"
    assert sets3lock.status(url) is None, "the object is still there after the with block"


class _Boom(Exception):
    pass


def test_an_exception_leaving_the_with_block_releases_the_lock(url: str) -> None:
    with pytest.raises(_Boom):
        with sets3lock.Lock(url) as held:
            assert sets3lock.status(url) is not None
            raise _Boom("the body failed")
    # The body's exception came through unchanged, and the lock is gone.
    assert not held.is_held()
    assert sets3lock.status(url) is None, "an exception in the body left the lock held"
    # The same through a Held used as a context manager, in fenced mode (freed, not deleted).
    with pytest.raises(_Boom):
        with sets3lock.Lock(url, fenced=True).acquire():
            raise _Boom("again")
    assert sets3lock.status(url) is None


def test_a_loss_and_an_exception_raise_lock_lost_with_the_body_s_exception_as_context(
    url: str,
) -> None:
    with pytest.raises(sets3lock.LockLost) as info:
        with sets3lock.Lock(url, lease=3) as held:
            assert sets3lock.unlock(url, held.etag) == "deleted"
            assert held.wait_lost(timeout=8) == "deleted"
            raise _Boom("the body noticed")
    assert isinstance(info.value.__context__, _Boom), repr(info.value.__context__)
    assert sets3lock.status(url) is None


def test_acquire_release_outcomes(url: str) -> None:
    held = sets3lock.Lock(url).acquire()
    assert held.release() == "deleted"
    assert sets3lock.status(url) is None
    fenced_url = url + "-fenced"
    held = sets3lock.Lock(fenced_url, fenced=True).acquire()
    assert held.token == 1
    assert held.release() == "freed"
    # A freed fenced lock reads as free (its record stays, with its token).
    assert is_free(sets3lock.status(fenced_url))
    with sets3lock.Lock(fenced_url, fenced=True) as again:
        assert again.token == 2


def test_held_is_a_context_manager(url: str) -> None:
    with sets3lock.Lock(url).acquire() as held:
        assert held.is_held()
        assert sets3lock.status(url) is not None
    assert not held.is_held()
    assert sets3lock.status(url) is None


def test_lock_object_is_reusable(url: str) -> None:
    lock = sets3lock.Lock(url, fenced=True)
    tokens = []
    for _ in range(2):
        with lock as held:
            tokens.append(held.token)
    assert tokens == [1, 2]


def test_busy_names_the_holder(url: str) -> None:
    with sets3lock.Lock(url, value="holder-value") as held:
        t0 = time.monotonic()
        with pytest.raises(sets3lock.Busy) as info:
            sets3lock.Lock(url, wait=False).acquire()
        assert time.monotonic() - t0 < 10
        e = info.value
        assert isinstance(e, sets3lock.Error)
        assert "\n" not in str(e), str(e)
        holder = e.holder
        assert holder is not None, f"Busy without a holder: {e}"
        assert holder.owner == held.owner, describe(holder)
        assert holder.pid == os.getpid(), describe(holder)
        assert holder.kind == "sets3lock", describe(holder)
        assert holder.value == "holder-value", describe(holder)
        assert holder.lease is not None and abs(holder.lease - 60) < 1, describe(holder)
        assert holder.token is None
        assert e.etag == held.etag
        assert str(holder), "str(holder) is empty"
        assert "\n" not in str(holder), str(holder)
        # The `with` form raises at entry too, and the holder is untouched.
        with pytest.raises(sets3lock.Busy):
            with sets3lock.Lock(url, wait=False):
                pytest.fail("entered a held lock")  # pragma: no cover
        assert held.is_held()
        held.ensure()
    assert sets3lock.status(url) is None


@pytest.mark.parametrize(
    "timeout", [0.5, "500ms", datetime.timedelta(milliseconds=500)], ids=["float", "str", "timedelta"]
)
def test_timeout(url: str, timeout: Duration) -> None:
    with sets3lock.Lock(url) as held:
        t0 = time.monotonic()
        with pytest.raises(sets3lock.Timeout) as info:
            sets3lock.Lock(url, timeout=timeout, poll_max="100ms").acquire()
        elapsed = time.monotonic() - t0
        assert isinstance(info.value, TimeoutError)
        assert isinstance(info.value, sets3lock.Error)
        # Deadlines hold: within the timeout plus 3 s, and not before it.
        assert 0.45 <= elapsed <= 3.5, f"timed out after {elapsed:.3f} s for a 0.5 s timeout"
        assert info.value.holder is not None and info.value.holder.owner == held.owner
        assert held.is_held()


def test_fenced_tokens_count_up(url: str) -> None:
    tokens = []
    for _ in range(3):
        with sets3lock.Lock(url, fenced=True) as held:
            tokens.append(held.token)
            now = sets3lock.status(url)
            assert now is not None and now.token == held.token, describe(now)
    assert tokens == [1, 2, 3]
    assert is_free(sets3lock.status(url))


def test_deleted_behind_the_holders_back(url: str) -> None:
    lease = 3.0
    with pytest.raises(sets3lock.LockLost) as info:
        with sets3lock.Lock(url, lease=lease) as held:
            assert sets3lock.unlock(url, held.etag) == "deleted"
            t0 = time.monotonic()
            reason = held.wait_lost(timeout=lease + 5)
            waited = time.monotonic() - t0
            assert reason == "deleted", f"wait_lost returned {reason!r} after {waited:.2f} s"
            # Learnt at the next renewal, a third of the lease later: within the lease.
            assert waited <= lease + 0.5, f"the loss was seen {waited:.2f} s later"
            assert not held.is_held()
            assert held.health() == "ended"
            with pytest.raises(sets3lock.LockLost):
                held.ensure()
    assert info.value.reason == "deleted"
    assert "\n" not in str(info.value)


def test_wait_lost_times_out_while_held(url: str) -> None:
    with sets3lock.Lock(url) as held:
        for timeout in (0.2, "200ms", datetime.timedelta(milliseconds=200), 0):
            t0 = time.monotonic()
            assert held.wait_lost(timeout=timeout) is None
            assert time.monotonic() - t0 < 2
        assert held.is_held()


def test_durations_accepted(url: str) -> None:
    for value in (30, 30.5, "30s", "250ms", "1h30m", "5m", datetime.timedelta(seconds=45)):
        sets3lock.Lock(url, lease=value, timeout=value, poll_max=value)
    with sets3lock.Lock(url, lease=datetime.timedelta(seconds=9)) as held:
        remaining = held.remaining()
        assert remaining is not None and 0 < remaining <= 9.5, remaining
        holder = sets3lock.status(url)
        assert holder is not None and holder.lease is not None
        assert abs(holder.lease - 9) < 0.5, describe(holder)


def test_garbage_collected_held_releases(url: str) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        held = sets3lock.Lock(url).acquire()
        assert sets3lock.status(url) is not None
        del held
        gc.collect()
    kinds = [w.category for w in caught]
    assert any(issubclass(k, ResourceWarning) for k in kinds), f"warnings seen: {caught!r}"
    wait_for("the lock free after its Held was collected", lambda: sets3lock.status(url) is None, 10)
    # And it can be taken again at once.
    sets3lock.Lock(url, wait=False).acquire().release()


def _watch_in_thread(w: sets3lock.Watch) -> queue.Queue[Event]:
    events: queue.Queue[Event] = queue.Queue()

    def run() -> None:
        try:
            for event in w:
                events.put(event)
        except BaseException as e:  # handed to the test
            events.put(e)

    threading.Thread(target=run, daemon=True).start()
    return events


def _next(events: queue.Queue[Event], timeout: float, seen: list[str]) -> sets3lock.WatchEvent:
    try:
        item = events.get(timeout=timeout)
    except queue.Empty:
        pytest.fail(f"no watch event within {timeout} s; seen so far: {seen}", pytrace=False)
    if isinstance(item, BaseException):
        raise item
    seen.append(describe(item))
    return item


def test_watch_sees_free_held_free(url: str) -> None:
    events = _watch_in_thread(sets3lock.watch(url, interval="200ms"))
    seen: list[str] = []
    first = _next(events, 10, seen)
    assert first.kind == "free", seen
    held = sets3lock.Lock(url).acquire()
    event = _next(events, 10, seen)
    assert event.kind == "held", seen
    assert event.holder is not None and event.holder.owner == held.owner, seen
    assert event.etag == held.etag, seen
    held.release()
    event = _next(events, 10, seen)
    assert event.kind in ("free", "released"), seen


def test_watch_first_event_is_the_holder(url: str) -> None:
    with sets3lock.Lock(url, fenced=True) as held:
        events = _watch_in_thread(sets3lock.watch(url, interval="200ms"))
        seen: list[str] = []
        first = _next(events, 10, seen)
        assert first.kind == "held", seen
        assert first.holder is not None and first.holder.token == 1, seen
        assert first.holder.owner == held.owner, seen
    event = _next(events, 10, seen)
    assert event.kind in ("free", "released"), seen


def test_status_and_unlock(url: str) -> None:
    assert sets3lock.unlock(url, '"00000000000000000000000000000000"') == "already_free"
    held = sets3lock.Lock(url).acquire()
    holder = sets3lock.status(url)
    assert holder is not None and holder.etag == held.etag, describe(holder)
    # Another ETag is not the lock we saw: nothing is deleted.
    with pytest.raises(sets3lock.Error) as info:
        sets3lock.unlock(url, '"00000000000000000000000000000000"')
    assert "\n" not in str(info.value)
    assert held.is_held()
    assert sets3lock.status(url) is not None
    assert sets3lock.unlock(url, held.etag) == "deleted"
    assert sets3lock.status(url) is None
    # Released before a renewal noticed: there is nothing left to delete.
    assert held.release() == "already_gone"
    assert not held.is_held()


def test_unlock_fenced_frees_and_keeps_the_token(url: str) -> None:
    held = sets3lock.Lock(url, fenced=True).acquire()
    assert sets3lock.unlock(url, held.etag) == "freed"
    assert is_free(sets3lock.status(url))
    assert held.release() in ("already_gone", "taken_over")
    with sets3lock.Lock(url, fenced=True) as again:
        assert again.token == 2


def test_locks_on_a_bucket(s3: S3, url: str) -> None:
    key = url.split("/", 3)[3]
    locks = sets3lock.Locks(f"s3://{s3.bucket}")
    held = locks.acquire(key, timeout="10s")
    assert held.url == url
    with pytest.raises(sets3lock.Busy) as info:
        locks.acquire(key, wait=False)
    assert info.value.holder is not None and info.value.holder.owner == held.owner
    other = locks.acquire(key + "-other", wait=False)
    assert other.url == url + "-other"
    assert held.release() == "deleted"
    assert other.release() == "deleted"
    assert locks.requests() > 0


def test_semaphore_in_one_process(url: str) -> None:
    first = sets3lock.Semaphore(url, 2).acquire()
    second = sets3lock.Semaphore(url, 2).acquire()
    assert {first.slot, second.slot} == {0, 1}
    with pytest.raises(sets3lock.Busy):
        sets3lock.Semaphore(url, 2, wait=False).acquire()
    first.release()
    with sets3lock.Semaphore(url, 2, wait=False) as third:
        assert third.slot == first.slot
    second.release()


def test_election(url: str) -> None:
    a = sets3lock.Election(url, "node-a")
    b = sets3lock.Election(url, "node-b")
    assert a.leader() is None
    leading = a.campaign()
    leader = b.leader()
    assert leader is not None and leader.value == "node-a", describe(leader)
    events = _watch_in_thread(b.observe(interval="200ms"))
    seen: list[str] = []
    first = _next(events, 10, seen)
    assert first.kind == "held" and first.holder is not None and first.holder.value == "node-a", seen
    leading.release()
    after = _next(events, 10, seen)
    assert after.kind in ("free", "released"), seen
    with b.campaign() as now_b:
        assert now_b.is_held()
        leader = a.leader()
        assert leader is not None and leader.value == "node-b", describe(leader)


def test_a_tflock_is_held_in_terraforms_format_and_unlocked_by_its_id(url: str) -> None:
    tflock = url + ".tfstate.tflock"
    held = sets3lock.Lock(tflock, lease="30s", operation="sets3lock nightly.py").acquire()
    holder = sets3lock.status(tflock)
    assert holder is not None and holder.kind == "sets3lock", describe(holder)
    info = holder.terraform
    assert info is not None, describe(holder)
    assert info["Operation"] == "sets3lock nightly.py"
    assert info["ID"].replace("-", "") == held.owner, (info, held.owner)
    assert info["Path"].endswith(".tfstate"), info  # the state's path, as Terraform writes it
    # Another ID is another lock: nothing is deleted.
    with pytest.raises(sets3lock.Error):
        sets3lock.unlock(tflock, id="00000000-0000-4000-8000-000000000000")
    assert held.is_held()
    assert sets3lock.unlock(tflock, id=info["ID"]) == "deleted"
    assert sets3lock.status(tflock) is None
    assert held.release() == "already_gone"
    # Other keys ask for the format; and it needs a lease.
    with sets3lock.Lock(url, lock_format="terraform") as plain:
        seen = sets3lock.status(url)
        assert seen is not None and seen.terraform is not None, describe(seen)
        assert seen.terraform["ID"].replace("-", "") == plain.owner
    with pytest.raises(ValueError) as refused:
        sets3lock.Lock(tflock, lease=0).acquire()
    assert "Terraform" in str(refused.value), refused.value
    with pytest.raises(ValueError):
        sets3lock.Lock(url, lock_format="hcl")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        sets3lock.unlock(url)


def test_unlock_if_stale_leaves_a_live_holder_and_refuses_a_lock_without_a_lease(url: str) -> None:
    assert sets3lock.unlock(url, if_stale=True) == "already_free"
    with sets3lock.Lock(url, lease="2s") as held:
        started = time.monotonic()
        with pytest.raises(sets3lock.Error) as info:
            sets3lock.unlock(url, if_stale=True)
        assert "not deleted" in str(info.value), info.value
        assert time.monotonic() - started < 2.5, "it stops waiting once the lock changes"
        assert held.is_held()
    with sets3lock.Lock(url, lease=0):
        with pytest.raises(ValueError) as refused:
            sets3lock.unlock(url, if_stale=True)
        assert "declares no lease" in str(refused.value), refused.value
    with pytest.raises(ValueError):
        sets3lock.unlock(url, id="x", if_stale=True)
