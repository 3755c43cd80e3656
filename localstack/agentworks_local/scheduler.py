"""What AWS does on its own schedule, done locally by one background thread:

- EventBridge: every function with a `Schedule` event (the Tick function) runs every few
  seconds with a "Scheduled Event" (moto's schedule rules never fire). The invocation is
  asynchronous, as on AWS: a failure is retried as the function's EventInvokeConfig says,
  then its record goes to the on-failure queue (failure_destinations.py);
- DynamoDB TTL: items whose TTL attribute is at or before now (less a configurable lag)
  are deleted (moto stores TTL settings but never expires anything). On AWS deletion lags
  by up to ~48 h, so code must already ignore expired-but-present items; the lag lets the
  local stack hold them as AWS does.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from agentworks_local.failure_destinations import FailureQueues
from agentworks_local.handlers import (
    LOCAL_ACCOUNT_ID,
    LOCAL_REGION,
    FunctionError,
    FunctionHost,
    HandlerMissing,
)
from agentworks_local.template import (
    LocalResources,
    load_template,
    resources_of_type,
)

# DynamoDB leaves items whose TTL lies more than five years in the past alone.
_TTL_HORIZON_SECONDS = 5 * 365 * 24 * 3600


def scheduled_event(
    rule_arn: str,
    now: float | None = None,
    region: str = LOCAL_REGION,
    account_id: str = LOCAL_ACCOUNT_ID,
) -> dict[str, Any]:
    """The event EventBridge gives a target of a schedule rule."""
    moment = time.gmtime(time.time() if now is None else now)
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": account_id,
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", moment),
        "region": region,
        "resources": [rule_arn],
        "detail": {},
    }


@dataclass(frozen=True)
class TtlTable:
    name: str
    ttl_attribute: str
    key_attributes: tuple[str, ...]


def ttl_tables(resources: LocalResources, template: dict[str, Any] | None = None) -> list[TtlTable]:
    """Every created table whose template definition enables TimeToLiveSpecification."""
    template = template if template is not None else load_template()
    tables = []
    for logical_id, resource in resources_of_type(template, "AWS::DynamoDB::Table").items():
        properties = resource.get("Properties") or {}
        ttl = properties.get("TimeToLiveSpecification") or {}
        if not ttl.get("Enabled") or logical_id not in resources.tables:
            continue
        keys = tuple(k["AttributeName"] for k in properties["KeySchema"])
        tables.append(TtlTable(resources.tables[logical_id], ttl["AttributeName"], keys))
    return tables


# Items of a table whose TTL attribute may lie between two times (inclusive): their key and
# TTL attributes, as a scan with that projection would return them.
TtlCandidates = Callable[[TtlTable, float, float], Iterable[dict[str, Any]]]


class TtlSweeper:
    """Deletes expired items as DynamoDB's TTL process would (only Number attributes count)."""

    def __init__(
        self,
        client: Any,
        tables: list[TtlTable],
        clock: Callable[[], float] = time.time,
        lag_seconds: float = 0.0,
        candidates: TtlCandidates | None = None,
    ) -> None:
        self._client = client
        self._tables = tables
        self._clock = clock
        # AWS deletes expired items up to ~48 h late: a lag holds them that long locally,
        # so code that forgets to treat expired-but-present as absent fails here too.
        self._lag = lag_seconds
        # Without candidates every pass scans every table; with an index of TTL values
        # (the local stack's) a pass costs what has expired.
        self._candidates = candidates

    def sweep_once(self) -> int:
        """One pass over every TTL table; returns how many items were deleted."""
        return sum(self._sweep_table(table) for table in self._tables)

    def _sweep_table(self, table: TtlTable) -> int:
        now = self._clock() - self._lag
        if self._candidates is not None:
            found = list(self._candidates(table, now - _TTL_HORIZON_SECONDS, now))
            return sum(
                1
                for item in found
                if self._expired(item.get(table.ttl_attribute), now) and self._delete(table, item)
            )
        names = {f"#k{i}": name for i, name in enumerate(table.key_attributes)}
        names["#ttl"] = table.ttl_attribute
        scan: dict[str, Any] = {
            "TableName": table.name,
            "ProjectionExpression": ", ".join(names),
            "ExpressionAttributeNames": names,
        }
        deleted = 0
        while True:
            page = self._client.scan(**scan)
            for item in page.get("Items", []):
                if self._expired(item.get(table.ttl_attribute), now) and self._delete(table, item):
                    deleted += 1
            if "LastEvaluatedKey" not in page:
                return deleted
            scan["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    @staticmethod
    def _expired(value: dict[str, str] | None, now: float) -> bool:
        if not value or "N" not in value:
            return False  # TTL ignores missing and non-Number attributes
        try:
            expires = float(value["N"])
        except ValueError:
            return False
        return now - _TTL_HORIZON_SECONDS <= expires <= now

    def _delete(self, table: TtlTable, item: dict[str, Any]) -> bool:
        try:
            self._client.delete_item(
                TableName=table.name,
                Key={name: item[name] for name in table.key_attributes},
                # Not if the item was given a new expiry since the scan.
                ConditionExpression="#ttl = :seen",
                ExpressionAttributeNames={"#ttl": table.ttl_attribute},
                ExpressionAttributeValues={":seen": item[table.ttl_attribute]},
            )
        except self._client.exceptions.ConditionalCheckFailedException:
            return False
        return True


class Scheduler:
    """One daemon thread: scheduled functions every `tick_seconds`, the TTL sweep every
    `sweep_seconds`. Failures are reported once per distinct message, never fatal."""

    def __init__(
        self,
        host: FunctionHost,
        sweeper: TtlSweeper | None,
        tick_seconds: float = 5.0,
        sweep_seconds: float = 5.0,
        warn: Callable[[str], None] = print,
        failures: FailureQueues | None = None,
    ) -> None:
        self._host = host
        self._sweeper = sweeper
        self._failures = failures  # None: one attempt, then the event is dropped
        self.tick_seconds = tick_seconds
        self.sweep_seconds = sweep_seconds
        self._warn = warn
        self._warned: set[str] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.ticks = 0
        self.swept = 0
        self.dead_lettered = 0  # invocations kept in an on-failure queue

    def scheduled_targets(self) -> list[tuple[str, str]]:
        """(function logical id, rule ARN) for every Schedule event in the template."""
        targets = []
        for spec in self._host.functions_with_event("Schedule"):
            for event_name, event in spec.events.items():
                if (event or {}).get("Type") == "Schedule":
                    rule = f"agentworks-{spec.logical_id}-{event_name}"
                    arn = f"arn:aws:events:{self._host.region}:{self._host.account_id}:rule/{rule}"
                    targets.append((spec.logical_id, arn))
        return targets

    def tick_once(self) -> None:
        for function, rule_arn in self.scheduled_targets():
            self.invoke_async(function, scheduled_event(rule_arn))
        self.ticks += 1

    def invoke_async(self, function: str, event: dict[str, Any]) -> bool:
        """One asynchronous invocation as Lambda runs it: retried, then kept in the
        function's on-failure queue (if it has one). True when an attempt succeeded."""
        retries = self._failures.retries(function) if self._failures else 0
        failure: FunctionError | None = None
        for _ in range(retries + 1):
            try:
                self._host.invoke(function, event)
                return True
            except HandlerMissing as missing:
                self._warn_once(f"warning: scheduled {function} skipped: {missing}")
                return False
            except FunctionError as error:
                failure = error
        assert failure is not None
        kept = self._failures and self._failures.invocation_failed(
            function, event, failure, retries + 1
        )
        if kept:
            self.dead_lettered += 1
        where = f"; its event is kept in {kept.rsplit('/', 1)[-1]}" if kept else ""
        self._warn_once(f"warning: scheduled {failure}{where}")
        return False

    def sweep_once(self) -> None:
        if self._sweeper is None:
            return
        try:
            self.swept += self._sweeper.sweep_once()
        except Exception as error:  # a failed pass is retried on the next one
            self._warn_once(f"warning: TTL sweep failed: {type(error).__name__}: {error}")

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="agentworks-scheduler", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> bool:
        """Stops the thread; False if a run was still busy after `timeout` seconds."""
        self._stop.set()
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _run(self) -> None:
        now = time.monotonic()
        next_tick, next_sweep = now + self.tick_seconds, now + self.sweep_seconds
        while not self._stop.wait(max(0.0, min(next_tick, next_sweep) - time.monotonic())):
            now = time.monotonic()
            if now >= next_tick:
                self._guarded(self.tick_once)
                next_tick = time.monotonic() + self.tick_seconds
            if now >= next_sweep:
                self._guarded(self.sweep_once)
                next_sweep = time.monotonic() + self.sweep_seconds

    def _guarded(self, run: Callable[[], None]) -> None:
        # The thread must outlive any failure (e.g. a handler file that does not import).
        try:
            run()
        except Exception as error:
            self._warn_once(f"warning: {type(error).__name__}: {error}")

    def _warn_once(self, line: str) -> None:
        if line not in self._warned:
            self._warned.add(line)
            self._warn(line)
