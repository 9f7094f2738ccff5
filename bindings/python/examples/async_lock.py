"""asyncio: several workers share one lock; waiting never blocks the event loop.

    python async_lock.py s3://my-bucket/locks/counter
"""

from __future__ import annotations

import asyncio
import sys

import sets3lock


async def worker(url: str, name: str, log: list[str]) -> None:
    async with sets3lock.AsyncLock(url, timeout="30s", poll_max="250ms") as held:
        log.append(f"{name} holds the lock (owner {held.owner[:8]}...)")
        await asyncio.sleep(0.1)
        if not held.is_held():
            raise RuntimeError(f"{name} lost the lock: {held.health()}")


async def watch_first(url: str) -> str:
    """The lock's state now: the first event of a watch."""
    async for event in sets3lock.watch_async(url):
        return event.kind
    return "no event"


async def main(url: str) -> None:
    print(f"before: {await watch_first(url)}")
    log: list[str] = []
    await asyncio.gather(*(worker(url, f"worker-{i}", log) for i in range(3)))
    print("\n".join(log))
    holder = await sets3lock.status_async(url)
    print("after: free" if holder is None or holder.free else f"after: held by {holder}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
