"""Faults real DynamoDB produces and moto never does, injected into one client.

A `before-send` hook runs once per HTTP attempt, in place of moto's own stub, so botocore's
retry machinery sees each injected error exactly as it would see AWS's: a throttle that
fails fewer attempts than the client's `max_attempts` is retried away, one that fails them
all reaches the code. A fault matches an operation (and optionally a predicate over the
request's JSON, e.g. the table or the keys it writes); it fails the `nth` matching attempt
and the `times - 1` matching attempts after it.

`commit_first=True` lets the request reach the store before the error is returned — a
write that committed but whose answer was lost, which botocore then retries.

botocore sleeps between retries; the plan records those delays instead of sleeping them,
so a test that exhausts the retries takes no real time (a fake clock for the backoff).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from botocore.awsrequest import AWSResponse

Predicate = Callable[[dict[str, Any]], bool]

_STATUS = {
    "TransactionCanceledException": 400,
    "ProvisionedThroughputExceededException": 400,
    "ThrottlingException": 400,
    "ConditionalCheckFailedException": 400,
    "InternalServerError": 500,
}


class _Body:
    """The raw stream botocore reads an HTTP response body from."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._data


@dataclass
class Fault:
    operation: str
    error: str
    reasons: list[str] | None = None
    where: Predicate | None = None
    nth: int = 1
    times: int = 1
    commit_first: bool = False
    matched: int = 0  # matching attempts seen
    injected: int = 0  # of which failed

    def body(self) -> bytes:
        data: dict[str, Any] = {
            "__type": f"com.amazonaws.dynamodb.v20120810#{self.error}",
            "message": f"injected {self.error}",
        }
        if self.error == "TransactionCanceledException":
            reasons = self.reasons or ["TransactionConflict"]
            data["message"] = (
                "Transaction cancelled, please refer cancellation reasons for specific "
                f"reasons [{', '.join(reasons)}]"
            )
            data["CancellationReasons"] = [
                {"Code": code} if code == "None" else {"Code": code, "Message": f"{code}"}
                for code in reasons
            ]
        return json.dumps(data).encode()


@dataclass
class FaultPlan:
    """The faults armed on one client, and what they did."""

    client: Any
    faults: list[Fault] = field(default_factory=list)
    backoff: list[float] = field(default_factory=list)  # seconds botocore asked to sleep
    _stub: Any = None

    @property
    def max_attempts(self) -> int:
        """Attempts botocore makes per call: failing this many in a row exhausts them."""
        retries = self.client.meta.config.retries or {}
        return int(retries.get("total_max_attempts") or retries.get("max_attempts", 2) + 1)

    @property
    def injected(self) -> int:
        return sum(f.injected for f in self.faults)

    def fail(
        self,
        operation: str,
        error: str,
        *,
        reasons: list[str] | None = None,
        where: Predicate | None = None,
        nth: int = 1,
        times: int = 1,
        commit_first: bool = False,
    ) -> Fault:
        fault = Fault(operation, error, reasons, where, nth, times, commit_first)
        self.faults.append(fault)
        return fault

    def exhaust(self, operation: str, error: str, **options: Any) -> Fault:
        """Fails every attempt of one call: what reaches the code when AWS keeps throttling."""
        return self.fail(operation, error, times=self.max_attempts, **options)

    def clear(self) -> None:
        for fault in self.faults:
            fault.times = 0

    def _on_send(self, request: Any, **_: Any) -> AWSResponse | None:
        target = request.headers.get("X-Amz-Target", b"")
        operation = (target.decode() if isinstance(target, bytes) else target).split(".")[-1]
        body = request.body
        params: dict[str, Any] = {}
        if body:
            params = json.loads(body.decode() if isinstance(body, bytes) else body)
        for fault in self.faults:
            if fault.operation != operation or (fault.where and not fault.where(params)):
                continue
            fault.matched += 1
            if not fault.nth <= fault.matched < fault.nth + fault.times:
                continue
            fault.injected += 1
            if fault.commit_first:
                self._stub(event_name="before-send.dynamodb", request=request)
            return AWSResponse(
                request.url,
                _STATUS.get(fault.error, 400),
                {"x-amzn-RequestId": "fault", "Content-Type": "application/x-amz-json-1.0"},
                _Body(fault.body()),
            )
        return self._stub(event_name="before-send.dynamodb", request=request)


def install(client: Any, monkeypatch: Any) -> FaultPlan:
    """Arms a plan on `client` (ahead of moto's stub) and records botocore's backoff."""
    import botocore.endpoint
    from moto.core.models import botocore_stubber

    plan = FaultPlan(client, _stub=botocore_stubber)
    # Every before-send handler runs (botocore takes the first answer), so moto's stub is
    # moved behind the plan: a failed attempt must not also reach the store.
    client.meta.events.unregister("before-send", botocore_stubber)
    client.meta.events.register("before-send.dynamodb", plan._on_send)

    class _Time:
        """botocore.endpoint's `time`, with the retry sleep recorded instead of slept."""

        def __getattr__(self, name: str) -> Any:
            import time

            return getattr(time, name)

        @staticmethod
        def sleep(seconds: float) -> None:
            plan.backoff.append(seconds)

    monkeypatch.setattr(botocore.endpoint, "time", _Time())
    return plan


def touches(table: str | None = None, pk: str = "", sk: str = "") -> Predicate:
    """The request (or, in a transaction, one of its items) is on `table` with a key whose
    pk and sk start with `pk` and `sk`."""

    def item_matches(request: dict[str, Any]) -> bool:
        if table is not None and request.get("TableName") != table:
            return False
        key = request.get("Key") or request.get("Item") or {}
        return str((key.get("pk") or {}).get("S", "")).startswith(pk) and str(
            (key.get("sk") or {}).get("S", "")
        ).startswith(sk)

    def match(params: dict[str, Any]) -> bool:
        if "TransactItems" in params:
            return any(item_matches(next(iter(e.values()))) for e in params["TransactItems"])
        return item_matches(params)

    return match
