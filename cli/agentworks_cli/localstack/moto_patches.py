"""Local-only fixes that give moto the AWS semantics our code relies on.

DynamoDB applies each request atomically; moto's backend has no lock, so two threads
could both pass a condition and both write. One lock around moto's DynamoDB dispatch
restores per-request atomicity (the concurrency tests prove it matters).
"""

from __future__ import annotations

import threading
from typing import Any

_lock = threading.RLock()
_applied = False


def apply() -> None:
    global _applied
    if _applied:
        return
    from moto.dynamodb.responses import DynamoHandler

    original = DynamoHandler.call_action

    def call_action(self: Any) -> Any:
        with _lock:
            return original(self)

    DynamoHandler.call_action = call_action  # type: ignore[method-assign]
    _applied = True
