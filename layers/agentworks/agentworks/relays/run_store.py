"""Data access for Relay runs and their durable steps (R2–R4) in the work table.

    RRUN#<run_id>                          RUN           the run (record, input, result, `v`)
    RRUN#<run_id>                          STEP#<name>   a durable step's checkpoint
    RRUN#<run_id>                          STEPS         how many steps it holds (`n`)
    RRKEY#<account>#<relay>#<caller>       K#<key>       idempotency key → run

While a run is not terminal it sits in the work table's sparse OpenCalls index under its
own partition (`open_store = RELAYOPEN`, `open_check = <ms>#<run_id>`), so the tick can
ask Step Functions whether its execution still runs (relays.reconcile).

A run and its key are written together, the key first-come: the same key finds the run it
made. A run changes by compare-and-set on `v` (the host and `relays retry` never interleave
half a change). A step is started by a conditional put together with its run's step count (at most
RELAY_STEPS_MAX), so the usual step costs one transaction to start and one write to finish;
forgetting a step gives its place back.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from agentworks import limits
from agentworks.dynamo import (
    TransactionCancelled,
    applied,
    from_item,
    read_item,
    to_item,
    transact_write,
)
from agentworks.relays.records import Checkpoint, RelayRun
from agentworks.usage.counts import Counts
from agentworks.usage.usage_store import UsageStore

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class RunChanged(Exception):
    """The run changed since it was read (another writer's compare-and-set won)."""


class StepLimitReached(Exception):
    """The run already holds RELAY_STEPS_MAX durable steps."""


def _run_key(run_id: str) -> dict[str, Any]:
    return to_item({"pk": f"RRUN#{run_id}", "sk": "RUN"})


def _key_key(run: RelayRun) -> dict[str, Any]:
    return to_item(
        {
            "pk": f"RRKEY#{run.account_id}#{run.relay}#{run.caller}",
            "sk": f"K#{run.idempotency_key}",
        }
    )


class RelayRunStore:
    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._db = client
        self._table = table

    def get(self, run_id: str) -> tuple[RelayRun, int] | None:
        """The run and its version."""
        response = self._db.get_item(
            TableName=self._table, Key=_run_key(run_id), ConsistentRead=True
        )
        data = from_item(response.get("Item"))
        if not data:
            return None
        record = json.loads(str(data["record"]))
        return RelayRun(
            **record, input_json=str(data["input"]), result_json=data.get("result")
        ), int(data["v"])

    def state(self, run_id: str) -> tuple[str, int] | None:
        """The run's status and attempt only (its record without the input and result: a
        small read, for a caller that asks often)."""
        response = self._db.get_item(
            TableName=self._table,
            Key=_run_key(run_id),
            ConsistentRead=True,
            ProjectionExpression="#r",
            ExpressionAttributeNames={"#r": "record"},
        )
        data = from_item(response.get("Item"))
        if not data:
            return None
        record = json.loads(str(data["record"]))
        return str(record["status"]), int(record.get("attempt", 0))

    def by_key(self, account_id: str, relay: str, caller: str, key: str) -> RelayRun | None:
        data = read_item(
            self._db, self._table, {"pk": f"RRKEY#{account_id}#{relay}#{caller}", "sk": f"K#{key}"}
        )
        found = self.get(str(data["run_id"])) if data else None
        return found[0] if found else None

    def create(self, run: RelayRun) -> bool:
        """False when the idempotency key already names a run."""
        items = {
            "run": {
                "Put": {
                    "TableName": self._table,
                    "Item": {**_run_key(run.run_id), **_record(run, 1)},
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            },
            "key": {
                "Put": {
                    "TableName": self._table,
                    "Item": {**_key_key(run), **to_item({"run_id": run.run_id})},
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            },
        }
        try:
            transact_write(self._db, items)
        except TransactionCancelled as cancelled:
            if cancelled.failed("key"):
                return False
            raise
        return True

    def replace(self, run: RelayRun, seen_version: int, usage: Counts | None = None) -> int:
        """Writes `run` over version `seen_version`; RunChanged if it moved on. New version.
        `usage`: what an execution's end adds to its account's counters, in one
        transaction with it (so a repeated end never counts twice)."""
        put = {
            "TableName": self._table,
            "Item": {**_run_key(run.run_id), **_record(run, seen_version + 1)},
            "ConditionExpression": "v = :seen",
            "ExpressionAttributeValues": to_item({":seen": seen_version}),
        }
        counted = UsageStore(self._db, self._table)
        if not counted.write_counted("Put", put, run.account_id, run.updated_at, run.run_id, usage):
            raise RunChanged()
        return seen_version + 1

    # -- runs whose execution may have ended unrecorded ---------------------------------

    def open_runs(self, due_by: int | None, limit: int) -> list[str]:
        """Ids of runs not yet terminal, due for a check by `due_by` (None: all of them),
        longest unchecked first."""
        from agentworks.crews.open_call_store import OPEN_CALLS

        condition = "open_store = :open"
        values: dict[str, Any] = {":open": RELAY_OPEN}
        if due_by is not None:
            condition += " AND open_check <= :due"
            values[":due"] = _open_check(due_by, "~")
        response = self._db.query(
            TableName=self._table,
            IndexName=OPEN_CALLS,
            KeyConditionExpression=condition,
            ExpressionAttributeValues=to_item(values),
            Limit=limit,
        )
        return [
            str((from_item(raw) or {})["pk"]).removeprefix("RRUN#") for raw in response["Items"]
        ]

    def recheck(self, run_id: str, at_ms: int) -> None:
        """Asks again at `at_ms` (the execution was found running); a run that left the
        index meanwhile stays out of it."""
        applied(
            self._db.update_item,
            TableName=self._table,
            Key=_run_key(run_id),
            UpdateExpression="SET open_check = :check",
            ConditionExpression="attribute_exists(open_check)",
            ExpressionAttributeValues=to_item({":check": _open_check(at_ms, run_id)}),
        )

    # -- durable steps ------------------------------------------------------------------

    def start_step(self, run_id: str, checkpoint: Checkpoint) -> Checkpoint | None:
        """Puts `checkpoint` (started) if the step has none; else the one it has.
        StepLimitReached when the run holds RELAY_STEPS_MAX steps already."""
        try:
            transact_write(
                self._db,
                {
                    "step": {
                        "Put": {
                            "TableName": self._table,
                            "Item": _checkpoint_item(run_id, checkpoint),
                            "ConditionExpression": "attribute_not_exists(pk)",
                        }
                    },
                    "count": self._counted(run_id, +1),
                },
            )
        except TransactionCancelled as cancelled:
            if cancelled.failed("step"):
                return self.step(run_id, checkpoint.name)
            if cancelled.failed("count"):
                raise StepLimitReached() from None
            raise
        return None

    def _counted(self, run_id: str, change: int) -> dict[str, Any]:
        """The transaction item moving the run's step count by `change` (a start may not
        pass RELAY_STEPS_MAX)."""
        update: dict[str, Any] = {
            "TableName": self._table,
            "Key": to_item({"pk": f"RRUN#{run_id}", "sk": "STEPS"}),
            "UpdateExpression": "ADD n :change",
        }
        values: dict[str, Any] = {":change": change}
        if change > 0:
            update["ConditionExpression"] = "attribute_not_exists(n) OR n < :max"
            values[":max"] = limits.RELAY_STEPS_MAX
        return {"Update": {**update, "ExpressionAttributeValues": to_item(values)}}

    def restart_step(self, run_id: str, checkpoint: Checkpoint, seen_attempt: int) -> bool:
        """An uncertain step runs again in this attempt (it was declared safe, or the run's
        owner said so); False if another attempt took it meanwhile."""
        return applied(
            self._db.put_item,
            TableName=self._table,
            Item=_checkpoint_item(run_id, checkpoint),
            **_started_by(seen_attempt),
        )

    def finish_step(
        self, run_id: str, name: str, attempt: int, completed_at: int, result_json: str
    ) -> bool:
        """Records the step completed by the attempt that started it; False otherwise."""
        condition = _started_by(attempt)
        condition["ExpressionAttributeValues"].update(
            to_item({":completed": "completed", ":at": completed_at, ":r": result_json})
        )
        return applied(
            self._db.update_item,
            TableName=self._table,
            Key=_step_key(run_id, name),
            UpdateExpression="SET #s = :completed, completed_at = :at, result_json = :r",
            **condition,
        )

    def abandon_step(self, run_id: str, name: str, attempt: int) -> None:
        """Forgets a step this attempt started and saw fail (it did not take effect)."""
        self._forget_step(run_id, name, _started_by(attempt))

    def _forget_step(self, run_id: str, name: str, condition: dict[str, Any]) -> None:
        """Deletes the step under `condition`, giving its place in the count back; nothing
        when the condition does not hold."""
        try:
            transact_write(
                self._db,
                {
                    "step": {
                        "Delete": {
                            "TableName": self._table,
                            "Key": _step_key(run_id, name),
                            **condition,
                        }
                    },
                    "count": self._counted(run_id, -1),
                },
            )
        except TransactionCancelled as cancelled:
            if not cancelled.failed("step"):
                raise

    def step(self, run_id: str, name: str) -> Checkpoint | None:
        response = self._db.get_item(
            TableName=self._table,
            Key=_step_key(run_id, name),
            ConsistentRead=True,
        )
        data = from_item(response.get("Item"))
        return _checkpoint(data) if data else None

    def steps(self, run_id: str) -> list[Checkpoint]:
        found: list[Checkpoint] = []
        start: dict[str, Any] | None = None
        while True:
            request: dict[str, Any] = {
                "TableName": self._table,
                "KeyConditionExpression": "pk = :pk AND begins_with(sk, :step)",
                "ExpressionAttributeValues": to_item({":pk": f"RRUN#{run_id}", ":step": "STEP#"}),
                "ConsistentRead": True,
            }
            if start:
                request["ExclusiveStartKey"] = start
            response = self._db.query(**request)
            found += [_checkpoint(from_item(item) or {}) for item in response["Items"]]
            start = response.get("LastEvaluatedKey")
            if not start:
                return sorted(found, key=lambda c: (c.started_at, c.name))

    def drop_step(self, run_id: str, name: str) -> None:
        self._forget_step(run_id, name, {"ConditionExpression": "attribute_exists(pk)"})


def _step_key(run_id: str, name: str) -> dict[str, Any]:
    return to_item({"pk": f"RRUN#{run_id}", "sk": f"STEP#{name}"})


def _started_by(attempt: int) -> dict[str, Any]:
    """The condition of a write to a step: still started, by `attempt`."""
    return {
        "ConditionExpression": "#s = :started AND attempt = :attempt",
        "ExpressionAttributeNames": {"#s": "status"},
        "ExpressionAttributeValues": to_item({":started": "started", ":attempt": attempt}),
    }


RELAY_OPEN = "RELAYOPEN"


def _open_check(at_ms: int, run_id: str) -> str:
    return f"{at_ms:013d}#{run_id}"


def _record(run: RelayRun, version: int) -> dict[str, Any]:
    # The input and the final JSON are attributes of their own, not strings inside the
    # record's JSON: escaped again there, they could double and pass the 400 KB item limit.
    record = asdict(run)
    input_json, result_json = record.pop("input_json"), record.pop("result_json")
    item: dict[str, Any] = {
        "record": json.dumps(record, separators=(",", ":")),
        "input": input_json,
        "result": result_json,
        "v": version,
    }
    if not run.terminal:  # a terminal run leaves the index
        due = (run.updated_at or run.created_at) + limits.RECONCILE_GRACE_SECONDS * 1000
        item.update(open_store=RELAY_OPEN, open_check=_open_check(due, run.run_id))
    return to_item(item)


def _checkpoint_item(run_id: str, checkpoint: Checkpoint) -> dict[str, Any]:
    data = asdict(checkpoint)
    return to_item({"pk": f"RRUN#{run_id}", "sk": f"STEP#{checkpoint.name}", **data})


def _checkpoint(data: dict[str, Any]) -> Checkpoint:
    return Checkpoint(
        name=str(data["name"]),
        status=data["status"],
        attempt=int(data["attempt"]),
        safe=bool(data.get("safe")),
        started_at=int(data["started_at"]),
        completed_at=int(data["completed_at"]) if data.get("completed_at") is not None else None,
        result_json=data.get("result_json"),
        replays=int(data.get("replays", 0)),
    )
