"""An AWS Lambda handler that does its work only if no other invocation is doing it.

The Locks object is made once per container and reused by warm invocations. The lock is
tried once (wait=False): a concurrent invocation answers 409 at once instead of waiting,
and the lease is kept short, so that a frozen or killed container blocks the key briefly.

Environment: LOCK_BUCKET (the bucket, e.g. my-bucket) and the function's AWS credentials.
"""

from __future__ import annotations

import json
import os
from typing import Any, Optional

import sets3lock

_locks: Optional[sets3lock.Locks] = None


def _get_locks() -> sets3lock.Locks:
    global _locks
    if _locks is None:
        _locks = sets3lock.Locks(f"s3://{os.environ['LOCK_BUCKET']}", lease="30s", fenced=True)
    return _locks


def process(order_id: str, token: int) -> dict[str, Any]:
    return {"order": order_id, "token": token}


def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    order_id = str(event["order_id"])
    try:
        held = _get_locks().acquire(f"locks/orders/{order_id}", wait=False)
    except sets3lock.Busy as e:
        holder = e.holder
        return {
            "statusCode": 409,
            "body": json.dumps({"busy": str(holder) if holder is not None else "unknown holder"}),
        }
    with held:
        assert held.token is not None  # fenced: always set
        result = process(order_id, held.token)
    return {"statusCode": 200, "body": json.dumps(result)}
