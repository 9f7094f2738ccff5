"""Types of the native module: the Rust drivers, as Python sees them.

Import from `sets3lock`, not from here.
"""

import datetime
from types import TracebackType
from typing import AsyncIterator, Iterator, Literal, Optional, Union

Duration = Union[int, float, str, datetime.timedelta]
Health = Literal["renewing", "behind", "ended"]
Loss = Literal["taken_over", "deleted", "expired", "stopped", "released"]
Outcome = Literal["deleted", "freed", "taken_over", "already_gone"]
StoreCheck = Literal["cached", "once", "off"]

__version__: str

class Holder:
    kind: Literal["sets3lock", "go-sets3lock", "unknown"]
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
    def __str__(self) -> str: ...

class WatchEvent:
    kind: Literal["held", "free", "released", "stale", "unreachable", "reachable"]
    holder: Optional[Holder]
    etag: Optional[str]
    error: Optional[str]

class Held:
    url: str
    owner: str
    token: Optional[int]
    slot: Optional[int]
    @property
    def etag(self) -> str: ...
    def health(self) -> Health: ...
    def remaining(self) -> Optional[float]: ...
    def is_held(self) -> bool: ...
    def ensure(self) -> None: ...
    def wait_lost(self, timeout: Optional[Duration] = None) -> Optional[Loss]: ...
    def release(self) -> Outcome: ...
    def __enter__(self) -> "Held": ...
    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None: ...

class AsyncHeld:
    url: str
    owner: str
    token: Optional[int]
    slot: Optional[int]
    @property
    def etag(self) -> str: ...
    def health(self) -> Health: ...
    def remaining(self) -> Optional[float]: ...
    def is_held(self) -> bool: ...
    def ensure(self) -> None: ...
    async def lost(self) -> Loss: ...
    async def release(self) -> Outcome: ...
    async def __aenter__(self) -> "AsyncHeld": ...
    async def __aexit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None: ...

class Lock:
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
    ) -> None: ...
    def acquire(self) -> Held: ...
    def __enter__(self) -> Held: ...
    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None: ...

class AsyncLock:
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
    ) -> None: ...
    async def acquire(self) -> AsyncHeld: ...
    async def __aenter__(self) -> AsyncHeld: ...
    async def __aexit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None: ...

class Locks:
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
    ) -> None: ...
    def acquire(
        self, key: str, *, timeout: Optional[Duration] = None, wait: bool = True
    ) -> Held: ...
    def requests(self) -> int: ...

class AsyncLocks:
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
    ) -> None: ...
    async def acquire(
        self, key: str, *, timeout: Optional[Duration] = None, wait: bool = True
    ) -> AsyncHeld: ...
    def requests(self) -> int: ...

class Semaphore:
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
    ) -> None: ...
    def acquire(self) -> Held: ...
    def __enter__(self) -> Held: ...
    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None: ...

class AsyncSemaphore:
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
    ) -> None: ...
    async def acquire(self) -> AsyncHeld: ...
    async def __aenter__(self) -> AsyncHeld: ...
    async def __aexit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None: ...

class Watch(Iterator[WatchEvent]):
    def __iter__(self) -> "Watch": ...
    def __next__(self) -> WatchEvent: ...
    def current(self) -> Optional[WatchEvent]: ...

class AsyncWatch(AsyncIterator[WatchEvent]):
    def __aiter__(self) -> "AsyncWatch": ...
    async def __anext__(self) -> WatchEvent: ...

class Election:
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
    def campaign(self) -> Held: ...
    def leader(self) -> Optional[Holder]: ...
    def observe(self, *, interval: Optional[Duration] = None) -> Watch: ...

class AsyncElection:
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
    async def campaign(self) -> AsyncHeld: ...
    async def leader(self) -> Optional[Holder]: ...
    def observe(self, *, interval: Optional[Duration] = None) -> AsyncWatch: ...

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
) -> Watch: ...
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
) -> AsyncWatch: ...
def status(
    url: str,
    *,
    request_timeout: Optional[Duration] = None,
    endpoint: Optional[str] = None,
    region: Optional[str] = None,
    profile: Optional[str] = None,
    path_style: bool = False,
) -> Optional[Holder]: ...
async def status_async(
    url: str,
    *,
    request_timeout: Optional[Duration] = None,
    endpoint: Optional[str] = None,
    region: Optional[str] = None,
    profile: Optional[str] = None,
    path_style: bool = False,
) -> Optional[Holder]: ...
def unlock(
    url: str,
    etag: str,
    *,
    request_timeout: Optional[Duration] = None,
    endpoint: Optional[str] = None,
    region: Optional[str] = None,
    profile: Optional[str] = None,
    path_style: bool = False,
) -> Literal["deleted", "freed", "already_free"]: ...
async def unlock_async(
    url: str,
    etag: str,
    *,
    request_timeout: Optional[Duration] = None,
    endpoint: Optional[str] = None,
    region: Optional[str] = None,
    profile: Optional[str] = None,
    path_style: bool = False,
) -> Literal["deleted", "freed", "already_free"]: ...
def run_command(argv: list[str]) -> int: ...
def settle(timeout: float) -> bool: ...
