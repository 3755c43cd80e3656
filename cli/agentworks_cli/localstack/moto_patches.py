"""Local-only fixes that give moto the AWS semantics our code relies on.

DynamoDB applies each request atomically; moto's backend has no lock, so two threads
could both pass a condition and both write. One lock around moto's DynamoDB dispatch
restores per-request atomicity (the concurrency tests prove it matters).

StopExecution on AWS ends the execution at once (ABORTED); moto's executor only asks its
worker to stop, and a worker waiting for a task token keeps the execution RUNNING until the
token's timeout (days). The stop is reflected at once, as AWS does.
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
    _stop_is_immediate()
    _applied = True


def _stop_is_immediate() -> None:
    from moto.stepfunctions.parser.api import ExecutionStatus
    from moto.stepfunctions.parser.backend.execution import Execution

    original = Execution.stop

    def stop(self: Any, stop_date: Any, error: str | None, cause: str | None) -> None:
        original(self, stop_date=stop_date, error=error, cause=cause)
        if self.exec_status == ExecutionStatus.RUNNING:
            self.exec_status = ExecutionStatus.ABORTED
            self.stop_date = stop_date

    Execution.stop = stop  # type: ignore[method-assign]
