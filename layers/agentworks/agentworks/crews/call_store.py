"""Data access for function-call records and their submission bindings.

    CALL#<call_id>                      META          the call record (JSON) + state, version
    CALLSUB#<account>#<connection>      S#<id>        submission binding (F4), TTL 7 days

Admission takes a Crew slot (`running < 3`) in the same transaction that puts the record;
the outcome gives it back in the same transaction that records the terminal state (F5).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from agentworks.crews import limits
from agentworks.crews.crew_store import crew_key
from agentworks.crews.models import CallRecord, Crew, PendingInput
from agentworks.dynamo import (
    cancellation_reasons,
    error_code,
    from_item,
    is_conditional_failure,
    to_item,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class CrewBusy(Exception):
    """All of the Crew's execution slots are taken (F5)."""


class CrewChanged(Exception):
    """The Crew was deleted or re-created meanwhile."""


class CallBindingExists(Exception):
    def __init__(self, call_id: str, args_hash: str) -> None:
        super().__init__(call_id)
        self.call_id = call_id
        self.args_hash = args_hash


class StaleCall(Exception):
    """The record moved since it was read: read again."""


def call_key(call_id: str) -> dict[str, str]:
    return {"pk": f"CALL#{call_id}", "sk": "META"}


def binding_key(account_id: str, connection_id: str, submission_id: str) -> dict[str, str]:
    return {"pk": f"CALLSUB#{account_id}#{connection_id}", "sk": f"S#{submission_id}"}


def _encode(record: CallRecord) -> str:
    return json.dumps(asdict(record), separators=(",", ":"), default=str)


def _decode(data: dict[str, Any]) -> tuple[CallRecord, int]:
    raw = json.loads(data["record"])
    raw["pending_inputs"] = [PendingInput(**p) for p in raw.get("pending_inputs", [])]
    return CallRecord(**raw), int(data["version"])


class CallStore:
    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._db = client
        self._table = table

    def get(self, call_id: str) -> tuple[CallRecord, int] | None:
        response = self._db.get_item(
            TableName=self._table, Key=to_item(call_key(call_id)), ConsistentRead=True
        )
        data = from_item(response.get("Item"))
        return _decode(data) if data else None

    def _item(self, record: CallRecord, version: int) -> dict[str, Any]:
        return to_item(
            {
                **call_key(record.call_id),
                "record": _encode(record),
                "state": record.state,
                "account_id": record.account_id,
                "version": version,
            }
        )

    def admit(
        self, crew: Crew, record: CallRecord, args_hash: str, submission_id: str | None
    ) -> None:
        """Takes a slot and stores the accepted call (and its binding) atomically."""
        items: list[dict[str, Any]] = [
            {
                "Update": {
                    "TableName": self._table,
                    "Key": to_item(crew_key(crew.account_id, crew.name)),
                    "UpdateExpression": "SET running = running + :one",
                    "ConditionExpression": "crew_id = :id AND running < :max",
                    "ExpressionAttributeValues": to_item(
                        {":one": 1, ":id": crew.crew_id, ":max": limits.RUNNING_PER_CREW}
                    ),
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            },
            {
                "Put": {
                    "TableName": self._table,
                    "Item": self._item(record, 1),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            },
        ]
        if submission_id is not None:
            items.append(
                {
                    "Put": {
                        "TableName": self._table,
                        "Item": to_item(
                            {
                                **binding_key(
                                    record.account_id, record.caller_connection_id, submission_id
                                ),
                                "call_id": record.call_id,
                                "args_hash": args_hash,
                                "expires_ttl": record.created_at // 1000
                                + limits.SUBMISSION_BINDING_SECONDS,
                            }
                        ),
                        "ConditionExpression": "attribute_not_exists(pk)",
                        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                    }
                }
            )
        try:
            self._db.transact_write_items(TransactItems=items)  # type: ignore[arg-type]
        except ClientError as error:
            if error_code(error) != "TransactionCanceledException":
                raise
            reasons = cancellation_reasons(error)
            if len(reasons) == 3 and is_conditional_failure(reasons[2]) and reasons[2].get("Item"):
                existing = from_item(reasons[2]["Item"]) or {}
                raise CallBindingExists(existing["call_id"], existing["args_hash"]) from None
            if reasons and is_conditional_failure(reasons[0]):
                old = from_item(reasons[0].get("Item")) or {}
                if old.get("crew_id") == crew.crew_id:
                    raise CrewBusy() from None
                raise CrewChanged() from None
            raise StaleCall() from None

    def new_record_put(self, record: CallRecord) -> dict[str, Any]:
        """A transaction item that stores a new record at version 1 without taking a slot:
        a Crew's run for a message or a wakeup."""
        return {
            "Put": {
                "TableName": self._table,
                "Item": self._item(record, 1),
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        }

    def put_new(self, record: CallRecord) -> None:
        """Stores a new record at version 1 without taking a slot."""
        self._db.put_item(**self.new_record_put(record)["Put"])

    def save(self, record: CallRecord, version: int) -> int:
        """Writes the record if nobody else did since `version`; returns the new version."""
        try:
            self._db.put_item(
                TableName=self._table,
                Item=self._item(record, version + 1),
                ConditionExpression="version = :v",
                ExpressionAttributeValues=to_item({":v": version}),
            )
        except ClientError as error:
            if error_code(error) == "ConditionalCheckFailedException":
                raise StaleCall() from None
            raise
        return version + 1

    def finish(self, record: CallRecord, version: int, release_slot: bool) -> None:
        """Records a terminal state and frees the Crew's slot in one transaction."""
        items: list[dict[str, Any]] = [
            {
                "Put": {
                    "TableName": self._table,
                    "Item": self._item(record, version + 1),
                    "ConditionExpression": "version = :v",
                    "ExpressionAttributeValues": to_item({":v": version}),
                }
            }
        ]
        if release_slot:
            items.append(
                {
                    "Update": {
                        "TableName": self._table,
                        "Key": to_item(crew_key(record.account_id, record.crew_name)),
                        "UpdateExpression": "SET running = running - :one",
                        "ConditionExpression": "crew_id = :id AND running > :zero",
                        "ExpressionAttributeValues": to_item(
                            {":one": 1, ":zero": 0, ":id": record.crew_id}
                        ),
                    }
                }
            )
        try:
            self._db.transact_write_items(TransactItems=items)  # type: ignore[arg-type]
        except ClientError as error:
            if error_code(error) != "TransactionCanceledException":
                raise
            reasons = cancellation_reasons(error)
            if reasons and is_conditional_failure(reasons[0]):
                raise StaleCall() from None
            if release_slot:
                # The Crew was deleted or re-created: there is no slot to give back.
                self.finish(record, version, release_slot=False)
                return
            raise StaleCall() from None

    def get_binding(
        self, account_id: str, connection_id: str, submission_id: str
    ) -> tuple[str, str] | None:
        response = self._db.get_item(
            TableName=self._table,
            Key=to_item(binding_key(account_id, connection_id, submission_id)),
            ConsistentRead=True,
        )
        data = from_item(response.get("Item"))
        return (data["call_id"], data["args_hash"]) if data else None
