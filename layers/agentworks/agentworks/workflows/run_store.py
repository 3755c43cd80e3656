"""Data access for workflow runs in the work table.

    WFRUN#<run_id>                   RUN             the run (JSON), status, version, cost_usd,
                                                     item_transitions (a pipeline's items')
    WFRUN#<run_id>                   STEP#<item>#<stage>#<index>  one step (JSON), version
    WFRUNS#<account>                 <run_id>        the account's run list (newest last)
    WFCACHE#<account>#<cacheKey>     STEP#<label>#<input hash>   the resume cache (W6), TTL

A run and its steps share one partition, so a status is one Query. Steps are written when
they first run (a run of 100 steps cannot be one transaction). A step whose turns outgrow
the item keeps them in S3 (`sessions/…`), the item holding the key.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from agentworks import limits
from agentworks.dynamo import (
    condition_failed,
    from_item,
    query_items,
    read_item,
    to_item,
    transact_write,
)
from agentworks.usage.counts import Counts
from agentworks.usage.usage_store import UsageStore
from agentworks.workflows.records import TERMINAL_RUN, Position, RunRecord, StepRecord

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class StaleRecord(Exception):
    """The record moved since it was read: read again."""


def run_pk(run_id: str) -> str:
    return f"WFRUN#{run_id}"


def step_sk(at: Position) -> str:
    return f"STEP#{at.item:03d}#{at.stage:02d}#{at.index:02d}"


def _json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class CachedStep:
    """A journaled step of the resume cache (found by its resolved-input hash): what a replay
    copies."""

    output: str | None
    turns: list[dict[str, str]]
    # A cli step's: the CLI session it left and the runner that holds it, so a later step
    # can resume it there (issue 10 item 6).
    session_id: str | None = None
    runner: str | None = None
    runner_name: str | None = None


@dataclass(frozen=True)
class RunState:
    """A run as one Query reads it: the run, its summed cost, the steps written so far."""

    run: RunRecord
    run_version: int  # what a save of the run is conditioned on
    cost_usd: float
    steps: list[StepRecord]
    versions: dict[Position, int]  # the step items' versions
    item_transitions: int = 0  # states a pipeline's item executions entered (usage)

    def step_at(self, at: Position) -> tuple[StepRecord, int] | None:
        for step in self.steps:
            if step.position == at:
                return step, self.versions[at]
        return None


@dataclass(frozen=True)
class RunEnd:
    """What a run's end reads: the run, and each step's status only (a pipeline of 10,000
    items has up to 100,000 steps; their sessions are not read to end it)."""

    run: RunRecord
    run_version: int
    item_transitions: int  # states its items' child executions entered (usage)
    statuses: dict[Position, str]
    mcp_tool_calls: int = 0  # its steps' MCP tool calls (usage)


def _position(sk: str) -> Position:
    _, item, stage, index = sk.split("#")
    return Position(int(item), int(stage), int(index))


@dataclass(frozen=True)
class RunSummary:
    run_id: str
    workflow_id: str
    connection_id: str
    status: str
    created_at: int
    retry_of: str | None


class RunStore:
    def __init__(
        self, client: DynamoDBClient, table: str, s3: Callable[[], Any], bucket: str
    ) -> None:
        self._db = client
        self._table = table
        self._s3 = s3  # created on first use: most steps never outgrow their item
        self._bucket = bucket

    # ---- runs ----

    def create(self, run: RunRecord, also: dict[str, dict[str, Any]] | None = None) -> None:
        """The run and its list entry, together — with `also`'s transaction items (a webhook
        delivery's record): a condition of theirs that fails raises TransactionCancelled
        naming them, and nothing is written."""
        transact_write(
            self._db,
            {
                **(also or {}),
                "run": {
                    "Put": {
                        "TableName": self._table,
                        "Item": self._run_item(run, 1),
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                },
                "listed": {
                    "Put": {
                        "TableName": self._table,
                        "Item": to_item(
                            {
                                "pk": f"WFRUNS#{run.account_id}",
                                "sk": run.run_id,
                                **self._summary(run),
                            }
                        ),
                    }
                },
            },
        )

    def _run_item(self, run: RunRecord, version: int) -> dict[str, Any]:
        return to_item(
            {
                "pk": run_pk(run.run_id),
                "sk": "RUN",
                "account_id": run.account_id,
                "status": run.status,
                "record": _json(run.to_json()),
                "version": version,
            }
        )

    @staticmethod
    def _summary(run: RunRecord) -> dict[str, Any]:
        return {
            "workflow_id": run.workflow_id,
            "connection_id": run.connection_id,
            "status": run.status,
            "created_at": run.created_at,
            "retry_of": run.retry_of,
        }

    def _read_run(self, run_id: str) -> dict[str, Any] | None:
        response = self._db.get_item(
            TableName=self._table,
            Key=to_item({"pk": run_pk(run_id), "sk": "RUN"}),
            ConsistentRead=True,
        )
        return from_item(response.get("Item")) or None

    def get(self, run_id: str) -> tuple[RunRecord, int, float] | None:
        """The run, its version and the cost its steps have added up."""
        data = self._read_run(run_id)
        if not data:
            return None
        return _run(data), int(data["version"]), float(data.get("cost_usd", 0))

    def ended(self, run_id: str) -> bool:
        """Whether the run is over (cancelled, failed, done) or gone: what a turn waiting on
        another system (an MCP tool call, an A2A agent's task) reads to stop there too."""
        found = self.get(run_id)
        return found is None or found[0].status in TERMINAL_RUN

    def read_end(self, run_id: str) -> RunEnd | None:
        """The run and its steps' statuses: a GetItem and a Query that projects each step's
        sort key and status."""
        data = self._read_run(run_id)
        if not data:
            return None
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :steps)",
            "ExpressionAttributeValues": to_item({":pk": run_pk(run_id), ":steps": "STEP#"}),
            "ProjectionExpression": "sk, #s",
            "ExpressionAttributeNames": {"#s": "status"},
            "ConsistentRead": True,
        }
        statuses = {
            _position(str(step["sk"])): str(step["status"])
            for step in query_items(self._db, kwargs)
        }
        return RunEnd(
            _run(data),
            int(data["version"]),
            int(data.get("item_transitions", 0)),
            statuses,
            int(data.get("mcp_tool_calls", 0)),
        )

    def read_all(self, run_id: str) -> RunState | None:
        """The run and every step it wrote so far, in one (paged) Query."""
        return self._read(run_id)

    def _read(self, run_id: str, through: str | None = None) -> RunState | None:
        """The run and its steps up to the sort key `through` (all, when None)."""
        values: dict[str, Any] = {":pk": run_pk(run_id)}
        condition = "pk = :pk"
        if through is not None:  # "RUN" sorts before every step
            condition += " AND sk BETWEEN :run AND :through"
            values.update({":run": "RUN", ":through": through})
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": condition,
            "ExpressionAttributeValues": to_item(values),
            "ConsistentRead": True,
        }
        run: RunRecord | None = None
        run_version, cost, items = 0, 0.0, 0
        steps: list[StepRecord] = []
        versions: dict[Position, int] = {}
        for data in query_items(self._db, kwargs):
            if data["sk"] == "RUN":
                run, cost = _run(data), float(data.get("cost_usd", 0))
                run_version = int(data["version"])
                items = int(data.get("item_transitions", 0))
            else:
                step = self._step(data)
                steps.append(step)
                versions[step.position] = int(data["version"])
        if run is None:
            return None
        return RunState(run, run_version, cost, steps, versions, items)

    def read_item(self, run_id: str, item: int) -> RunState | None:
        """The run and the steps of one item (a pipeline's, W12): what a step of that item
        reads — never the other items' steps, however many the run has. Item 0 (every run
        of stages) is one Query: its steps sort right after the run."""
        if item == 0:
            return self._read(run_id, through=f"STEP#{0:03d}#~")  # item 0's, then no more
        found = self.get(run_id)
        if found is None:
            return None
        run, run_version, cost = found
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :item)",
            "ExpressionAttributeValues": to_item(
                {":pk": run_pk(run_id), ":item": f"STEP#{item:03d}#"}
            ),
            "ConsistentRead": True,
        }
        steps: list[StepRecord] = []
        versions: dict[Position, int] = {}
        for data in query_items(self._db, kwargs):
            step = self._step(data)
            steps.append(step)
            versions[step.position] = int(data["version"])
        return RunState(run, run_version, cost, steps, versions)

    def save(
        self,
        run: RunRecord,
        version: int,
        status_changed: bool = True,
        usage: Counts | None = None,
    ) -> int:
        """The run under the version that was read, and its list entry's status when that
        changed (a recorded webhook delivery changes only the run). `usage`: what the run's
        end adds to its account's counters, in one transaction with it (counted once)."""
        update: dict[str, Any] = {
            "TableName": self._table,
            "Key": to_item({"pk": run_pk(run.run_id), "sk": "RUN"}),
            "UpdateExpression": "SET #r = :r, #s = :s, version = :next",
            "ConditionExpression": "version = :v",
            "ExpressionAttributeNames": {"#r": "record", "#s": "status"},
            "ExpressionAttributeValues": to_item(
                {":r": _json(run.to_json()), ":s": run.status, ":next": version + 1, ":v": version}
            ),
        }
        ended_at = run.ended_at or run.created_at  # the day the run ended counts it
        counted = UsageStore(self._db, self._table)
        if not counted.write_counted("Update", update, run.account_id, ended_at, run.run_id, usage):
            raise StaleRecord(run.run_id)
        if status_changed:
            self._db.put_item(
                TableName=self._table,
                Item=to_item(
                    {"pk": f"WFRUNS#{run.account_id}", "sk": run.run_id, **self._summary(run)}
                ),
            )
        return version + 1

    def add_item_transitions(self, run_id: str, entered: int) -> None:
        """W12: the states one item's child execution entered, for the run's usage."""
        self._db.update_item(
            TableName=self._table,
            Key=to_item({"pk": run_pk(run_id), "sk": "RUN"}),
            UpdateExpression="ADD item_transitions :n",
            ExpressionAttributeValues=to_item({":n": entered}),
        )

    def add_mcp_calls(self, run_id: str, made: int) -> None:
        """A step's MCP tool calls, counted on the run for its end's usage (issue 28)."""
        self._db.update_item(
            TableName=self._table,
            Key=to_item({"pk": run_pk(run_id), "sk": "RUN"}),
            UpdateExpression="ADD mcp_tool_calls :n",
            ExpressionAttributeValues=to_item({":n": made}),
        )

    def add_cost(self, run_id: str, cost_usd: float) -> None:
        if cost_usd <= 0:
            return
        self._db.update_item(
            TableName=self._table,
            Key=to_item({"pk": run_pk(run_id), "sk": "RUN"}),
            UpdateExpression="ADD cost_usd :c",
            ExpressionAttributeValues=to_item({":c": _decimal(cost_usd)}),
        )

    def list_runs(
        self, account_id: str, limit: int, before: str | None = None
    ) -> tuple[list[RunSummary], bool]:
        """The account's latest runs, newest first — those older than run `before` when
        given — and whether older ones follow."""
        values = {":pk": f"WFRUNS#{account_id}"}
        if before is not None:
            values[":before"] = before
        page = self._db.query(
            TableName=self._table,
            KeyConditionExpression="pk = :pk" + (" AND sk < :before" if before else ""),
            ExpressionAttributeValues=to_item(values),
            ScanIndexForward=False,
            Limit=limit + 1,
        )
        found = []
        for raw in page["Items"][:limit]:
            data = from_item(raw) or {}
            found.append(
                RunSummary(
                    run_id=data["sk"],
                    workflow_id=data["workflow_id"],
                    connection_id=data["connection_id"],
                    status=data["status"],
                    created_at=int(data["created_at"]),
                    retry_of=data.get("retry_of"),
                )
            )
        return found, len(page["Items"]) > limit

    # ---- steps ----

    def get_step(self, run_id: str, at: Position) -> tuple[StepRecord, int] | None:
        data = read_item(self._db, self._table, {"pk": run_pk(run_id), "sk": step_sk(at)})
        return (self._step(data), int(data["version"])) if data else None

    def save_step(self, step: StepRecord, version: int) -> int:
        """The step under the version that was read (0: not written yet)."""
        stored = step.to_json()
        encoded = _json(stored)
        if len(encoded.encode()) > limits.WORKFLOW_STEP_ITEM_MAX_BYTES:
            # The session's turns (and the output) outgrew the item: they go to S3.
            key = f"sessions/{step.run_id}/{step.item:03d}-{step.stage:02d}-{step.index:02d}.json"
            self._s3().put_object(
                Bucket=self._bucket,
                Key=key,
                Body=_json(
                    {"turns": step.turns, "output": step.output, "mcp_calls": step.mcp_calls}
                ).encode(),
            )
            encoded = _json(
                {**stored, "turns": [], "output": None, "mcp_calls": [], "turns_file": key}
            )
        request: dict[str, Any] = {
            "TableName": self._table,
            "Item": to_item(
                {
                    "pk": run_pk(step.run_id),
                    "sk": step_sk(step.position),
                    "status": step.status,
                    "record": encoded,
                    "version": version + 1,
                }
            ),
            "ConditionExpression": "attribute_not_exists(pk)",
        }
        if version:
            request["ConditionExpression"] = "version = :v"
            request["ExpressionAttributeValues"] = to_item({":v": version})
        try:
            self._db.put_item(**request)
        except ClientError as error:
            if condition_failed(error):
                raise StaleRecord(step.label) from None
            raise
        return version + 1

    def _step(self, data: dict[str, Any]) -> StepRecord:
        step = StepRecord.from_json(json.loads(data["record"]))
        if step.turns_file:
            body = self._s3().get_object(Bucket=self._bucket, Key=step.turns_file)["Body"]
            moved = json.loads(body.read())
            step.turns, step.output = moved["turns"], moved["output"]
            step.mcp_calls = moved.get("mcp_calls", [])
        return step

    def keep_content(self, step: StepRecord, name: str, data: bytes) -> str:
        """Content too large for the step's record (an MCP call's arguments and result),
        kept beside its session in S3; returns the key the record names."""
        key = f"sessions/{step.run_id}/{step.item:03d}-{step.stage:02d}-{step.index:02d}/{name}"
        self._s3().put_object(Bucket=self._bucket, Key=key, Body=data)
        return key

    # ---- resume cache (W6) ----

    def cached(
        self, account_id: str, cache_key: str, label: str, input_hash: str, now_s: int
    ) -> CachedStep | None:
        key = {"pk": f"WFCACHE#{account_id}#{cache_key}", "sk": _entry(label, input_hash)}
        data = read_item(self._db, self._table, key)
        # TTL deletes lag (and moto never deletes): an expired entry is no entry.
        if not data or int(data.get("expires_ttl", 0)) <= now_s:
            return None
        entry = json.loads(data["entry"])
        return CachedStep(
            entry["output"],
            entry["turns"],
            entry.get("session_id"),
            entry.get("runner"),
            entry.get("runner_name"),
        )

    def journal(self, account_id: str, cache_key: str, step: StepRecord, expires_at_s: int) -> None:
        journaled: dict[str, Any] = {"output": step.output, "turns": step.turns}
        if step.runner is not None:
            journaled.update(
                session_id=step.session_id, runner=step.runner, runner_name=step.runner_name
            )
        entry = _json(journaled)
        if len(entry.encode()) > limits.WORKFLOW_STEP_ITEM_MAX_BYTES:
            return  # too large to journal: the next run runs the step again
        self._db.put_item(
            TableName=self._table,
            Item=to_item(
                {
                    "pk": f"WFCACHE#{account_id}#{cache_key}",
                    "sk": _entry(step.label, step.input_hash or ""),
                    "entry": entry,
                    "expires_ttl": expires_at_s,
                }
            ),
        )


def _entry(label: str, input_hash: str) -> str:
    # By label and resolved inputs: each item of a pipeline journals its own.
    return f"STEP#{label}#{input_hash}"


def _run(data: dict[str, Any]) -> RunRecord:
    return RunRecord.from_json(json.loads(data["record"]))


def _decimal(value: float) -> Any:
    from decimal import Decimal

    return Decimal(str(round(value, 6)))
