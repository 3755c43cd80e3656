"""Data access for the calls the tick reconciles (F5): every call or run record that is not
terminal sits in the sparse OpenCalls index of the work table,

    open_store = OPEN    open_check = <ms:013d>#<call_id>    ask Step Functions from then on

`open_check` starts RECONCILE_GRACE_SECONDS after the record's last change (every save
writes it again) and moves on by RECONCILE_RECHECK_SECONDS each time the execution is
found running; a terminal record leaves the index. KEYS_ONLY: the call id is in `pk`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from agentworks import limits
from agentworks.dynamo import condition_failed, from_item, to_item

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from agentworks.crews.models import CallRecord

OPEN_CALLS = "OpenCalls"
OPEN = "OPEN"


def _check_key(at_ms: int, call_id: str) -> str:
    return f"{at_ms:013d}#{call_id}"


def open_index(record: CallRecord) -> dict[str, Any]:
    """The index attributes of a call record: none once it is terminal."""
    if record.terminal:
        return {}
    at = record.updated_at + limits.RECONCILE_GRACE_SECONDS * 1000
    return {"open_store": OPEN, "open_check": _check_key(at, record.call_id)}


def _call_id(raw: dict[str, Any]) -> str:
    return str((from_item(raw) or {})["pk"]).removeprefix("CALL#")


class OpenCallStore:
    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._db = client
        self._table = table

    def due(self, now: int, limit: int) -> list[str]:
        """Ids of open calls to ask about by `now`, longest unasked first."""
        response = self._db.query(
            TableName=self._table,
            IndexName=OPEN_CALLS,
            KeyConditionExpression="open_store = :open AND open_check <= :now",
            ExpressionAttributeValues=to_item({":open": OPEN, ":now": _check_key(now, "~")}),
            Limit=limit,
        )
        return [_call_id(raw) for raw in response["Items"]]

    def every_open(self) -> list[str]:
        """Ids of every open call, however far off its next check (the local stack asks
        after a restart, when its executions are gone)."""
        ids: list[str] = []
        query: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": OPEN_CALLS,
            "KeyConditionExpression": "open_store = :open",
            "ExpressionAttributeValues": to_item({":open": OPEN}),
        }
        while True:
            page = self._db.query(**query)
            ids += [
                str((from_item(raw) or {})["pk"]).removeprefix("CALL#") for raw in page["Items"]
            ]
            if "LastEvaluatedKey" not in page:
                return ids
            query["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def recheck(self, call_id: str, at_ms: int) -> None:
        """Asks again at `at_ms`, while the record is still open (a terminal one has no
        `open_check`, so the condition keeps it out of the index)."""
        try:
            self._db.update_item(
                TableName=self._table,
                Key=to_item({"pk": f"CALL#{call_id}", "sk": "META"}),  # call_store.call_key
                UpdateExpression="SET open_check = :next",
                ConditionExpression="open_check < :next",
                ExpressionAttributeValues=to_item({":next": _check_key(at_ms, call_id)}),
            )
        except ClientError as error:
            if not condition_failed(error):
                raise
