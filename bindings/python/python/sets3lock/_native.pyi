"""Types of the native module: the Rust drivers, as Python sees them.

Import from `sets3lock`, not from here.
"""

import datetime
from types import TracebackType
from typing import AsyncIterator, Iterator, Literal, Optional, Union

Duration = Union[int, float, str, datetime.timedelta]
Health = Literal["renewing", "behind", "ended"]
Loss = Literal["taken_over", "deleted", "expired", "stopped", "released"]
Outcome = Literal["deleted", "freed", "taken_over", "already_gone", "resting", "overdue", "held_elsewhere", "other"]
StoreCheck = Literal["cached", "once", "off"]
LockFormat = Literal["auto", "sets3lock", "terraform"]

__version__: str

class Holder:
    """Who holds a lock, as its record says (``status``, ``Busy.holder``, watch events)."""

    kind: Literal["sets3lock", "terraform", "go-sets3lock", "unknown"]
    etag: Optional[str]
    owner: Optional[str]
    host: Optional[str]
    pid: Optional[int]
    acquired_at: Optional[float]
    lease: Optional[float]
    token: Optional[int]
    free: bool
    value: Optional[str]
    id: Optional[str]
    terraform: Optional[dict[str, str]]
    """Terraform's lock info (``ID``, ``Operation``, ``Info``, ``Who``, ``Version``,
    ``Created``, ``Path``): of Terraform's or OpenTofu's own lock, or of a hold written in
    Terraform's format."""
    def __str__(self) -> str:
        """The holder as the command describes it."""

class WatchEvent:
    """One change a watch saw; the first event is the lock as it is now."""

    kind: Literal["held", "free", "released", "stale", "unreachable", "reachable"]
    holder: Optional[Holder]
    etag: Optional[str]
    error: Optional[str]

class Held:
    """A held lock, renewed in the background until released. A context manager: leaving
    the block releases it, and raises ``LockLost`` if the lock was lost meanwhile."""

    url: str
    owner: str
    token: Optional[int]
    slot: Optional[int]
    @property
    def etag(self) -> str:
        """The lock object's version now (it changes at each renewal)."""
    def health(self) -> Health:
        """"renewing", "behind" (renewals failing: less than half the validity left) or "ended"; sends no request."""
    def remaining(self) -> Optional[float]:
        """Seconds of validity left (0 once ended); ``None`` for a lease of 0."""
    def is_held(self) -> bool:
        """Whether the lock is held and valid now."""
    def ensure(self) -> None:
        """Raises ``LockLost`` if the lock was lost: call it before an irreversible step."""
    def wait_lost(self, timeout: Optional[Duration] = None) -> Optional[Loss]:
        """Blocks until the lock is lost or expires (then why), or for at most ``timeout`` (then ``None``)."""
    def release(self) -> Outcome:
        """Releases the lock; says what the release found."""
    def __enter__(self) -> "Held": ...
    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None: ...

class AsyncHeld:
    """A held lock for asyncio: ``lost()`` and ``release()`` are awaitables; ``async with``
    releases at the end of the block."""

    url: str
    owner: str
    token: Optional[int]
    slot: Optional[int]
    @property
    def etag(self) -> str:
        """The lock object's version now (it changes at each renewal)."""
    def health(self) -> Health:
        """"renewing", "behind" (renewals failing: less than half the validity left) or "ended"; sends no request."""
    def remaining(self) -> Optional[float]:
        """Seconds of validity left (0 once ended); ``None`` for a lease of 0."""
    def is_held(self) -> bool:
        """Whether the lock is held and valid now."""
    def ensure(self) -> None:
        """Raises ``LockLost`` if the lock was lost: call it before an irreversible step."""
    async def lost(self) -> Loss:
        """Resolves when the lock is lost or expires, with why."""
    async def release(self) -> Outcome:
        """Releases the lock; resolves with what the release found."""
    async def __aenter__(self) -> "AsyncHeld": ...
    async def __aexit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None: ...

class Lock:
    """A lock on one object: ``s3://bucket/key``, ``az://container/key`` or ``gs://bucket/key``.

    ``with Lock(url) as held:`` acquires it (waiting as ``timeout`` and ``wait`` say), renews
    it in the background and releases it at the end of the block. One ``Lock`` may be entered
    by several threads at once; each ``with`` gets its own hold."""

    url: str
    def __init__(
        self,
        url: str,
        *,
        timeout: Optional[Duration] = None,
        wait: bool = True,
        lease: Optional[Duration] = None,
        fenced: bool = False,
        value: Optional[str] = None,
        poll_max: Optional[Duration] = None,
        foreign_lease: Optional[Duration] = None,
        retry_limit: Optional[int] = None,
        request_timeout: Optional[Duration] = None,
        endpoint: Optional[str] = None,
        region: Optional[str] = None,
        profile: Optional[str] = None,
        path_style: bool = False,
        store_check: StoreCheck = "cached",
        lock_format: LockFormat = "auto",
        operation: Optional[str] = None,
        terraform_lease: Optional[Duration] = None,
    ) -> None: ...
    def acquire(self) -> Held:
        """Acquires (waiting as the arguments said; the GIL is released meanwhile): the hold."""
    def __enter__(self) -> Held: ...
    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None: ...
    def requests(self) -> int:
        """Requests sent to the store so far by this object."""

class AsyncLock:
    """A lock on one object, for asyncio: ``async with AsyncLock(url) as held:``."""

    url: str
    def __init__(
        self,
        url: str,
        *,
        timeout: Optional[Duration] = None,
        wait: bool = True,
        lease: Optional[Duration] = None,
        fenced: bool = False,
        value: Optional[str] = None,
        poll_max: Optional[Duration] = None,
        foreign_lease: Optional[Duration] = None,
        retry_limit: Optional[int] = None,
        request_timeout: Optional[Duration] = None,
        endpoint: Optional[str] = None,
        region: Optional[str] = None,
        profile: Optional[str] = None,
        path_style: bool = False,
        store_check: StoreCheck = "cached",
        lock_format: LockFormat = "auto",
        operation: Optional[str] = None,
        terraform_lease: Optional[Duration] = None,
    ) -> None: ...
    async def acquire(self) -> AsyncHeld:
        """Acquires; resolves with the hold. Cancelling gives the acquisition up."""
    async def __aenter__(self) -> AsyncHeld: ...
    async def __aexit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None: ...
    def requests(self) -> int:
        """Requests sent to the store so far by this object."""

class Locks:
    """Locks on many keys of one bucket (``Locks("s3://bucket")``), sharing one client and one
    background task."""

    bucket: str
    def __init__(
        self,
        bucket_url: str,
        *,
        lease: Optional[Duration] = None,
        fenced: bool = False,
        value: Optional[str] = None,
        poll_max: Optional[Duration] = None,
        foreign_lease: Optional[Duration] = None,
        retry_limit: Optional[int] = None,
        request_timeout: Optional[Duration] = None,
        endpoint: Optional[str] = None,
        region: Optional[str] = None,
        profile: Optional[str] = None,
        path_style: bool = False,
        store_check: StoreCheck = "cached",
        lock_format: LockFormat = "auto",
        operation: Optional[str] = None,
        terraform_lease: Optional[Duration] = None,
    ) -> None: ...
    def acquire(
        self, key: str, *, timeout: Optional[Duration] = None, wait: bool = True
    ) -> Held:
        """Acquires the lock on ``key`` (``wait=False`` tries once, ``timeout`` bounds the wait)."""
    def requests(self) -> int:
        """Requests sent to the store so far by this object."""

class AsyncLocks:
    """Locks on many keys of one bucket, for asyncio."""

    bucket: str
    def __init__(
        self,
        bucket_url: str,
        *,
        lease: Optional[Duration] = None,
        fenced: bool = False,
        value: Optional[str] = None,
        poll_max: Optional[Duration] = None,
        foreign_lease: Optional[Duration] = None,
        retry_limit: Optional[int] = None,
        request_timeout: Optional[Duration] = None,
        endpoint: Optional[str] = None,
        region: Optional[str] = None,
        profile: Optional[str] = None,
        path_style: bool = False,
        store_check: StoreCheck = "cached",
        lock_format: LockFormat = "auto",
        operation: Optional[str] = None,
        terraform_lease: Optional[Duration] = None,
    ) -> None: ...
    async def acquire(
        self, key: str, *, timeout: Optional[Duration] = None, wait: bool = True
    ) -> AsyncHeld:
        """Acquires the lock on ``key``; resolves with the hold."""
    def requests(self) -> int:
        """Requests sent to the store so far by this object."""

class Semaphore:
    """At most ``slots`` holders of ``url`` at once; ``held.slot`` says which slot a hold took."""

    url: str
    slots: int
    def __init__(
        self,
        url: str,
        slots: int,
        *,
        timeout: Optional[Duration] = None,
        wait: bool = True,
        lease: Optional[Duration] = None,
        value: Optional[str] = None,
        poll_max: Optional[Duration] = None,
        foreign_lease: Optional[Duration] = None,
        retry_limit: Optional[int] = None,
        request_timeout: Optional[Duration] = None,
        endpoint: Optional[str] = None,
        region: Optional[str] = None,
        profile: Optional[str] = None,
        path_style: bool = False,
        store_check: StoreCheck = "cached",
        lock_format: LockFormat = "auto",
        operation: Optional[str] = None,
        terraform_lease: Optional[Duration] = None,
    ) -> None: ...
    def acquire(self) -> Held:
        """Acquires (waiting as the arguments said; the GIL is released meanwhile): the hold."""
    def __enter__(self) -> Held: ...
    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None: ...

class AsyncSemaphore:
    """At most ``slots`` holders at once, for asyncio."""

    url: str
    slots: int
    def __init__(
        self,
        url: str,
        slots: int,
        *,
        timeout: Optional[Duration] = None,
        wait: bool = True,
        lease: Optional[Duration] = None,
        value: Optional[str] = None,
        poll_max: Optional[Duration] = None,
        foreign_lease: Optional[Duration] = None,
        retry_limit: Optional[int] = None,
        request_timeout: Optional[Duration] = None,
        endpoint: Optional[str] = None,
        region: Optional[str] = None,
        profile: Optional[str] = None,
        path_style: bool = False,
        store_check: StoreCheck = "cached",
        lock_format: LockFormat = "auto",
        operation: Optional[str] = None,
        terraform_lease: Optional[Duration] = None,
    ) -> None: ...
    async def acquire(self) -> AsyncHeld:
        """Acquires; resolves with the hold. Cancelling gives the acquisition up."""
    async def __aenter__(self) -> AsyncHeld: ...
    async def __aexit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None: ...

class Watch(Iterator[WatchEvent]):
    """A watched lock's events: the holder now, then one event per change (each step blocks)."""

    def __iter__(self) -> "Watch": ...
    def __next__(self) -> WatchEvent: ...
    def current(self) -> Optional[WatchEvent]:
        """The latest sighting, without a request (``None`` before the first); readable while
        another thread waits for the next."""

class AsyncWatch(AsyncIterator[WatchEvent]):
    """A watched lock's events, for asyncio (an async iterator)."""

    def __aiter__(self) -> "AsyncWatch": ...
    async def __anext__(self) -> WatchEvent: ...

class Election:
    """Leader election: one leader at a time, its ``value`` published in the lock."""

    url: str
    def __init__(
        self,
        url: str,
        value: str,
        *,
        lease: Optional[Duration] = None,
        poll_max: Optional[Duration] = None,
        retry_limit: Optional[int] = None,
        request_timeout: Optional[Duration] = None,
        endpoint: Optional[str] = None,
        region: Optional[str] = None,
        profile: Optional[str] = None,
        path_style: bool = False,
        store_check: StoreCheck = "cached",
    ) -> None: ...
    def campaign(self) -> Held:
        """Campaigns until elected (as long as it takes): the leadership; release it to resign."""
    def leader(self) -> Optional[Holder]:
        """The leader now (one read), ``None`` if nobody leads."""
    def observe(
        self, *, interval: Optional[Duration] = None, foreign_lease: Optional[Duration] = None
    ) -> Watch:
        """Watches the leadership: the leader now, then every change."""

class AsyncElection:
    """Leader election, for asyncio."""

    url: str
    def __init__(
        self,
        url: str,
        value: str,
        *,
        lease: Optional[Duration] = None,
        poll_max: Optional[Duration] = None,
        retry_limit: Optional[int] = None,
        request_timeout: Optional[Duration] = None,
        endpoint: Optional[str] = None,
        region: Optional[str] = None,
        profile: Optional[str] = None,
        path_style: bool = False,
        store_check: StoreCheck = "cached",
    ) -> None: ...
    async def campaign(self) -> AsyncHeld:
        """Campaigns until elected; resolves with the leadership."""
    async def leader(self) -> Optional[Holder]:
        """The leader now (one read), ``None`` if nobody leads."""
    def observe(
        self, *, interval: Optional[Duration] = None, foreign_lease: Optional[Duration] = None
    ) -> AsyncWatch:
        """Watches the leadership (an async iterator)."""

def watch(
    url: str,
    *,
    interval: Optional[Duration] = None,
    foreign_lease: Optional[Duration] = None,
    request_timeout: Optional[Duration] = None,
    endpoint: Optional[str] = None,
    region: Optional[str] = None,
    profile: Optional[str] = None,
    path_style: bool = False,
) -> Watch:
    """Watches ``url``: iterate for the holder now, then one event per change (a read every ``interval``, 2 s by default)."""
def watch_async(
    url: str,
    *,
    interval: Optional[Duration] = None,
    foreign_lease: Optional[Duration] = None,
    request_timeout: Optional[Duration] = None,
    endpoint: Optional[str] = None,
    region: Optional[str] = None,
    profile: Optional[str] = None,
    path_style: bool = False,
) -> AsyncWatch:
    """Watches ``url`` from asyncio: ``async for event in watch_async(url):``."""
def status(
    url: str,
    *,
    request_timeout: Optional[Duration] = None,
    endpoint: Optional[str] = None,
    region: Optional[str] = None,
    profile: Optional[str] = None,
    path_style: bool = False,
) -> Optional[Holder]:
    """Who holds the lock now (one read): a ``Holder`` with its ``etag``, or ``None`` if nobody does."""
async def status_async(
    url: str,
    *,
    request_timeout: Optional[Duration] = None,
    endpoint: Optional[str] = None,
    region: Optional[str] = None,
    profile: Optional[str] = None,
    path_style: bool = False,
) -> Optional[Holder]:
    """``status`` for asyncio."""
def unlock(
    url: str,
    etag: Optional[str] = None,
    *,
    id: Optional[str] = None,
    if_stale: bool = False,
    request_timeout: Optional[Duration] = None,
    endpoint: Optional[str] = None,
    region: Optional[str] = None,
    profile: Optional[str] = None,
    path_style: bool = False,
) -> Literal["deleted", "freed", "already_free"]:
    """Force-unlocks only if the lock's ETag is still ``etag`` (what ``status`` showed), with
    ``id=`` only if its Terraform lock ID is ``id`` (``terraform force-unlock`` without its
    race), or with ``if_stale=True`` only once it has stayed unchanged for its lease (waiting
    that long); raises ``Error`` if another holder has it now."""
async def unlock_async(
    url: str,
    etag: Optional[str] = None,
    *,
    id: Optional[str] = None,
    if_stale: bool = False,
    request_timeout: Optional[Duration] = None,
    endpoint: Optional[str] = None,
    region: Optional[str] = None,
    profile: Optional[str] = None,
    path_style: bool = False,
) -> Literal["deleted", "freed", "already_free"]:
    """``unlock`` for asyncio."""
def run_command(argv: list[str]) -> int:
    """The ``sets3lock`` command with these arguments (the program name first): its exit status."""
def shutdown(timeout: float) -> bool:
    """At interpreter exit: releases every lock still held, waits up to ``timeout`` seconds
    for the releases, then stops the lock's threads; whether the releases all finished."""
