"""Data access for calls of workflow functions (W10) in the work table.

    WFCALL#<call_id>                        META            the call: who, what, its run
    WFCALLSUB#<account>#<caller>            S#<submission>  the submission binding

The call and its binding are written together, the binding first-come, in the same
transaction as the run the call starts: a retry with the same submission id finds the call
it made, and two first calls at once start one run.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from agentworks.dynamo import read_item, to_item, transact_write

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# A workflow function's call ids (W10): the functions surface routes them here by prefix.
CALL_PREFIX = "wcall_"


def is_workflow_call(call_id: str) -> bool:
    return call_id.startswith(CALL_PREFIX)


@dataclass(frozen=True)
class WorkflowCall:
    call_id: str
    account_id: str
    caller: str  # the connection id, or workflow:<id> for a running workflow's step
    caller_connection_id: str  # whose call it is (reads are theirs)
    workflow_id: str
    function: str
    run_id: str
    args_hash: str
    submission_id: str | None
    created_at: int


class WorkflowCallStore:
    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._db = client
        self._table = table

    def get(self, call_id: str) -> WorkflowCall | None:
        data = read_item(self._db, self._table, {"pk": f"WFCALL#{call_id}", "sk": "META"})
        return WorkflowCall(**json.loads(data["record"])) if data else None

    def by_submission(
        self, account_id: str, caller: str, submission_id: str | None
    ) -> WorkflowCall | None:
        if not submission_id:
            return None
        data = read_item(
            self._db,
            self._table,
            {"pk": f"WFCALLSUB#{account_id}#{caller}", "sk": f"S#{submission_id}"},
        )
        return self.get(str(data["call_id"])) if data else None

    def items(self, call: WorkflowCall) -> dict[str, dict[str, Any]]:
        """Transaction items writing the call and its binding; the binding's condition is
        named `binding` when another call took the submission id first."""
        items: dict[str, dict[str, Any]] = {
            "call": {
                "Put": {
                    "TableName": self._table,
                    "Item": to_item(
                        {
                            "pk": f"WFCALL#{call.call_id}",
                            "sk": "META",
                            "record": json.dumps(asdict(call)),
                        }
                    ),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            }
        }
        if call.submission_id:
            items["binding"] = {
                "Put": {
                    "TableName": self._table,
                    "Item": to_item(self._binding(call) | {"call_id": call.call_id}),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            }
        return items

    def forget(self, call: WorkflowCall) -> None:
        """A call whose run could not start: its binding goes too, so a retry starts anew."""
        items: dict[str, dict[str, Any]] = {
            "call": {
                "Delete": {
                    "TableName": self._table,
                    "Key": to_item({"pk": f"WFCALL#{call.call_id}", "sk": "META"}),
                }
            }
        }
        if call.submission_id:
            items["binding"] = {
                "Delete": {
                    "TableName": self._table,
                    "Key": to_item(self._binding(call)),
                    "ConditionExpression": "call_id = :call",
                    "ExpressionAttributeValues": to_item({":call": call.call_id}),
                }
            }
        transact_write(self._db, items)

    @staticmethod
    def _binding(call: WorkflowCall) -> dict[str, Any]:
        return {"pk": f"WFCALLSUB#{call.account_id}#{call.caller}", "sk": f"S#{call.submission_id}"}
