"""A child process for the tests: contends for a lock, a semaphore or waits to be interrupted,
and prints one JSON object (its findings) as its last line of stdout.

    _worker.py lock URL WITNESS SECTIONS HOLD_S FENCED(0|1)
    _worker.py async URL WITNESS TASKS SECTIONS HOLD_S
    _worker.py sem URL DIR SLOTS SECTIONS HOLD_S
    _worker.py asyncexit URL       (watch_async, AsyncLock, status_async; then exits)
    _worker.py sigint URL          (prints "waiting", then blocks on the held lock)
    _worker.py try URL             (one try-once acquisition; prints the outcome or the error)
    _worker.py holdforever URL LEASE_S WAITER(0|1)
                                   (holds the lock, with a thread waiting for it too if asked;
                                   prints "held" and sleeps until killed)
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
import time
from typing import Any

import sets3lock

# Waiters poll often, so hand-offs take a fraction of a second, and give up after a minute.
POLL = "250ms"
WAIT = "60s"


def enter_witness(path: str) -> bool:
    """Creates the witness file; False if it was already there (an overlap)."""
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    os.write(fd, str(os.getpid()).encode())
    os.close(fd)
    return True


def leave_witness(path: str) -> bool:
    """Removes the witness file; False if it was not ours any more (an overlap)."""
    try:
        with open(path) as f:
            mine = f.read() == str(os.getpid())
        os.unlink(path)
    except FileNotFoundError:
        return False
    return mine


def lock(url: str, witness: str, sections: int, hold: float, fenced: bool) -> dict[str, Any]:
    overlaps: list[str] = []
    grants: list[dict[str, Any]] = []
    for i in range(sections):
        with sets3lock.Lock(url, timeout=WAIT, poll_max=POLL, fenced=fenced) as held:
            start = time.monotonic()
            if not enter_witness(witness):
                overlaps.append(f"section {i}: the witness file was there on entry")
            time.sleep(hold)
            if not held.is_held():
                overlaps.append(f"section {i}: the lock was lost while held")
            if not leave_witness(witness):
                overlaps.append(f"section {i}: the witness file was not ours on exit")
            grants.append({"token": held.token, "start": start, "end": time.monotonic()})
    return {"pid": os.getpid(), "sections": len(grants), "overlaps": overlaps, "grants": grants}


async def async_lock(url: str, witness: str, tasks: int, sections: int, hold: float) -> dict[str, Any]:
    overlaps: list[str] = []
    done = 0
    inside = 0
    gaps: list[float] = []
    stop = asyncio.Event()

    async def heartbeat() -> None:
        # The loop must keep running while tasks wait for the lock.
        last = time.monotonic()
        while not stop.is_set():
            await asyncio.sleep(0.02)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    async def task(n: int) -> None:
        nonlocal done, inside
        for i in range(sections):
            async with sets3lock.AsyncLock(url, timeout=WAIT, poll_max=POLL) as held:
                inside += 1
                if inside != 1:
                    overlaps.append(f"task {n} section {i}: {inside} tasks of this process inside")
                if not enter_witness(witness):
                    overlaps.append(f"task {n} section {i}: the witness file was there on entry")
                await asyncio.sleep(hold)
                if not held.is_held():
                    overlaps.append(f"task {n} section {i}: the lock was lost while held")
                if not leave_witness(witness):
                    overlaps.append(f"task {n} section {i}: the witness file was not ours on exit")
                inside -= 1
                done += 1

    beat = asyncio.ensure_future(heartbeat())
    await asyncio.gather(*(task(n) for n in range(tasks)))
    stop.set()
    await beat
    return {
        "pid": os.getpid(),
        "sections": done,
        "overlaps": overlaps,
        "max_loop_gap": max(gaps) if gaps else 0.0,
    }


async def async_exit(url: str) -> dict[str, Any]:
    """A little of everything async, then the interpreter exits (which must be clean)."""
    first = "none"
    async for event in sets3lock.watch_async(url, interval="200ms"):
        first = event.kind
        break
    async with sets3lock.AsyncLock(url) as held:
        holder = await sets3lock.status_async(url)
        owner_seen = holder is not None and holder.owner == held.owner
    after = await sets3lock.status_async(url)
    return {"first": first, "owner_seen": owner_seen, "free_after": after is None}


def semaphore(url: str, directory: str, slots: int, sections: int, hold: float) -> dict[str, Any]:
    overlaps: list[str] = []
    most = 0
    used: list[int] = []
    done = 0
    for i in range(sections):
        with sets3lock.Semaphore(url, slots, timeout=WAIT, poll_max=POLL) as held:
            slot = held.slot
            if slot is None or not 0 <= slot < slots:
                overlaps.append(f"section {i}: slot {slot!r} is not in 0..{slots - 1}")
                slot_file = os.path.join(directory, f"slot-bad-{os.getpid()}")
            else:
                used.append(slot)
                slot_file = os.path.join(directory, f"slot-{slot}")
            mine = os.path.join(directory, f"in-{os.getpid()}")
            if not enter_witness(mine):
                overlaps.append(f"section {i}: this process was already inside")
            if not enter_witness(slot_file):
                overlaps.append(f"section {i}: slot {slot} was held by another process too")
            count = len([n for n in os.listdir(directory) if n.startswith("in-")])
            most = max(most, count)
            if count > slots:
                overlaps.append(f"section {i}: {count} processes inside a semaphore of {slots}")
            time.sleep(hold)
            count = len([n for n in os.listdir(directory) if n.startswith("in-")])
            most = max(most, count)
            if count > slots:
                overlaps.append(f"section {i}: {count} processes inside a semaphore of {slots}")
            leave_witness(slot_file)
            leave_witness(mine)
            done += 1
    return {"pid": os.getpid(), "sections": done, "overlaps": overlaps, "most": most, "slots": used}


def sigint(url: str) -> dict[str, Any]:
    print("waiting", flush=True)
    try:
        with sets3lock.Lock(url, timeout=None, poll_max=POLL):
            return {"outcome": "acquired"}
    except KeyboardInterrupt:
        return {"outcome": "KeyboardInterrupt", "caught_at": time.monotonic()}


def try_once(url: str) -> dict[str, Any]:
    started = time.monotonic()
    try:
        held = sets3lock.Lock(url, wait=False, request_timeout="2s", retry_limit=1).acquire()
    except Exception as e:  # reported to the test, which checks the class and the message
        return {
            "outcome": "error",
            "type": type(e).__name__,
            "classes": [c.__name__ for c in type(e).__mro__],
            "message": str(e),
            "elapsed": time.monotonic() - started,
        }
    return {"outcome": "acquired", "release": held.release()}


def exit_pending(url: str) -> dict[str, Any]:
    """Holds `url`, starts a daemon thread waiting for it, and returns without releasing: the
    interpreter's exit must release the lock and give up the waiting acquisition."""
    global _kept
    _kept = sets3lock.Lock(url, lease=60).acquire()

    def waiter() -> None:
        try:
            with sets3lock.Lock(url, timeout=None, poll_max="100ms"):
                time.sleep(3600)
        except BaseException:  # the exit gives the acquisition up
            pass

    threading.Thread(target=waiter, daemon=True).start()
    time.sleep(0.3)
    return {"pid": os.getpid(), "owner": _kept.owner}


_kept: Any = None


def hold_forever(url: str, lease: float, waiter: bool) -> None:
    """Holds `url` until the process is killed, with a second acquisition of it waiting on a
    thread of its own if `waiter`."""
    held = sets3lock.Lock(url, lease=lease).acquire()
    if waiter:

        def wait() -> None:
            with sets3lock.Lock(url, timeout=None, poll_max="100ms"):
                print("the waiting thread got the lock", flush=True)

        threading.Thread(target=wait, daemon=True).start()
    print(json.dumps({"held": held.owner, "pid": os.getpid()}), flush=True)
    time.sleep(3600)


def fork_exit(url: str) -> dict[str, Any]:
    """Holds `url`, forks, and times the child's normal exit (atexit hooks and all)."""
    held = sets3lock.Lock(url).acquire()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        sys.exit(0)
    _, status = os.waitpid(pid, 0)
    took = time.monotonic() - started
    health = held.health()
    held.release()
    return {"status": status, "took": took, "parent": health}


def main() -> None:
    mode, args = sys.argv[1], sys.argv[2:]
    result: dict[str, Any]
    if mode == "lock":
        result = lock(args[0], args[1], int(args[2]), float(args[3]), args[4] == "1")
    elif mode == "async":
        result = asyncio.run(async_lock(args[0], args[1], int(args[2]), int(args[3]), float(args[4])))
    elif mode == "asyncexit":
        result = asyncio.run(async_exit(args[0]))
    elif mode == "sem":
        result = semaphore(args[0], args[1], int(args[2]), int(args[3]), float(args[4]))
    elif mode == "sigint":
        result = sigint(args[0])
    elif mode == "try":
        result = try_once(args[0])
    elif mode == "exitpending":
        result = exit_pending(args[0])
    elif mode == "forkexit":
        result = fork_exit(args[0])
    elif mode == "holdforever":
        hold_forever(args[0], float(args[1]), args[2] == "1")
        return
    else:
        raise SystemExit(f"unknown mode {mode}")
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
