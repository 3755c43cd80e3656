"""DynamoDB stream event sources, run locally (what Lambda's stream poller does on AWS).

moto can invoke a function from a stream itself, but synchronously inside the write that
made the record: every send would wait for the notifier. Here one background thread reads
each streamed table's shard a few times a second, hands the records that pass the event's
`FilterCriteria` to its function in batches of `BatchSize`, retries a failed batch
`MaximumRetryAttempts` times, then gives it up with a warning, as Lambda does: a record of
the batch (shard, sequence numbers) goes to the event's on-failure queue, if it names one.
Records once read are trimmed from moto's shard, so a long-running stack does not keep every
write (and `ops redrive` finds the batch's records gone, as after AWS's 24 hours).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from agentworks_local.failure_destinations import (
    FailureQueues,
    on_failure_queue,
    stream_batch_record,
)
from agentworks_local.handlers import (
    LOCAL_ACCOUNT_ID,
    LOCAL_REGION,
    FunctionError,
    FunctionHost,
)
from agentworks_local.template import LocalResources


@dataclass(frozen=True)
class StreamSource:
    function: str  # logical id
    table: str  # physical name
    batch_size: int
    retries: int
    patterns: tuple[dict[str, Any], ...]
    on_failure_queue: str | None = None  # queue URL of the event's DestinationConfig


def stream_sources(host: FunctionHost, resources: LocalResources) -> list[StreamSource]:
    """Every `Type: DynamoDB` event of the template's functions."""
    import json

    found = []
    for spec in host.functions_with_event("DynamoDB"):
        for event in spec.events.values():
            if (event or {}).get("Type") != "DynamoDB":
                continue
            props = event["Properties"]
            table_id = props["Stream"]["Fn::GetAtt"][0]
            filters = (props.get("FilterCriteria") or {}).get("Filters", [])
            found.append(
                StreamSource(
                    spec.logical_id,
                    resources.tables[table_id],
                    int(props.get("BatchSize", 100)),
                    int(props.get("MaximumRetryAttempts", 3)),
                    tuple(json.loads(f["Pattern"]) for f in filters),
                    on_failure_queue(props.get("DestinationConfig"), resources),
                )
            )
    return found


def _as_event_record(record: dict[str, Any]) -> dict[str, Any]:
    """A record as Lambda's event carries it: JSON throughout (moto keeps a datetime)."""
    change = dict(record["dynamodb"])
    created = change.get("ApproximateCreationDateTime")
    if isinstance(created, datetime):
        change["ApproximateCreationDateTime"] = int(created.timestamp())
    return {**record, "dynamodb": change}


def matches(pattern: Any, value: Any) -> bool:
    """The event-pattern subset the template uses: nested objects, lists of allowed
    values, and `{"prefix": …}`."""
    if isinstance(pattern, dict):
        return isinstance(value, dict) and all(
            key in value and matches(sub, value[key]) for key, sub in pattern.items()
        )
    if isinstance(pattern, list):
        return any(_allows(rule, value) for rule in pattern)
    return bool(pattern == value)


def _allows(rule: Any, value: Any) -> bool:
    if isinstance(rule, dict) and "prefix" in rule:
        return isinstance(value, str) and value.startswith(rule["prefix"])
    return bool(rule == value)


@dataclass
class StreamPoller:
    host: FunctionHost
    sources: list[StreamSource]
    lock: Any  # moto_patches.dynamodb_lock(): shards change under it
    warn: Callable[[str], None]
    interval_seconds: float = 0.05
    failures: FailureQueues | None = None  # where given-up batches are recorded
    delivered: int = 0  # records handed to functions
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="agentworks-streams", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        tables = list(dict.fromkeys(source.table for source in self.sources))
        while not self._stop.wait(self.interval_seconds):
            for table in tables:
                try:
                    self.poll_table(table)
                except Exception as error:  # the poller must outlive any one bad batch
                    self.warn(f"warning: stream of {table}: {error}")

    def poll(self, source: StreamSource) -> int:
        """Reads what the shard holds, delivers what passes the filters; records delivered."""
        return self.poll_table(source.table, [source])

    def poll_table(self, table: str, sources: list[StreamSource] | None = None) -> int:
        """Reads the table's shard once and hands each of its event sources what passes that
        source's filters (on AWS every event source mapping reads the stream on its own, so
        two functions on one stream both get every record); records delivered."""
        records, shard = self._take(table)
        delivered = 0
        for source in sources if sources is not None else self.sources:
            if source.table != table:
                continue
            wanted = [
                r
                for r in records
                if not source.patterns or any(matches(p, r) for p in source.patterns)
            ]
            for start in range(0, len(wanted), source.batch_size):
                self._deliver(source, wanted[start : start + source.batch_size], shard)
            delivered += len(wanted)
        self.delivered += delivered
        return delivered

    def _take(self, table_name: str) -> tuple[list[dict[str, Any]], tuple[str, str]]:
        """The shard's new records, and (stream ARN, shard id) for a failure record."""
        from moto.dynamodb.models import dynamodb_backends

        with self.lock:
            table = dynamodb_backends[LOCAL_ACCOUNT_ID][LOCAL_REGION].get_table(table_name)
            shard = table.stream_shard
            if shard is None or not shard.items:
                return [], ("", "")
            taken = list(shard.items)
            # moto numbers records from starting_sequence_number + position: keep it so.
            shard.items.clear()
            shard.starting_sequence_number += len(taken)
            where = (f"{table.table_arn}/stream/{table.latest_stream_label}", shard.id)
        return [_as_event_record(record.to_json()) for record in taken], where

    def _deliver(
        self, source: StreamSource, batch: list[dict[str, Any]], shard: tuple[str, str]
    ) -> None:
        for attempt in range(source.retries + 1):
            try:
                self.host.invoke(source.function, {"Records": batch})
                return
            except FunctionError as failure:
                if attempt < source.retries:
                    continue
                kept = ""
                if self.failures is not None and source.on_failure_queue:
                    arn = self.failures.resources.function_arns[source.function]
                    record = stream_batch_record(
                        arn, *shard, batch, failure, attempt + 1, time.time()
                    )
                    self.failures.batch_failed(source.on_failure_queue, record)
                    kept = f"; the batch is named in {source.on_failure_queue.rsplit('/', 1)[-1]}"
                self.warn(
                    f"warning: {source.function} gave up {len(batch)} stream records: "
                    f"{failure}{kept}"
                )
