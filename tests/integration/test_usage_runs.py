"""Usage of workflow and Relay runs (issue 12 item 4, "state transitions"): a run's end adds
the states its execution entered, read from the execution's own history (workflows) or
known from its shape (Relays), in one transaction with the end, so it counts once; a
cancelled workflow run counts what it entered before the stop."""

from __future__ import annotations

from typing import Any

import boto3

from tests.integration.relay_support import publish, relay_api, relay_files
from tests.integration.relay_support import start as start_relay
from tests.integration.relay_support import wait_run as wait_relay
from tests.integration.workflow_support import TIMED, define, start, wait_run, wait_step

__all__ = ["relay_api"]


def _today(api: Any, token: str) -> dict[str, Any]:
    reply = api("GET", "/v1/usage", token, query={"days": 1})
    assert reply.status == 200, reply.body
    return dict(reply.body["days"][-1])


def _entered(name: str) -> int:
    """StateEntered events of the execution named `name`, whichever machine ran it."""
    sfn = boto3.client("stepfunctions", region_name="us-east-1")
    for machine in sfn.list_state_machines()["stateMachines"]:
        for e in sfn.list_executions(stateMachineArn=machine["stateMachineArn"])["executions"]:
            if e["name"] == name:
                events = sfn.get_execution_history(executionArn=e["executionArn"])["events"]
                return sum(1 for ev in events if ev["type"].endswith("StateEntered"))
    raise AssertionError(f"no execution named {name}")


TWO_STAGES = {
    "workflowId": "counted",
    "stages": [
        {
            "steps": [
                {"label": "a", "adapter": "timed", "prompt": "one"},
                {"label": "b", "adapter": "timed", "prompt": "two"},
            ]
        },
        {"steps": [{"label": "c", "adapter": "timed", "prompt": "three"}]},
    ],
}


def test_a_finished_workflow_run_counts_the_states_its_execution_entered(api, stack) -> None:
    admin = stack.admin_token
    define(api, admin, TIMED)
    before = _today(api, admin)
    run_id = start(api, admin, TWO_STAGES)
    assert wait_run(api, admin, run_id)["status"] == "succeeded"
    entered = _entered(run_id)
    assert entered > 10  # the Maps, each step's RunStep/Route/StepEnded, barriers, Finish
    today = _today(api, admin)
    assert today["state_transitions"] - before["state_transitions"] == entered
    assert today["function_calls"] == before["function_calls"]  # a run is not a call


def test_a_cancelled_workflow_run_counts_what_it_entered_before_the_stop(api, stack) -> None:
    admin = stack.admin_token
    define(api, admin, TIMED)
    waits = {
        "workflowId": "stopped",
        "stages": [
            {
                "steps": [
                    {
                        "label": "wait",
                        "adapter": "timed",
                        "policy": "escalate",
                        "prompt": "ask: go on",
                    }
                ]
            }
        ],
    }
    before = _today(api, admin)
    run_id = start(api, admin, waits)
    wait_step(api, admin, run_id, "wait", {"waiting"})
    cancelled = api("POST", f"/v1/workflows/{run_id}/cancel", admin)
    assert cancelled.status == 200, cancelled.body
    entered = _entered(run_id)
    assert entered > 0
    assert _today(api, admin)["state_transitions"] - before["state_transitions"] == entered


def test_relay_runs_count_a_call_and_their_states(api, stack, agents, relay_api) -> None:
    admin = stack.admin_token
    publish(api, admin, relay_files("counted", "def run(INPUT):\n    return {'ok': True}\n"))
    publish(
        api,
        admin,
        relay_files(
            "broken",
            "def run(INPUT):\n    raise RuntimeError('no')\n",
            functions=[
                {"name": "run", "entrypoint": "main:run", "input_schema": {"type": "object"}}
            ],
        ),
    )
    caller = agents.connection("caller")["token"]
    before = _today(api, admin)
    ok = start_relay(
        api, caller, "counted", {"function": "run", "input": {}, "idempotency_key": "k1"}
    )
    assert wait_relay(api, caller, "counted", ok["run_id"])["status"] == "succeeded"
    bad = start_relay(
        api, caller, "broken", {"function": "run", "input": {}, "idempotency_key": "k1"}
    )
    assert wait_relay(api, caller, "broken", bad["run_id"])["status"] == "failed"
    today = _today(api, admin)
    assert today["function_calls"] - before["function_calls"] == 2
    # One state each: Attempt (its retries are that state again); nothing crashed.
    assert _entered(ok["run_id"]) == 1
    assert today["state_transitions"] - before["state_transitions"] == 1 + _entered(bad["run_id"])
