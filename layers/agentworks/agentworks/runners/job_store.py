"""Data access for runner jobs in the work table (docs/data-model.md).

    RUNNERJOBS#<account>   JOB#<job_id>     the job (JSON), state, version, TTL
    RUNNERJOBS#<account>   QUEUE#<job_id>   while it is queued: what a claim filters on

A claim reads the account's queue entries oldest first (`begins_with`, no filter) and
takes one job with a transaction: the job's write is conditioned on the version it read
and the queue entry is deleted with it, so of two runners claiming one job exactly one
gets it. A job the tick must look at — a queued one's wait, a claimed one's lease, an ended
one not yet delivered to its step — sits in the RUNNERJOBS partition of the sparse
DueWakeups index (`wake_due` = that time), and leaves it once nothing is due.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Literal

from botocore.exceptions import ClientError

from agentworks.dynamo import (
    TransactionCancelled,
    condition_failed,
    due_items,
    due_key,
    from_item,
    to_item,
    transact_write,
)
from agentworks.runners.models import QueueEntry, RunnerJob

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

RUNNER_JOBS = "RUNNERJOBS"  # the jobs' partition of the DueWakeups index
QueueChange = Literal["put", "delete"] | None


class StaleJob(Exception):
    """The job moved since it was read (another runner claimed it, a renewal landed)."""


def _pk(account_id: str) -> str:
    return f"RUNNERJOBS#{account_id}"


class RunnerJobStore:
    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._db = client
        self._table = table

    def _key(self, account_id: str, job_id: str, kind: str = "JOB") -> dict[str, Any]:
        return to_item({"pk": _pk(account_id), "sk": f"{kind}#{job_id}"})

    def _item(self, job: RunnerJob, version: int) -> dict[str, Any]:
        due = job.due_ms()
        return to_item(
            {
                "pk": _pk(job.account_id),
                "sk": f"JOB#{job.job_id}",
                "account_id": job.account_id,
                "state": job.state,
                "record": json.dumps(job.to_json(), ensure_ascii=False, separators=(",", ":")),
                "version": version,
                "expires_ttl": job.expires_s(),
                "wake_store": RUNNER_JOBS if due is not None else None,
                "wake_due": due_key(due, job.job_id) if due is not None else None,
            }
        )

    def create(self, job: RunnerJob) -> None:
        self._db.put_item(
            TableName=self._table,
            Item=self._item(job, 1),
            ConditionExpression="attribute_not_exists(pk)",
        )
        job.version = 1

    def get(self, account_id: str, job_id: str, now_s: int) -> RunnerJob | None:
        response = self._db.get_item(
            TableName=self._table, Key=self._key(account_id, job_id), ConsistentRead=True
        )
        data = from_item(response.get("Item"))
        # TTL deletes lag (moto's never happen): an expired job is no job.
        if not data or int(data.get("expires_ttl", 0)) <= now_s:
            return None
        return RunnerJob.from_json(json.loads(data["record"]), int(data["version"]))

    def save(self, job: RunnerJob, queue: QueueChange = None) -> None:
        """The job under the version it was read at (raises StaleJob), with its queue entry
        put or deleted in the same transaction; `job.version` moves on."""
        item = self._item(job, job.version + 1)
        if queue is None:
            try:
                self._db.put_item(
                    TableName=self._table,
                    Item=item,
                    ConditionExpression="version = :v",
                    ExpressionAttributeValues=to_item({":v": job.version}),
                )
            except ClientError as error:
                if condition_failed(error):
                    raise StaleJob(job.job_id) from None
                raise
            job.version += 1
            return
        entry: dict[str, Any]
        if queue == "put":
            entry = {"Put": {"TableName": self._table, "Item": self._entry(job)}}
        else:
            entry = {
                "Delete": {
                    "TableName": self._table,
                    "Key": self._key(job.account_id, job.job_id, "QUEUE"),
                }
            }
        write = {
            "Put": {
                "TableName": self._table,
                "Item": item,
                "ConditionExpression": "version = :v",
                "ExpressionAttributeValues": to_item({":v": job.version}),
            }
        }
        try:
            transact_write(self._db, {"job": write, "queue": entry})
        except TransactionCancelled as cancelled:
            if cancelled.failed("job"):
                raise StaleJob(job.job_id) from None
            raise
        job.version += 1

    def _entry(self, job: RunnerJob) -> dict[str, Any]:
        return to_item(
            {
                "pk": _pk(job.account_id),
                "sk": f"QUEUE#{job.job_id}",
                "command": job.command,
                "workflow_id": job.workflow_id,
                "pin": job.pin,
                "expires_ttl": job.expires_s(),
            }
        )

    def drop_entry(self, account_id: str, job_id: str) -> None:
        """A queue entry whose job is no longer queued (left by an interrupted write)."""
        self._db.delete_item(TableName=self._table, Key=self._key(account_id, job_id, "QUEUE"))

    def queued(self, account_id: str, limit: int) -> list[QueueEntry]:
        """The account's queued jobs, oldest first (job ids are ULIDs)."""
        page = self._db.query(
            TableName=self._table,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :queue)",
            ExpressionAttributeValues=to_item({":pk": _pk(account_id), ":queue": "QUEUE#"}),
            ConsistentRead=True,
            Limit=limit,
        )
        entries = []
        for raw in page["Items"]:
            data = from_item(raw) or {}
            entries.append(
                QueueEntry(
                    job_id=str(data["sk"]).removeprefix("QUEUE#"),
                    command=str(data.get("command")),
                    workflow_id=str(data.get("workflow_id")),
                    pin=data.get("pin"),
                )
            )
        return entries

    def due(self, now_ms: int, limit: int) -> list[tuple[str, str]]:
        """(account, job id) of the jobs the tick must look at now, earliest first."""
        due = due_items(self._db, self._table, RUNNER_JOBS, now_ms, limit)
        return [(str(d["account_id"]), str(d["sk"]).removeprefix("JOB#")) for d in due]
