"""Run a job while holding a lock: at most one machine runs it at a time.

    python with_lock.py s3://my-bucket/locks/nightly
"""

from __future__ import annotations

import sys
import time

import sets3lock


def nightly_job(token: int) -> None:
    # Hand the fencing token to whatever the job writes to, so that a late write from a
    # holder that lost the lock can be refused there.
    print(f"running the nightly job with fencing token {token}")
    time.sleep(0.2)


def main(url: str) -> int:
    try:
        with sets3lock.Lock(url, timeout="30s", lease="1m", fenced=True) as held:
            assert held.token is not None  # always set in fenced mode
            nightly_job(held.token)
            held.ensure()  # raises LockLost if the lock was lost meanwhile
    except sets3lock.Timeout as e:
        print(f"gave up waiting: {e}", file=sys.stderr)
        return 1
    except sets3lock.LockLost as e:
        print(f"the lock was lost ({e.reason}) while the job ran", file=sys.stderr)
        return 2
    print("done, lock released")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
