"""A step that calls a Crew's function (W9 `crew`) goes through the call path as the run's
starter: the call is a real one (its own execution, visible to the starter), a retried task
reuses it, and the starter's own rights decide — a connection the Crew's access leaves out
gets a failed step, not a call."""

from __future__ import annotations

import copy
import json

from tests.integration.crew_support import CONTRACTS
from tests.integration.test_workflow_waits import CONFIRM, _asking_call
from tests.integration.workflow_support import TIMED, define, start, step_of, wait_run
from tests.support import workflow_agents


def _flow() -> dict:
    return {
        "workflowId": "with-crew",
        "stages": [
            {"steps": [{"label": "sum", "crew": "contracts", "function": "summarize",
                        "args": {"text": "the lease ends in May"}}]},
            {"steps": [{"label": "after", "adapter": "timed", "prompt": "Use the summary"}]},
        ],
    }  # fmt: skip


def test_a_crew_step_calls_the_function_as_the_starter(api, stack, agents) -> None:
    workflow_agents.reset()
    define(api, stack.admin_token, TIMED)
    assert api("POST", "/v1/crews", stack.admin_token, CONTRACTS).status == 201
    caller = agents.connection("caller")["token"]
    run = wait_run(api, caller, start(api, caller, _flow()))
    assert run["status"] == "succeeded", run
    summary = step_of(run, "sum")
    assert json.loads(summary["output"]) == {"summary": "the lease ends in May"}
    # A real call of the starter's: it shows in the starter's call status.
    calls = stack.services.crews.calls
    [record] = [
        item
        for item in stack.client.scan(TableName=stack.settings.work_table)["Items"]
        if item["pk"]["S"].startswith("CALL#")
    ]
    call_id = record["pk"]["S"].removeprefix("CALL#")
    seen = calls.status(stack.principal(caller), call_id)
    assert seen["state"] == "succeeded" and seen["function"] == "summarize"
    assert workflow_agents.turns_for("Use the summary")


def test_the_starters_rights_decide_what_a_crew_step_may_call(api, stack, agents) -> None:
    define(api, stack.admin_token, TIMED)
    crew = copy.deepcopy(CONTRACTS)
    # The Crew's access list leaves the starter out.
    crew["access"] = [agents.connection("someone-else")["connection_id"]]
    assert api("POST", "/v1/crews", stack.admin_token, crew).status == 201
    outsider = agents.connection("outsider")["token"]
    run = wait_run(api, outsider, start(api, outsider, _flow()))
    assert run["status"] == "failed"
    refused = step_of(run, "sum")
    assert refused["error"].startswith("crew:contracts refused the call: Not found")
    assert step_of(run, "after")["status"] == "pending"


def test_cancel_stops_a_crew_steps_running_call(api, stack, agents) -> None:
    """The call waits on a person (confirm asks); cancelling the run stops the call's
    execution, and the tick records the call interrupted, freeing the Crew's slot."""

    from tests.support.handlers import LambdaContext, load_handler

    assert api("POST", "/v1/crews", stack.admin_token, CONTRACTS).status == 201
    caller = agents.connection("caller")["token"]
    run_id = start(api, caller, CONFIRM)
    call_id = _asking_call(api, stack, caller, run_id)
    assert api("POST", f"/v1/workflows/{run_id}/cancel", caller).status == 200
    executions = stack.services.crews.calls._executions
    assert executions.status_of_call(call_id) == "ABORTED"
    stack.clock.advance(3600)
    load_handler("tick").handler({"source": "aws.events"}, LambdaContext())
    call = api("GET", f"/v1/calls/{call_id}", caller).body
    assert call["state"] == "interrupted", call


def test_a_crew_steps_call_cancelled_by_itself_ends_the_step(api, stack, agents) -> None:
    """The call, not the run, is cancelled (A2A CancelTask, `agentworks calls cancel`): its
    end answers the step waiting for it, which fails with the call's outcome at once."""
    assert api("POST", "/v1/crews", stack.admin_token, CONTRACTS).status == 201
    caller = agents.connection("caller")["token"]
    run_id = start(api, caller, CONFIRM)
    call_id = _asking_call(api, stack, caller, run_id)
    stack.services.crews.calls.cancel(stack.principal(caller), call_id)
    run = wait_run(api, caller, run_id)
    assert run["status"] == "failed", run
    assert "cancelled" in step_of(run, "confirm")["error"]
