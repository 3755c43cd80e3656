"""Data access for registered workflows and their triggers (W11) in the work table.

    WFDEF#<account>         DEF#<workflowId>   the registered workflow (JSON), version
    WFTRIGGER#<trigger_id>  META               one trigger: account, workflow, kind, config,
                                               secret (webhook); a schedule's next time on
                                               the DueWakeups index (SCHEDULES partition)
    WFTRIGRUNS#<trigger_id> <run_id>           the trigger's run history
    WFDELIVERY#<trigger_id>#<signature>  DELIVERY   a webhook delivery and the run it
                                               started (the first answer), kept while a
                                               replay of it could still be accepted

A trigger is read by its id alone (a webhook's URL carries nothing else).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from agentworks.dynamo import (
    applied,
    condition_failed,
    due_items,
    due_key,
    from_item,
    read_item,
    to_item,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

SCHEDULES = "SCHEDULES"


@dataclass
class TriggerRecord:
    trigger_id: str
    account_id: str
    workflow_id: str
    kind: str
    name: str
    config: dict[str, Any]  # the trigger as declared
    registered_by: str  # the connection whose rights its runs have
    secret: str | None = None  # webhook: the HMAC key
    next_due: int | None = None  # schedule: ms


@dataclass
class RegisteredWorkflow:
    account_id: str
    workflow_id: str
    definition: dict[str, Any]  # the workflow_start JSON, without input
    registered_by: str
    version: int
    created_at: int
    updated_at: int
    trigger_ids: list[str] = field(default_factory=list)


class RegistryStore:
    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._db = client
        self._table = table

    # ---- workflows ----

    def get(self, account_id: str, workflow_id: str) -> RegisteredWorkflow | None:
        data = read_item(
            self._db, self._table, {"pk": f"WFDEF#{account_id}", "sk": f"DEF#{workflow_id}"}
        )
        return RegisteredWorkflow(**json.loads(data["record"])) if data else None

    def list_all(self, account_id: str) -> list[RegisteredWorkflow]:
        page = self._db.query(
            TableName=self._table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues=to_item({":pk": f"WFDEF#{account_id}"}),
        )
        return [
            RegisteredWorkflow(**json.loads((from_item(i) or {})["record"])) for i in page["Items"]
        ]

    def put(self, workflow: RegisteredWorkflow) -> None:
        """Under the version that was read (1: a new registration)."""
        condition = "attribute_not_exists(pk)" if workflow.version == 1 else "version = :previous"
        request: dict[str, Any] = {
            "TableName": self._table,
            "Item": to_item(
                {
                    "pk": f"WFDEF#{workflow.account_id}",
                    "sk": f"DEF#{workflow.workflow_id}",
                    "record": json.dumps(asdict(workflow), ensure_ascii=False),
                    "version": workflow.version,
                }
            ),
            "ConditionExpression": condition,
        }
        if workflow.version > 1:
            request["ExpressionAttributeValues"] = to_item({":previous": workflow.version - 1})
        try:
            self._db.put_item(**request)
        except ClientError as error:
            if condition_failed(error):
                raise StaleRegistration(workflow.workflow_id) from None
            raise

    def delete(self, workflow: RegisteredWorkflow) -> None:
        self._db.delete_item(
            TableName=self._table,
            Key=to_item(
                {"pk": f"WFDEF#{workflow.account_id}", "sk": f"DEF#{workflow.workflow_id}"}
            ),
        )

    # ---- triggers ----

    def trigger(self, trigger_id: str) -> TriggerRecord | None:
        data = read_item(self._db, self._table, {"pk": f"WFTRIGGER#{trigger_id}", "sk": "META"})
        return TriggerRecord(**json.loads(data["record"])) if data else None

    def put_trigger(self, trigger: TriggerRecord) -> None:
        item: dict[str, Any] = {
            "pk": f"WFTRIGGER#{trigger.trigger_id}",
            "sk": "META",
            "record": json.dumps(asdict(trigger), ensure_ascii=False),
            "account_id": trigger.account_id,
        }
        if trigger.next_due is not None:
            item.update(
                wake_store=SCHEDULES, wake_due=due_key(trigger.next_due, trigger.trigger_id)
            )
        self._db.put_item(TableName=self._table, Item=to_item(item))

    def delete_trigger(self, trigger_id: str) -> None:
        self._db.delete_item(
            TableName=self._table, Key=to_item({"pk": f"WFTRIGGER#{trigger_id}", "sk": "META"})
        )

    def due_schedules(self, now_ms: int, limit: int) -> list[str]:
        due = due_items(self._db, self._table, SCHEDULES, now_ms, limit)
        return [str(d["pk"]).removeprefix("WFTRIGGER#") for d in due]

    def claim(self, trigger: TriggerRecord, due: int, next_due: int) -> bool:
        """Moves a schedule from `due` to `next_due`; False when another tick did first."""
        claimed = TriggerRecord(**{**asdict(trigger), "next_due": next_due})
        return applied(
            self._db.update_item,
            TableName=self._table,
            Key=to_item({"pk": f"WFTRIGGER#{trigger.trigger_id}", "sk": "META"}),
            UpdateExpression="SET wake_due = :next, #r = :record",
            ConditionExpression="wake_due = :due",
            ExpressionAttributeNames={"#r": "record"},
            ExpressionAttributeValues=to_item(
                {
                    ":next": due_key(next_due, trigger.trigger_id),
                    ":due": due_key(due, trigger.trigger_id),
                    ":record": json.dumps(asdict(claimed), ensure_ascii=False),
                }
            ),
        )

    def record_run(self, trigger_id: str, run_id: str, at: int, error: str | None) -> None:
        self._db.put_item(
            TableName=self._table,
            Item=to_item(
                {"pk": f"WFTRIGRUNS#{trigger_id}", "sk": run_id, "at": at, "error": error}
            ),
        )

    def history(self, trigger_id: str, limit: int) -> list[dict[str, Any]]:
        page = self._db.query(
            TableName=self._table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues=to_item({":pk": f"WFTRIGRUNS#{trigger_id}"}),
            ScanIndexForward=False,
            Limit=limit,
        )
        return [
            {"runId": d["sk"], "at": int(d["at"]), "error": d.get("error")}
            for d in (from_item(i) or {} for i in page["Items"])
        ]

    # ---- webhook deliveries ----

    @staticmethod
    def _delivery_key(trigger_id: str, signature: str) -> dict[str, Any]:
        return to_item({"pk": f"WFDELIVERY#{trigger_id}#{signature}", "sk": "DELIVERY"})

    def delivery_put(
        self,
        trigger_id: str,
        signature: str,
        run_id: str,
        answer: dict[str, Any],
        expires_at: int,
        now: int,
    ) -> dict[str, Any]:
        """A transaction item recording a delivery and the answer it got, unless a live
        record of it exists (one DynamoDB has not deleted after expiry counts as none)."""
        return {
            "Put": {
                "TableName": self._table,
                "Item": {
                    **self._delivery_key(trigger_id, signature),
                    **to_item(
                        {
                            "run_id": run_id,
                            "answer": json.dumps(answer),
                            "expires_ttl": expires_at,
                        }
                    ),
                },
                "ConditionExpression": "attribute_not_exists(pk) OR expires_ttl <= :now",
                "ExpressionAttributeValues": to_item({":now": now}),
            }
        }

    def delivery(self, trigger_id: str, signature: str, now: int) -> dict[str, Any] | None:
        """The answer a live delivery got; None when it was never seen or has expired."""
        response = self._db.get_item(
            TableName=self._table,
            Key=self._delivery_key(trigger_id, signature),
            ConsistentRead=True,
        )
        data = from_item(response.get("Item"))
        if not data or int(data["expires_ttl"]) <= now:
            return None
        return dict(json.loads(data["answer"]))

    def forget_delivery(self, trigger_id: str, signature: str, run_id: str) -> None:
        """Removes a delivery's record if it still names `run_id` (its run never started:
        the sender's retry may start one)."""
        try:
            self._db.delete_item(
                TableName=self._table,
                Key=self._delivery_key(trigger_id, signature),
                ConditionExpression="run_id = :run",
                ExpressionAttributeValues=to_item({":run": run_id}),
            )
        except ClientError as error:
            if not condition_failed(error):
                raise


class StaleRegistration(Exception):
    """The registration changed since it was read."""
