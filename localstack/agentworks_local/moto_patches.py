"""Local-only fixes that give moto the AWS semantics our code relies on.

DynamoDB applies each request atomically; moto's backend has no lock, so two threads
could both pass a condition and both write. One lock around moto's DynamoDB dispatch
restores per-request atomicity (the concurrency tests prove it matters).

S3 applies each request atomically too; moto keeps an object's bytes in a buffer that a
second put of the same key closes while the first one is still reading it ("I/O operation
on closed file": twenty identical first publishes of a Relay write one archive key). A
lock around moto's object requests does what S3 does.

StopExecution on AWS ends the execution at once (ABORTED); moto's executor only asks its
worker to stop, and a worker waiting for a task token keeps the execution RUNNING until the
token's timeout (days). The stop is reflected at once, as AWS does.

moto's server works out, on every request, which service a host name belongs to (listing
its own package folder and trying every service's URL patterns) and which methods its
handler class has (inspect.getmembers): neither changes while the process runs, so both
are remembered (a local AWS call took 2.1 ms before, 1.25 ms after).
"""

from __future__ import annotations

import threading
from typing import Any

_lock = threading.RLock()
_applied = False
_originals: dict[str, Any] = {}  # moto's own functions, for tests that compare


def dynamodb_lock() -> Any:
    """The lock every local DynamoDB request runs under (for in-process readers of moto's
    tables, such as the stream poller)."""
    return _lock


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
    _object_requests_are_atomic()
    _stop_is_immediate()
    _dispatch_is_cached()
    _definitions_validated_once()
    from agentworks_local import (
        dynamodb_expressions,
        dynamodb_index,
        dynamodb_query,
        dynamodb_transactions,
        dynamodb_wire,
    )

    # Queries and transactions that cost what they touch: the writes keep the sorted
    # per-partition indexes that the query and the transactions read.
    dynamodb_index.install(_lock)
    dynamodb_query.install(_lock)
    dynamodb_transactions.install(_lock)
    dynamodb_wire.install()  # responses and requests that cost what they carry
    dynamodb_expressions.install()  # placeholders checked as DynamoDB checks them
    _applied = True


def _object_requests_are_atomic() -> None:
    from moto.s3.responses import S3Response

    original = S3Response.key_response
    lock = threading.RLock()

    def key_response(self: Any, *args: Any, **kwargs: Any) -> Any:
        with lock:
            return original(self, *args, **kwargs)

    S3Response.key_response = key_response  # type: ignore[method-assign]


def _definitions_validated_once() -> None:
    """moto parses a state machine's definition with its ANTLR parser only to validate it
    (about 0.2 s a definition, most of a fresh stack's setup); the same text validates the
    same way, so each definition is validated once per process."""
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    original = StepFunctionsParserBackend._validate_definition
    valid: set[str] = set()

    def validate(definition: str) -> None:
        if definition not in valid:
            original(definition=definition)  # raises InvalidDefinition, remembered never
            valid.add(definition)

    StepFunctionsParserBackend._validate_definition = staticmethod(validate)  # type: ignore[method-assign]


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


def _dispatch_is_cached() -> None:
    from moto.core import responses
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    find_backend = _originals["get_backend_for_host"] = (
        DomainDispatcherApplication.get_backend_for_host
    )
    backends: dict[str | None, Any] = {}

    def get_backend_for_host(self: Any, host: str | None) -> Any:
        # Called under the dispatcher's own lock; the answer depends on the host alone.
        if host not in backends:
            backends[host] = find_backend(self, host)
        return backends[host]

    DomainDispatcherApplication.get_backend_for_host = get_backend_for_host  # type: ignore[method-assign]

    method_names = _originals["method_names_from_class"] = responses.method_names_from_class
    names_of: dict[type, list[str]] = {}

    def method_names_from_class(clazz: Any) -> list[str]:
        if clazz not in names_of:
            names_of[clazz] = method_names(clazz)
        return names_of[clazz]

    responses.method_names_from_class = method_names_from_class
