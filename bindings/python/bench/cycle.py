"""The Python package against the Rust blocking driver on the same server, side by side.

Rounds alternate: the Rust example `cycles` (its own timing of N acquire + release cycles,
blocking driver), then the same N cycles from Python (`Lock.acquire()` + `Held.release()`).
Then memory: the resident set before and after holding many locks. Run it with
``bash scripts/bench-python.sh``; it prints a table for the package's README.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
import uuid

import sets3lock


def rss_kib() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def python_cycles(url: str, cycles: int) -> float:
    lock = sets3lock.Lock(url, wait=False, store_check="once")
    lock.acquire().release()
    start = time.perf_counter()
    for _ in range(cycles):
        lock.acquire().release()
    return (time.perf_counter() - start) * 1e6 / cycles


def rust_cycles(binary: str, url: str, cycles: int, driver: str) -> float:
    out = subprocess.run(
        [binary, url, str(cycles), driver], check=True, capture_output=True, text=True
    )
    return float(out.stdout.split()[3])


def held_memory(bucket: str, count: int) -> tuple[float, float]:
    """KiB per lock held through one `Locks`, and per `Lock` object with its hold."""
    locks = sets3lock.Locks(bucket, store_check="once")
    prefix = f"bench/mem-{uuid.uuid4().hex}"
    locks.acquire(f"{prefix}/warm").release()
    before = rss_kib()
    held = [locks.acquire(f"{prefix}/many-{i}", wait=False) for i in range(count)]
    per_key = (rss_kib() - before) / count
    for h in held:
        h.release()
    one = sets3lock.Lock(f"{bucket}/{prefix}/warm-lock", store_check="once")
    one.acquire().release()
    before = rss_kib()
    objects = [sets3lock.Lock(f"{bucket}/{prefix}/one-{i}", wait=False, store_check="once") for i in range(count)]
    holds = [o.acquire() for o in objects]
    per_lock = (rss_kib() - before) / count
    for h in holds:
        h.release()
    return per_key, per_lock


def main() -> None:
    binary, bucket = sys.argv[1], sys.argv[2]
    cycles = int(os.environ.get("BENCH_CYCLES", "200"))
    rounds = int(os.environ.get("BENCH_ROUNDS", "5"))
    url = f"{bucket}/bench/py-cycle-{uuid.uuid4().hex}"
    rust: list[float] = []
    tokio: list[float] = []
    python: list[float] = []
    for _ in range(rounds):
        rust.append(rust_cycles(binary, url, cycles, "blocking"))
        tokio.append(rust_cycles(binary, url, cycles, "tokio"))
        python.append(python_cycles(url, cycles))
    r, t, p = statistics.median(rust), statistics.median(tokio), statistics.median(python)

    def rounds_of(xs: list[float]) -> str:
        return ", ".join(f"{x:.0f}" for x in xs)

    print(f"acquire + release, uncontended, {cycles} cycles x {rounds} rounds (median of rounds)")
    print(f"  Rust blocking driver   {r:8.0f} us/cycle   (rounds: {rounds_of(rust)})")
    print(f"  Rust tokio driver      {t:8.0f} us/cycle   (rounds: {rounds_of(tokio)})")
    print(f"  Python (sets3lock)     {p:8.0f} us/cycle   (rounds: {rounds_of(python)})")
    print(f"  ratio Python / Rust blocking  {p / r:6.3f}   (goal: within 1.15)")
    print(f"  ratio Python / Rust tokio     {p / t:6.3f}   (the binding's own cost)")
    count = int(os.environ.get("BENCH_HELD", "300"))
    per_key, per_lock = held_memory(bucket, count)
    print(f"memory per held lock ({count} held, resident set growth)")
    print(f"  one Locks, many keys   {per_key:8.1f} KiB")
    print(f"  one Lock object each   {per_lock:8.1f} KiB")


if __name__ == "__main__":
    main()
