"""A crew step waits on a task token for its call's end (AwaitCall): whatever ends the call
answers it — the call's own Finish, the tick's reconciliation of a stopped execution —
and a call that ended before the token was stored is answered at once. A pipeline's
items run as child executions of a Distributed Map, within the limits."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from agentworks import limits
from agentworks.errors import InvalidInput
from agentworks.workflows.call_waits import CallWaits
from agentworks.workflows.definition import parse_workflow
from agentworks.workflows.function_call_store import WorkflowCallStore
from agentworks.workflows.runs import execution_input
from tests.integration.crew_support import CONTRACTS, wait_for
from tests.integration.workflow_support import define, start, step_of, wait_run
from tests.support.handlers import LambdaContext, load_handler
from tests.support.history_model import inline_copy

ASL = json.loads(
    (Path(__file__).resolve().parents[2] / "statemachines" / "workflow_run.asl.json").read_text()
)
CONFIRM = {"workflowId": "waits", "stages": [{"steps": [
    {"label": "confirm", "crew": "contracts", "function": "confirm",
     "args": {"action": "sign"}}]}]}  # fmt: skip


def _call_of(stack: Any, run_id: str) -> str | None:
    found = stack.services.workflows.runs._runs.read_all(run_id)
    return next((s.call_id for s in found.steps if s.call_id), None) if found else None


def _asking_call(api: Any, stack: Any, caller: str, run_id: str) -> str:
    deadline = time.monotonic() + 30
    while True:
        call_id = _call_of(stack, run_id)
        if call_id and api("GET", f"/v1/calls/{call_id}", caller).body["state"] == (
            "input_required"
        ):
            return call_id
        assert time.monotonic() < deadline
        time.sleep(0.05)


def _waits(stack: Any, sent: list[str]) -> CallWaits:
    return CallWaits(
        stack.client,
        stack.settings.work_table,
        lambda token, _output: sent.append(token),
        WorkflowCallStore(stack.client, stack.settings.work_table),
        stack.clock,
    )


def test_a_call_that_ended_before_the_token_was_stored_is_answered_at_once(
    api, stack, agents
) -> None:
    assert api("POST", "/v1/crews", stack.admin_token, CONTRACTS).status == 201
    caller = agents.connection("caller")["token"]
    run_id = start(api, caller, CONFIRM)
    call_id = _asking_call(api, stack, caller, run_id)
    sent: list[str] = []
    waits = _waits(stack, sent)
    waits.wait(call_id, "late-step", "token-open")
    assert sent == []  # the call still runs: the token waits with it
    reply = api("GET", f"/v1/calls/{call_id}", caller).body["pending_inputs"][0]
    api("POST", f"/v1/calls/{call_id}/reply", caller,
        {"request_id": reply["request_id"], "answer": "yes"})  # fmt: skip
    assert wait_run(api, caller, run_id)["status"] == "succeeded"
    waits.wait(call_id, "later-step", "token-late")  # the call has ended
    assert sent == ["token-late"]
    # An end repeated (a retried Finish) answers what waits with the call again; the late
    # token was answered, not stored.
    waits.wake(call_id)
    assert sent.count("token-open") == 1 and sent.count("token-late") == 1


def test_a_call_whose_execution_stopped_ends_the_step_through_the_ticks_reconciliation(
    api, stack, agents
) -> None:
    """Nothing polls: the tick, recording the stopped call interrupted, answers the step."""
    assert api("POST", "/v1/crews", stack.admin_token, CONTRACTS).status == 201
    caller = agents.connection("caller")["token"]
    run_id = start(api, caller, CONFIRM)
    call_id = _asking_call(api, stack, caller, run_id)
    stack.services.crews.calls._executions.stop(call_id, "lost")
    stack.clock.advance(3600)
    load_handler("tick").handler({"source": "aws.events"}, LambdaContext())
    run = wait_run(api, caller, run_id)
    assert run["status"] == "failed"
    assert "interrupted" in step_of(run, "confirm")["error"], run


def test_a_busy_crew_is_asked_again_after_waits_then_the_step_fails(
    api, stack, agents, monkeypatch
) -> None:
    """Nothing is queued when a Crew runs all the calls it may: the step asks again after a
    wait (CrewBusy), a bounded number of times."""
    monkeypatch.setattr(limits, "WORKFLOW_CREW_BUSY_FIRST_WAIT_SECONDS", 0)
    monkeypatch.setattr(limits, "WORKFLOW_CREW_BUSY_ROUNDS_MAX", 2)
    assert api("POST", "/v1/crews", stack.admin_token, CONTRACTS).status == 201
    other = agents.connection("other")["token"]
    for n in range(limits.RUNNING_PER_CREW):  # every slot held by a call waiting for a person
        body = {"target": "crew:contracts", "function": "confirm", "args": {"action": f"a{n}"}}
        call_id = api("POST", "/v1/calls", other, body).body["call_id"]
        wait_for(api, other, call_id, {"input_required"})
    caller = agents.connection("caller")["token"]
    run = wait_run(api, caller, start(api, caller, CONFIRM))
    assert run["status"] == "failed"
    assert step_of(run, "confirm")["error"] == "crew:contracts stayed busy through 2 attempts"


def test_the_machine_waits_on_tokens_and_runs_items_as_child_executions() -> None:
    top = ASL["States"]
    items = top["Items"]
    assert items["ItemProcessor"]["ProcessorConfig"] == {
        "Mode": "DISTRIBUTED",
        "ExecutionType": "STANDARD",
    }
    assert items["MaxConcurrency"] == limits.WORKFLOW_ITEMS_CONCURRENCY
    # One stage processor, for a run of stages and for each item alike (state names are
    # unique across a machine: the run of stages' copy is named …Inline).
    stages = items["ItemProcessor"]["States"]["Stages"]
    assert top["StagesInline"] == inline_copy(stages)
    steps = stages["ItemProcessor"]["States"]["Steps"]["ItemProcessor"]["States"]
    assert "PollCall" not in steps
    assert steps["AwaitCall"]["Resource"].endswith(".waitForTaskToken")
    assert steps["AwaitCall"]["TimeoutSeconds"] == limits.WORKFLOW_CALL_WAIT_TIMEOUT_SECONDS
    assert steps["AwaitCall"]["Catch"][0]["Next"] == "StepInterrupted"
    assert steps["CallEnded"]["End"] is True


def _pipeline(items: int, steps: int) -> dict[str, Any]:
    per_stage = limits.WORKFLOW_STEPS_PER_STAGE_MAX
    stages = [
        {"steps": [{"label": f"s{s}x{i}", "adapter": "timed", "prompt": "Do {{ITEM}}"}
                   for i in range(min(per_stage, steps - s * per_stage))]}
        for s in range(-(-steps // per_stage))
    ]  # fmt: skip
    return {"workflowId": "wide", "items": list(range(items)), "stages": stages}


def test_a_pipeline_of_ten_thousand_items_is_accepted_and_fits_one_execution_input() -> None:
    start_ = parse_workflow(_pipeline(limits.WORKFLOW_ITEMS_MAX, 10))
    size = len(json.dumps(execution_input("wfrun_01JZZZZZZZZZZZZZZZZZZZZZZZ", start_)))
    assert size < 256 * 1024 // 2, size  # Step Functions takes at most 256 KiB of input
    widest = parse_workflow(_pipeline(limits.WORKFLOW_ITEMS_MAX, limits.WORKFLOW_STEPS_MAX // 10))
    assert len(widest.items or []) * 10 == limits.WORKFLOW_PIPELINE_STEP_RUNS_MAX
    with pytest.raises(InvalidInput, match="10000"):
        parse_workflow(_pipeline(limits.WORKFLOW_ITEMS_MAX + 1, 1))
    with pytest.raises(InvalidInput, match="step runs; at most 100000"):
        parse_workflow(_pipeline(limits.WORKFLOW_ITEMS_MAX, 11))


def test_cancel_stops_every_item_of_a_pipeline(api, stack) -> None:
    """The items run as child executions; cancelling the run stops the parent (on AWS its
    Map Run and child executions stop with it) and every item's open step is cancelled."""
    from tests.integration.workflow_support import TIMED, wait_step

    define(api, stack.admin_token, TIMED)
    flow = {"workflowId": "pipe-cancel", "items": ["a", "b", "c"], "stages": [{"steps": [
        {"label": "go", "adapter": "timed", "policy": "escalate",
         "prompt": "Do {{ITEM}}. ask: ready"}]}]}  # fmt: skip
    token = stack.admin_token
    run_id = start(api, token, flow)
    deadline = time.monotonic() + 30
    while True:
        run = api("GET", f"/v1/workflows/{run_id}", token).body
        steps = [s for item in run["items"] for stage in item["stages"] for s in stage["steps"]]
        if [s["status"] for s in steps] == ["waiting"] * 3:
            break
        assert time.monotonic() < deadline, run
        time.sleep(0.05)
    assert api("POST", f"/v1/workflows/{run_id}/cancel", token).status == 200
    executions = stack.services.workflows.runs._executions
    assert executions.status(executions.execution_arn(run_id)) == "ABORTED"
    run = api("GET", f"/v1/workflows/{run_id}", token).body
    assert run["status"] == "cancelled"
    assert {s["status"] for i in run["items"] for st in i["stages"] for s in st["steps"]} == {
        "cancelled"
    }
    del wait_step


def test_a_pipelines_items_count_their_own_states_into_the_runs_usage(
    api, stack, monkeypatch
) -> None:
    """On AWS each item's child execution has its own history, which the run's does not
    hold: the item's last task counts it. moto runs items inside the run's execution (the
    id they see is the run's), whose Finish counts everything already."""
    from tests.integration.workflow_support import TIMED

    engine = stack.services.workflows.engine.ends
    counted: list[str] = []
    item_ended = engine.item_ended
    monkeypatch.setattr(
        engine,
        "item_ended",
        lambda run, execution: (counted.append(execution), item_ended(run, execution)),
    )
    define(api, stack.admin_token, TIMED)
    flow = {"workflowId": "pipe-usage", "items": ["a", "b"], "stages": [{"steps": [
        {"label": "go", "adapter": "timed", "prompt": "Do {{ITEM}}"}]}]}  # fmt: skip
    run_id = start(api, stack.admin_token, flow)
    assert wait_run(api, stack.admin_token, run_id)["status"] == "succeeded"
    runs = stack.services.workflows.runs._runs
    assert len(counted) == 2 and all(e.endswith(f":{run_id}") for e in counted)
    assert runs.read_all(run_id).item_transitions == 0  # moto: the run's own history

    class ChildHistory:
        def entered_states(self, execution: str) -> int:
            assert execution.endswith("/items:child-1")
            return 21

    monkey = engine._history
    engine._history = ChildHistory()
    try:
        engine.item_ended(run_id, "arn:aws:states:us-east-1:123456789012:execution:m/items:child-1")
    finally:
        engine._history = monkey
    assert runs.read_all(run_id).item_transitions == 21


def test_a_pipeline_steps_reads_only_its_own_items_records(stack) -> None:
    """A step of a 10,000-item run reads its item's steps, never every item's."""
    from agentworks.workflows.records import RunRecord, StepRecord

    runs = stack.services.workflows.runs._runs
    run = RunRecord("wfrun_01JZZZZZZZZZZZZZZZZZZZZZZZ", "acct", "conn", "wide", {}, 0)
    runs.create(run)
    for item in (0, 1, 10, 100, 1000, 9999):
        for stage in (0, 1):
            runs.save_step(StepRecord(run.run_id, stage, 0, f"s{stage}", "st", item=item), 0)
    for item in (0, 1, 10, 100, 1000, 9999):
        state = runs.read_item(run.run_id, item)
        assert state is not None and state.run.run_id == run.run_id
        assert sorted((s.item, s.stage) for s in state.steps) == [(item, 0), (item, 1)]
    assert len(runs.read_all(run.run_id).steps) == 12


def test_an_execution_started_before_await_call_existed_still_polls(api, stack, agents) -> None:
    """A deploy does not strand a run in flight: its RunStep (without `await_calls`) is
    answered "poll", which its machine knows; the current machine's gets "await_call"."""
    assert api("POST", "/v1/crews", stack.admin_token, CONTRACTS).status == 201
    caller = agents.connection("caller")["token"]
    run_id = start(api, caller, CONFIRM)
    _asking_call(api, stack, caller, run_id)
    engine = stack.services.workflows.engine
    event = {"action": "step", "run_id": run_id, "item": 0, "stage": 0, "step": 0}
    assert engine.handle(event) == {"next": "poll"}
    assert engine.handle({**event, "await_calls": True}) == {"next": "await_call"}


def test_a_busy_crews_waits_double_up_to_the_longest() -> None:
    from agentworks.workflows.crew_steps import busy_wait

    waits = [busy_wait(n) for n in range(1, limits.WORKFLOW_CREW_BUSY_ROUNDS_MAX + 1)]
    assert waits == [30, 60, 120, 240, 480, 900, 900, 900]
    assert waits[0] == limits.WORKFLOW_CREW_BUSY_FIRST_WAIT_SECONDS
    assert max(waits) == limits.WORKFLOW_CREW_BUSY_LONGEST_WAIT_SECONDS  # and never longer
    assert sum(waits) < 3600 + 60  # about an hour of asking, then the step fails
