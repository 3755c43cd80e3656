"""Data access for the waits on external agents' tasks, in the work table
(docs/data-model.md):

    EXTWAITS#<account>   WAIT#<owner>   the wait (JSON), version, TTL

`owner` names what waits: `call:<call_id>` or `step:<run_id>:<step key>`. A wait sits in the
EXTWAITS partition of the sparse DueWakeups index (`wake_due` = when the tick next reads
its task) for as long as it exists. Every write but the first is conditioned on the
version read, so a wait its step wrote again (a new turn, a new token) is never lost to a
tick that read the one before.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from agentworks.dynamo import applied, due_items, due_key, read_item, to_item

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

EXTERNAL_WAITS = "EXTWAITS"  # the waits' partition of the DueWakeups index
KEPT_PAST_DEADLINE_SECONDS = 24 * 3600  # TTL backstop: a wait nobody settled goes


@dataclass
class ExternalWait:
    account_id: str
    owner: str  # call:<call_id> | step:<run_id>:<step key>
    settings: dict[str, Any]  # the adapter block that reads (and cancels) the task
    task_id: str
    deadline_ms: int  # past it the next turn cancels the task at the agent
    task_token: str  # what resumes the waiting step
    due_ms: int  # when the tick next reads the task
    pause_s: int  # the pause before that read (doubles up to its most)
    # What the agent's push notification must carry to make the platform read the task at
    # once (a fresh secret per wait; waits.py registers it with the agent).
    watch_token: str = ""


class StaleWait(Exception):
    """The wait changed (its step wrote it again) or went since it was read."""


def _key(account_id: str, owner: str) -> dict[str, str]:
    return {"pk": f"EXTWAITS#{account_id}", "sk": f"WAIT#{owner}"}


class ExternalWaitStore:
    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._db = client
        self._table = table

    def put(self, wait: ExternalWait) -> None:
        """Writes the wait over the owner's earlier one (a retried step, a new turn), one
        version on: a tick holding the earlier one can no longer change or remove it."""
        fields = self._fields(wait)
        self._db.update_item(
            TableName=self._table,
            Key=to_item(_key(wait.account_id, wait.owner)),
            UpdateExpression="SET "
            + ", ".join(f"#{name} = :{name}" for name in fields)
            + ", #version = if_not_exists(#version, :zero) + :one",
            ExpressionAttributeNames={f"#{name}": name for name in [*fields, "version"]},
            ExpressionAttributeValues=to_item(
                {**{f":{name}": value for name, value in fields.items()}, ":zero": 0, ":one": 1}
            ),
        )

    def _fields(self, wait: ExternalWait) -> dict[str, Any]:
        return {
            "account_id": wait.account_id,
            "record": json.dumps(asdict(wait), separators=(",", ":")),
            "expires_ttl": wait.deadline_ms // 1000 + KEPT_PAST_DEADLINE_SECONDS,
            "wake_store": EXTERNAL_WAITS,
            "wake_due": due_key(wait.due_ms, wait.owner),
        }

    def due(self, now_ms: int, limit: int) -> list[tuple[str, str]]:
        """(account, owner) of the waits whose task the tick reads now, earliest first."""
        due = due_items(self._db, self._table, EXTERNAL_WAITS, now_ms, limit)
        return [(str(d["account_id"]), str(d["sk"]).removeprefix("WAIT#")) for d in due]

    def get(self, account_id: str, owner: str) -> tuple[ExternalWait, int] | None:
        data = read_item(self._db, self._table, _key(account_id, owner))
        if not data:
            return None
        return ExternalWait(**json.loads(str(data["record"]))), int(data["version"])

    def reschedule(self, wait: ExternalWait, version: int) -> None:
        """Saves the wait's next read (`due_ms`, `pause_s`) over the version read."""
        item = {**_key(wait.account_id, wait.owner), **self._fields(wait), "version": version + 1}
        if not applied(self._db.put_item, **self._read_version(version), Item=to_item(item)):
            raise StaleWait()

    def delete(self, wait: ExternalWait, version: int) -> None:
        """Removes the wait it read; one written again meanwhile stays (StaleWait)."""
        key = to_item(_key(wait.account_id, wait.owner))
        if not applied(self._db.delete_item, **self._read_version(version), Key=key):
            raise StaleWait()

    def _read_version(self, version: int) -> dict[str, Any]:
        return {
            "TableName": self._table,
            "ConditionExpression": "version = :v",
            "ExpressionAttributeValues": to_item({":v": version}),
        }
