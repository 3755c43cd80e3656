"""A crew step waiting for the end of the function call it made (W9 `crew`, W10 `workflow`):
the AwaitCall state's task token is stored beside the call, and whatever ends the call
answers it. Nothing polls, so a wait of hours costs the run's execution no history events
and no invocations.

    WAITER#<call_id>    <run_id>#<item>#<stage>#<step>    the token of a step waiting for a
                                                           Crew's call
    WAITER#<run_id>     <run_id>#<item>#<stage>#<step>    … for the run a workflow function
                                                           call started

A call is the step's scope's (crew_steps.scoped_submission_id): the same step of two items
of a pipeline with the same arguments waits for one call, each with its own token.

The token is stored under the call's own condition (not yet ended), in one transaction:
either it is stored before the call ends — and the end, reading it after its own write,
answers it — or the call had ended, the write is refused, and the waiter is answered at
once. An end that is retried answers again; Step Functions refuses the second answer of a
closed task, which is ignored.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.crews.call_store import call_key
from agentworks.crews.models import TERMINAL_STATES, CallRecord
from agentworks.dynamo import (
    TransactionCancelled,
    query_items,
    to_item,
    transact_write,
)
from agentworks.workflows.function_call_store import is_workflow_call
from agentworks.workflows.run_store import run_pk

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from agentworks.workflows.function_call_store import WorkflowCallStore

# Executions.resume_if_waiting: SendTaskSuccess, a token nothing waits on no error
Resume = Callable[[str, dict[str, Any]], object]
# The submission ids of calls a workflow step makes (crew_steps.scoped_submission_id).
STEP_CALL_PREFIX = "wf."


def waiter_key(subject: str, waiting: str) -> dict[str, str]:
    return {"pk": f"WAITER#{subject}", "sk": waiting}


class CallWaits:
    def __init__(
        self,
        client: DynamoDBClient,
        table: str,
        resume: Resume,
        workflow_calls: WorkflowCallStore,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._db = client
        self._table = table
        self._resume = resume
        self._workflow_calls = workflow_calls
        self._clock = clock

    def wait(self, call_id: str, waiting: str, task_token: str) -> None:
        """Stores `task_token` of the step `waiting` until the call ends; answers it now if
        it has ended."""
        subject, ended = self._subject(call_id)
        expires = int(self._clock.now()) + limits.WORKFLOW_CALL_WAIT_TIMEOUT_SECONDS
        key = waiter_key(subject, waiting)
        waiter = {**key, "task_token": task_token, "expires_ttl": expires}
        try:
            transact_write(
                self._db,
                {
                    "open": {"ConditionCheck": {"TableName": self._table, **ended}},
                    "waiter": {"Put": {"TableName": self._table, "Item": to_item(waiter)}},
                },
            )
        except TransactionCancelled as cancelled:
            if not cancelled.failed("open"):
                raise
            self._resume(task_token, {"ended": True})  # it ended before the token was stored

    def _subject(self, call_id: str) -> tuple[str, dict[str, Any]]:
        """What ends the call (the call, or the run a workflow call started) and the
        condition that it is still open."""
        if is_workflow_call(call_id):
            called = self._workflow_calls.get(call_id)
            run_id = called.run_id if called else call_id  # no run: the check fails
            return run_id, {
                "Key": to_item({"pk": run_pk(run_id), "sk": "RUN"}),
                "ConditionExpression": "#s = :running",
                "ExpressionAttributeNames": {"#s": "status"},
                "ExpressionAttributeValues": to_item({":running": "running"}),
            }
        ended = {f":e{i}": state for i, state in enumerate(sorted(TERMINAL_STATES))}
        return call_id, {
            "Key": to_item(call_key(call_id)),
            "ConditionExpression": f"attribute_exists(pk) AND NOT #s IN ({', '.join(ended)})",
            "ExpressionAttributeNames": {"#s": "state"},
            "ExpressionAttributeValues": to_item(ended),
        }

    def call_ended(self, record: CallRecord) -> None:
        """A Crew's call turned terminal: the workflow step that made it, if one waits,
        goes on. Calls no workflow step made cost nothing more."""
        if (record.submission_id or "").startswith(STEP_CALL_PREFIX):
            self.wake(record.call_id)

    def wake(self, subject: str) -> None:
        """Answers the tokens waiting for `subject` (a call or a run), if any wait."""
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": to_item({":pk": f"WAITER#{subject}"}),
            "ConsistentRead": True,
        }
        for waiter in query_items(self._db, kwargs):
            self._resume(str(waiter["task_token"]), {"ended": True})
