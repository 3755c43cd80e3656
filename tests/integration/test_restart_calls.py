"""After a restart of the local stack, open calls whose executions were lost: one that was
mid-turn ends `interrupted` with the restart as its evidence and gives its slot back; a
waiting one is left to wait again (the e2e restart tests answer it afterwards)."""

from __future__ import annotations

import copy
from typing import Any

from agentworks.crews.models import CallRecord
from agentworks_local.waiting_calls import (
    INTERRUPTED_BY_RESTART,
    resume_calls,
    waiting_state,
)
from tests.integration.crew_support import CONTRACTS, admit_call_record


def _mid_turn_call(stack: Any, api: Any, agents: Any) -> tuple[str, str]:
    reply = api("POST", "/v1/crews", stack.admin_token, copy.deepcopy(CONTRACTS))
    assert reply.status == 201, reply.body
    caller = agents.connection("caller")["token"]
    return caller, admit_call_record(stack, caller, "running")


def test_a_call_that_was_mid_turn_ends_interrupted_and_frees_its_slot(api, stack, agents):
    import boto3

    caller, call_id = _mid_turn_call(stack, api, agents)
    assert api("GET", "/v1/crews/contracts", caller).body["running"] == 1
    resumed = resume_calls(
        stack.client,
        stack.settings.work_table,
        boto3.client("stepfunctions", region_name="us-east-1"),
        stack.settings.function_call_state_machine_arn,
        stack.services.crews.reconciler.interrupt,
    )
    assert (resumed.waiting, resumed.interrupted) == ([], [call_id])
    done = api("GET", f"/v1/calls/{call_id}", caller).body
    assert done["state"] == "interrupted"
    assert done["errors"][-1] == f"interrupted: {INTERRUPTED_BY_RESTART}"
    assert api("GET", "/v1/crews/contracts", caller).body["running"] == 0


def test_only_the_two_waits_resume() -> None:
    def record(**fields: Any) -> CallRecord:
        base = {
            "call_id": "call_1", "account_id": "acct_1", "crew_name": "c", "crew_id": "crw_1",
            "function": "f", "args": {}, "caller_connection_id": "conn_1", "state": "running",
            "created_at": 0, "updated_at": 0,
        }  # fmt: skip
        return CallRecord(**{**base, **fields})

    assert waiting_state(record(state="input_required", task_token="t")) == "AwaitInput"
    assert waiting_state(record(task_token="t", handoff_inbox_id="ibx_1")) == "AwaitAgent"
    # The hand-off's work not yet sent: its step would run again, so it is mid-turn.
    assert (
        waiting_state(record(task_token="t", handoff_inbox_id="ibx_1", handoff_message="w")) is None
    )
    assert waiting_state(record(state="running")) is None
    assert waiting_state(record(state="succeeded", outcome="succeeded", task_token="t")) is None
