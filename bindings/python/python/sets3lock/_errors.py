"""The exceptions sets3lock raises: one hierarchy under :class:`Error`.

Bad URLs, durations and options raise the built-in ``ValueError`` or ``TypeError`` instead,
with the same one-line message as the ``sets3lock`` command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from ._native import Holder


class Error(Exception):
    """Every error of sets3lock's own; ``str(e)`` is one line naming the problem and the fix."""


class Busy(Error):
    """A try-once acquisition (``wait=False``) found the lock held.

    ``holder`` says who holds it (``None`` if the record could not be read) and ``etag`` is
    the lock object's version, which ``sets3lock.unlock`` takes.
    """

    def __init__(self, message: str, holder: Optional[Holder], etag: Optional[str]) -> None:
        super().__init__(message)
        self.holder = holder
        self.etag = etag


class Timeout(Error, TimeoutError):
    """The lock was not acquired within ``timeout``; ``holder`` is the last holder seen."""

    def __init__(self, message: str, holder: Optional[Holder]) -> None:
        super().__init__(message)
        self.holder = holder


class LockLost(Error):
    """The lock was lost (taken over, deleted, expired) while it was held, or the hold a
    handle names has ended.

    Raised on leaving the ``with`` block, and by anything that needs the lock after a loss.
    ``reason`` is one of ``"taken_over"``, ``"deleted"``, ``"expired"``, ``"stopped"``.
    """

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class StoreRefused(Error):
    """The store refused a request for good (for a reason other than the credentials or a
    missing bucket), or the store check found that it does not honour conditional writes, so
    a lock there would protect nothing (or, in presence mode, cannot be released safely)."""


class AccessDenied(Error):
    """The store refused the credentials (HTTP 403)."""


class NoSuchBucket(Error):
    """The bucket (S3, GCS) or container (Azure) does not exist."""


class Unreachable(Error):
    """The store could not be reached, or kept failing, until the retries ran out."""
