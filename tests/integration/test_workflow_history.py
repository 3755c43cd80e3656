"""Runs stay inside Step Functions' 25,000-event history quota at any length and width
(moto has no such quota). tests.support.history_model computes a run's history from the
ASL; here it is calibrated against the events moto's executor records for small real runs,
then each scenario's worst case is held under 20,000 events per execution."""

from __future__ import annotations

from typing import Any

import boto3

from agentworks import limits
from tests.integration.crew_support import CONTRACTS, wait_for
from tests.integration.relay_support import publish, relay_api, relay_files
from tests.integration.relay_support import start as start_relay
from tests.integration.relay_support import wait_run as wait_relay
from tests.integration.workflow_support import TIMED, define, start, step_of, wait_run
from tests.support import history_model as model

__all__ = ["relay_api"]


def history(name: str) -> list[dict[str, Any]]:
    """The events of the execution named `name`, whichever machine ran it (all pages)."""
    sfn = boto3.client("stepfunctions", region_name="us-east-1")
    for machine in sfn.list_state_machines()["stateMachines"]:
        for e in sfn.list_executions(stateMachineArn=machine["stateMachineArn"])["executions"]:
            if e["name"] == name:
                return list(
                    sfn.get_execution_history(executionArn=e["executionArn"], maxResults=1000)[
                        "events"
                    ]
                )
    raise AssertionError(f"no execution named {name}")


def ended_history(name: str) -> list[dict[str, Any]]:
    """The history once the execution recorded its end (a run's status is saved by its
    Finish task, a moment before the execution itself ends)."""
    import time

    deadline = time.monotonic() + 30
    while True:
        events = history(name)
        if events[-1]["type"].startswith("Execution") and events[-1]["type"] != (
            "ExecutionStarted"
        ):
            return events
        assert time.monotonic() < deadline, [e["type"] for e in events]
        time.sleep(0.05)


def entered(events: list[dict[str, Any]], name: str) -> int:
    return sum(
        1
        for e in events
        if e["type"].endswith("StateEntered") and e["stateEnteredEventDetails"]["name"] == name
    )


def waiting_crew_run(api: Any, stack: Any, agents: Any) -> tuple[str, list[dict[str, Any]]]:
    """A crew step whose call waits for a person: answered only once the workflow's
    AwaitCall task holds its token. Returns the run id and its ended history."""
    import time

    assert api("POST", "/v1/crews", stack.admin_token, CONTRACTS).status == 201
    caller = agents.connection("caller")["token"]
    flow = {"workflowId": "waits", "stages": [{"steps": [
        {"label": "confirm", "crew": "contracts", "function": "confirm",
         "args": {"action": "sign"}}]}]}  # fmt: skip
    run_id = start(api, caller, flow)
    deadline = time.monotonic() + 30
    while not any(e["type"] == "TaskSubmitted" for e in history(run_id)):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    call_id = next(
        s.call_id for s in stack.services.workflows.runs._runs.read_all(run_id).steps if s.call_id
    )
    asked = wait_for(api, caller, call_id, {"input_required"})
    request_id = asked["pending_inputs"][0]["request_id"]
    reply = api("POST", f"/v1/calls/{call_id}/reply", caller,
                {"request_id": request_id, "answer": "yes"})  # fmt: skip
    assert reply.status == 200, reply.body
    run = wait_run(api, caller, run_id)
    assert run["status"] == "succeeded", run
    assert '"confirmed": "yes"' in step_of(run, "confirm")["output"]
    return run_id, ended_history(run_id)


def test_a_waiting_crew_step_costs_what_the_model_says_however_long_it_waits(
    api, stack, agents
) -> None:
    _, events = waiting_crew_run(api, stack, agents)
    assert len(events) == model.run_of_stages([[model.CREW_STEP]], worst=False)
    # The wait is one task: no Wait state, one look before and one after.
    assert entered(events, "RunStepInline") == 1 and entered(events, "AwaitCallInline") == 1
    assert entered(events, "CallEndedInline") == 1
    assert not [e for e in events if e["type"].startswith("Wait")]


def test_transitions_per_step_stay_within_five_whatever_the_steps_duration(
    api, stack, agents
) -> None:
    """A crew step that waited for a person's answer to its call, and the quick steps of a
    run of agent steps: the states each entered."""
    _, events = waiting_crew_run(api, stack, agents)
    step_states = {name + model.INLINE for name in model.workflow_states()[2]}
    waited = sum(1 for e in events if _entered_name(e) in step_states)
    assert waited == len(model.CREW_STEP) == 4
    define(api, stack.admin_token, TIMED)
    quick = {"workflowId": "quick", "stages": [{"steps": [
        {"label": "a", "adapter": "timed", "prompt": "one"},
        {"label": "b", "adapter": "timed", "prompt": "two"}]}]}  # fmt: skip
    run_id = start(api, stack.admin_token, quick)
    assert wait_run(api, stack.admin_token, run_id)["status"] == "succeeded"
    per_step = sum(1 for e in ended_history(run_id) if _entered_name(e) in step_states) / 2
    assert per_step == len(model.AGENT_STEP) == 3
    assert max(len(model.CREW_STEP), len(model.AGENT_STEP), len(model.CREW_STEP_QUICK)) <= 5


def _entered_name(event: dict[str, Any]) -> str | None:
    if not event["type"].endswith("StateEntered"):
        return None
    return str(event["stateEnteredEventDetails"]["name"])


def test_the_model_matches_runs_of_stages_and_a_pipelines_parent(api, stack) -> None:
    admin = stack.admin_token
    define(api, admin, TIMED)
    stages = [
        {"steps": [{"label": "w", "adapter": "timed", "prompt": "Draft {{ITEM}}"},
                   {"label": "x", "adapter": "timed", "prompt": "Also {{ITEM}}"}]},
        {"steps": [{"label": "r", "adapter": "timed", "prompt": "Check {{ITEM}}"}]},
    ]  # fmt: skip
    shape = [[model.AGENT_STEP] * 2, [model.AGENT_STEP]]
    run_id = start(api, admin, {"workflowId": "two", "input": {"ITEM": "i"}, "stages": stages})
    assert wait_run(api, admin, run_id)["status"] == "succeeded"
    assert len(ended_history(run_id)) == model.run_of_stages(shape, worst=False)
    # A pipeline of 2 items × 2 stages: the parent holds the Distributed Map's own events;
    # moto runs the items in-process and records their events nowhere (AWS: one history
    # per child execution, whose states are the run of stages' Stages Map above).
    run_id = start(api, admin, {"workflowId": "pipe", "items": ["a", "b"], "stages": stages})
    assert wait_run(api, admin, run_id)["status"] == "succeeded"
    events = ended_history(run_id)
    assert len(events) == model.pipeline(shape, worst=False).parent
    assert [e["type"] for e in events if e["type"].startswith("MapRun")] == [
        "MapRunStarted",
        "MapRunSucceeded",
    ]


def test_the_model_matches_a_function_call_that_asks(api, stack, agents) -> None:
    assert api("POST", "/v1/crews", stack.admin_token, CONTRACTS).status == 201
    caller = agents.connection("caller")["token"]
    body = {"target": "crew:contracts", "function": "confirm", "args": {"action": "sign"}}
    call_id = api("POST", "/v1/calls", caller, body).body["call_id"]
    asked = wait_for(api, caller, call_id, {"input_required"})
    request_id = asked["pending_inputs"][0]["request_id"]
    api("POST", f"/v1/calls/{call_id}/reply", caller, {"request_id": request_id, "answer": "y"})
    wait_for(api, caller, call_id, {"succeeded"})
    states = model.asl("function_call")["States"]
    path = ["Turn", "Route", "AwaitInput", "Turn", "Route", "Finish"]
    assert len(ended_history(call_id)) == model.EXECUTION + model.path_events(
        states, path, worst=False
    )


def test_the_model_matches_a_relay_run_whose_attempts_are_retried(api, stack, relay_api) -> None:
    """Each retried attempt adds LambdaFunctionScheduled, Started and Failed (AWS's events
    for a retried Lambda task; moto records the same)."""
    admin = stack.admin_token
    publish(api, admin, relay_files("broken", "def run(INPUT):\n    raise RuntimeError('no')\n"))
    run = start_relay(
        api, admin, "broken", {"function": "run", "input": {}, "idempotency_key": "k1"}
    )
    assert wait_relay(api, admin, "broken", run["run_id"])["status"] == "failed"
    events = ended_history(run["run_id"])
    failed = sum(1 for e in events if e["type"] == "LambdaFunctionFailed")
    assert failed >= 1  # it was retried
    states = model.asl("relay_run")["States"]
    attempt = model.state_events(states["Attempt"], worst=False) + 3 * failed
    record = [model.state_events(states["RecordFailure"], worst=False)] * (
        1 if "RecordFailure" in {_entered_name(e) for e in events} else 0
    )
    assert len(events) == model.EXECUTION + attempt + sum(record)


def test_every_scenarios_worst_case_stays_far_inside_the_quota() -> None:
    found = model.scenarios()
    held = {k: v for k, v in found.items() if not k.endswith("_before")}
    assert all(events <= model.MARGIN for events in held.values()), held
    # What the polling and inline design cost: why this one exists.
    assert found["crew_step_waiting_6h_polled_before"] > model.QUOTA
    assert found["pipeline_1000x10_inline_before"] > model.QUOTA
    # A crew step's history does not depend on how long its call runs.
    assert (
        model.run_of_stages([[model.crew_step(worst=True)]], worst=True)
        == found["crew_step_waiting_6h_run"]
    )
    # The widest pipeline the limits allow: its parent and each item, not their product.
    widest = model.pipeline(
        [[model.crew_step(True)] * limits.WORKFLOW_STEPS_PER_STAGE_MAX]
        * (limits.WORKFLOW_STEPS_MAX // limits.WORKFLOW_STEPS_PER_STAGE_MAX),
        worst=True,
    )
    assert widest.parent <= model.MARGIN and widest.child <= model.MARGIN
