"""Data access for function-call records and their submission bindings.

    CALL#<call_id>                      META          the call record (JSON) + state, version
    CALLSUB#<account>#<connection>      S#<id>        submission binding (F4), TTL 7 days

Admission takes a Crew slot (`running < 3`) in the same transaction that puts the record;
the outcome gives it back in the same transaction that records the terminal state (F5),
which also adds the run's usage to its account's counters (agentworks.usage).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, cast

from botocore.exceptions import ClientError

from agentworks import limits
from agentworks.crews.call_bounds import bound_record
from agentworks.crews.crew_store import crew_key
from agentworks.crews.models import CallRecord, Crew, PendingInput
from agentworks.crews.open_call_store import open_index
from agentworks.dynamo import (
    TransactionCancelled,
    condition_failed,
    from_item,
    read_item,
    to_item,
    transact_write,
)
from agentworks.usage.call_usage import call_usage
from agentworks.usage.counts import day_of, shard_of
from agentworks.usage.usage_store import UsageStore

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


def listed_key(account_id: str, created_ms: int, call_id: str) -> dict[str, str]:
    """The account's list of function calls, newest last (C5 the Runs page)."""
    return {"pk": f"CALLS#{account_id}", "sk": f"{created_ms:013d}#{call_id}"}


def _listed_position(sk: str) -> tuple[int, str]:
    created_ms, call_id = sk.split("#", 1)
    return int(created_ms), call_id


def binding_key(account_id: str, connection_id: str, submission_id: str) -> dict[str, str]:
    return {"pk": f"CALLSUB#{account_id}#{connection_id}", "sk": f"S#{submission_id}"}


def _encode(record: CallRecord) -> str:
    # UTF-8 as is (not \u escapes): the stored size is what call_bounds budgets.
    return json.dumps(
        asdict(bound_record(record)), ensure_ascii=False, separators=(",", ":"), default=str
    )


def _decode(data: dict[str, Any]) -> tuple[CallRecord, int]:
    raw = json.loads(data["record"])
    raw["pending_inputs"] = [PendingInput(**p) for p in raw.get("pending_inputs", [])]
    return CallRecord(**raw), int(data["version"])


def record_of(data: dict[str, Any]) -> CallRecord:
    """The record a call item holds (read from a stream image: agentworks.a2a_server)."""
    return _decode(data)[0]


def _is_own_write(stored: dict[str, Any] | None, written: dict[str, Any]) -> bool:
    """The item a refused write found is the one it wrote: an earlier attempt of this very
    write committed and botocore, not seeing the answer, sent it again."""
    return bool(stored) and stored == written


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
                # Open until terminal: the tick's reconciliation finds it (open_call_store).
                **open_index(record),
            }
        )

    def admit(
        self, crew: Crew, record: CallRecord, args_hash: str, submission_id: str | None
    ) -> None:
        """Takes a slot and stores the accepted call (and its binding) atomically."""
        items: dict[str, dict[str, Any]] = {
            "slot": {
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
            "call": {
                "Put": {
                    "TableName": self._table,
                    "Item": self._item(record, 1),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            },
        }
        created_s = record.created_at // 1000
        # Listed with its admission (one item more in the transaction, no request more).
        items["listed"] = {
            "Put": {
                "TableName": self._table,
                "Item": to_item(
                    {
                        **listed_key(record.account_id, record.created_at, record.call_id),
                        "call_id": record.call_id,
                        "caller": record.caller_connection_id,
                        "expires_ttl": created_s + limits.CALLS_LISTED_SECONDS,
                    }
                ),
            }
        }
        if submission_id is not None:
            items["binding"] = {
                "Put": {
                    "TableName": self._table,
                    "Item": to_item(
                        {
                            **binding_key(
                                record.account_id, record.caller_connection_id, submission_id
                            ),
                            "call_id": record.call_id,
                            "args_hash": args_hash,
                            "expires_ttl": created_s + limits.CALL_SUBMISSION_BINDING_SECONDS,
                        }
                    ),
                    # An expired binding DynamoDB has not deleted yet is no binding.
                    "ConditionExpression": "attribute_not_exists(pk) OR expires_ttl <= :now",
                    "ExpressionAttributeValues": to_item({":now": created_s}),
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            }
        try:
            transact_write(self._db, items)
        except TransactionCancelled as cancelled:
            existing = cancelled.old.get("binding")
            if cancelled.failed("call") and self.get(record.call_id) is not None:
                # An earlier attempt of this very request committed (its answer was lost
                # and botocore sent it again): the call was admitted once, slot and all.
                return
            if cancelled.failed("binding") and existing:
                raise CallBindingExists(existing["call_id"], existing["args_hash"]) from None
            if cancelled.failed("slot"):
                old = cancelled.old.get("slot") or {}
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
        item = self._item(record, version + 1)
        try:
            self._db.put_item(
                TableName=self._table,
                Item=item,
                ConditionExpression="version = :v",
                ExpressionAttributeValues=to_item({":v": version}),
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if not condition_failed(error):
                raise
            if not _is_own_write(cast(dict[str, Any], error.response).get("Item"), item):
                raise StaleCall() from None
        return version + 1

    def finish(self, record: CallRecord, version: int, release_slot: bool) -> None:
        """Records a terminal state and frees the Crew's slot in one transaction. A
        transaction that cannot commit (conflicts, throttling) raises `TryAgain` with nothing
        written, so the caller's retry still gives the slot back: it is never leaked."""
        item = self._item(record, version + 1)
        items: dict[str, dict[str, Any]] = {
            "record": {
                "Put": {
                    "TableName": self._table,
                    "Item": item,
                    "ConditionExpression": "version = :v",
                    "ExpressionAttributeValues": to_item({":v": version}),
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            }
        }
        if release_slot:
            items["slot"] = {
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
        usage = call_usage(record.kind, record.transitions, record.mcp_calls_made)
        if usage:
            # Counted with the end it counts: no request of its own, never twice.
            items["usage"] = UsageStore(self._db, self._table).transaction_item(
                record.account_id,
                day_of(record.updated_at / 1000),
                shard_of(record.call_id),
                usage,
            )
        try:
            transact_write(self._db, items)
        except TransactionCancelled as cancelled:
            if cancelled.failed("record"):
                if _is_own_write(to_item(cancelled.old.get("record") or {}), item):
                    return  # this transaction committed (slot and all); its answer was lost
                raise StaleCall() from None
            if cancelled.failed("slot"):
                # The Crew was deleted or re-created: there is no slot to give back.
                self.finish(record, version, release_slot=False)
                return
            raise

    def recent(
        self,
        account_id: str,
        caller: str | None,
        now_ms: int,
        limit: int,
        before: tuple[int, str] | None = None,
    ) -> tuple[list[CallRecord], tuple[int, str] | None]:
        """The account's newest function calls (only `caller`'s, when given), newest first —
        those listed before (created ms, call id) `before` when given — and where the next
        page starts: the last entry looked at, when more may follow. One Query of the list
        (at most CALLS_LIST_SCAN entries looked at), one BatchGetItem of their records."""
        values: dict[str, Any] = {":pk": f"CALLS#{account_id}"}
        condition = "pk = :pk"
        if before is not None:
            condition += " AND sk < :before"
            values[":before"] = listed_key(account_id, *before)["sk"]
        query: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": condition,
            "ScanIndexForward": False,
            "Limit": limits.CALLS_LIST_SCAN,
        }
        if caller is not None:
            query["FilterExpression"] = "caller = :caller"
            values[":caller"] = caller
        query["ExpressionAttributeValues"] = to_item(values)
        page = self._db.query(**query)
        listed = [from_item(raw) or {} for raw in page["Items"]]
        living = [e for e in listed if int(e.get("expires_ttl", 0)) > now_ms // 1000]
        # The next page starts after the last entry this one used, or after the last one the
        # Query looked at (the caller's own calls may lie past CALLS_LIST_SCAN others).
        last: dict[str, Any] | None = None
        if len(living) > limit:
            last = living[limit - 1]
        elif "LastEvaluatedKey" in page:
            last = from_item(page["LastEvaluatedKey"]) or {}
        ids = [str(e["call_id"]) for e in living[:limit]]
        following = None if last is None else _listed_position(str(last["sk"]))
        if not ids:
            return [], following
        found: dict[str, CallRecord] = {}
        request: dict[str, Any] = {
            self._table: {"Keys": [to_item(call_key(i)) for i in ids], "ConsistentRead": True}
        }
        for _attempt in range(5):  # what DynamoDB did not get to comes back unprocessed
            response = self._db.batch_get_item(RequestItems=request)
            for raw in response["Responses"].get(self._table, []):
                record, _ = _decode(from_item(raw) or {})
                found[record.call_id] = record
            request = response.get("UnprocessedKeys") or {}
            if not request:
                break
        return [found[call_id] for call_id in ids if call_id in found], following

    def get_binding(
        self, account_id: str, connection_id: str, submission_id: str, now_ms: int
    ) -> tuple[str, str] | None:
        """The call a submission id names; an expired binding not yet deleted names none."""
        data = read_item(
            self._db, self._table, binding_key(account_id, connection_id, submission_id)
        )
        if not data or int(data.get("expires_ttl", 0)) <= now_ms // 1000:
            return None
        return data["call_id"], data["args_hash"]
