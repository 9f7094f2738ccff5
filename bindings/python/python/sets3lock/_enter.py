"""How an async acquisition reaches Python, and how ``async with`` enters an ``AsyncLock`` or
``AsyncSemaphore``.

The hold is noted as entered by the task in the task itself, right after the acquisition is
delivered and before the block starts: an entry cancelled before that leaves nothing noted,
and its hold (if it arrived) is released.
"""

from __future__ import annotations

from typing import Any


async def delivered(acquiring: Any) -> Any:
    """Awaits a native acquisition and marks its hold as Python's: a hold that never gets
    here (its task cancelled as it succeeded) is released without a ``ResourceWarning``."""
    held = await acquiring
    held._delivered()
    return held


async def enter(lock: Any) -> Any:
    """Acquires with ``lock.acquire()`` and notes the hold for ``lock.__aexit__``."""
    held = await lock.acquire()
    lock._entered(held)
    return held
