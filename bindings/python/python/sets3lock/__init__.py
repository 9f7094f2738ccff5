"""A distributed lock whose only server is an object-storage bucket (S3, Azure Blob, GCS).

The lock is one object: create-if-absent acquires it, replace-if-match renews it and
delete-if-match releases it. A lease bounds how long a holder that vanished keeps it.

>>> import sets3lock
>>> with sets3lock.Lock("s3://my-bucket/locks/nightly", lease=60, timeout=30) as held:  # doctest: +SKIP
...     run_the_job()
"""

from __future__ import annotations

import atexit

from ._errors import (
    AccessDenied,
    Busy,
    Error,
    LockLost,
    NoSuchBucket,
    StoreRefused,
    Timeout,
    Unreachable,
)
from ._native import (
    AsyncElection,
    AsyncHeld,
    AsyncLock,
    AsyncLocks,
    AsyncSemaphore,
    AsyncWatch,
    Election,
    Held,
    Holder,
    Lock,
    Locks,
    Semaphore,
    Watch,
    WatchEvent,
    __version__,
    shutdown,
    status,
    status_async,
    unlock,
    unlock_async,
    watch,
    watch_async,
)

__all__ = [
    "AccessDenied",
    "AsyncElection",
    "AsyncHeld",
    "AsyncLock",
    "AsyncLocks",
    "AsyncSemaphore",
    "AsyncWatch",
    "Busy",
    "Election",
    "Error",
    "Held",
    "Holder",
    "Lock",
    "LockLost",
    "Locks",
    "NoSuchBucket",
    "Semaphore",
    "StoreRefused",
    "Timeout",
    "Unreachable",
    "Watch",
    "WatchEvent",
    "__version__",
    "status",
    "status_async",
    "unlock",
    "unlock_async",
    "watch",
    "watch_async",
]


def _shutdown_at_exit() -> None:
    # Locks still held are released, and those dropped without a release are being released
    # in the background: give those requests (and the cleanup of an interrupted acquisition)
    # a few seconds, then stop the lock's threads before the interpreter finalizes.
    shutdown(5.0)


atexit.register(_shutdown_at_exit)
