"""F5: an execution that ends without recording its call's outcome — stopped while it waits,
or failing in Finish and Interrupted themselves — does not keep the Crew's slot. The state
machine catches what it can; the one-minute tick reconciles the rest (DescribeExecution),
each through a real execution on the local Step Functions executor."""

from __future__ import annotations

import copy
import time
from typing import Any

import boto3

from agentworks import limits
from agentworks.crews.runner import StepRunner
from tests.integration.crew_support import CONTRACTS, admit_call_record, wait_for
from tests.support.handlers import LambdaContext, load_handler

TERMINAL = {"succeeded", "failed", "interrupted", "cancelled"}


def _tick() -> dict[str, int]:
    return load_handler("tick").handler({"source": "aws.events"}, LambdaContext())


def _setup(api: Any, stack: Any, agents: Any) -> str:
    reply = api("POST", "/v1/crews", stack.admin_token, copy.deepcopy(CONTRACTS))
    assert reply.status == 201, reply.body
    return agents.connection("caller")["token"]


def _call(api: Any, token: str, function: str, args: dict[str, Any]) -> str:
    reply = api(
        "POST", "/v1/calls", token, {"target": "crew:contracts", "function": function, "args": args}
    )
    assert reply.status == 202, reply.body
    return str(reply.body["call_id"])


def _running(api: Any, token: str) -> int:
    return int(api("GET", "/v1/crews/contracts", token).body["running"])


def _sfn() -> Any:
    return boto3.client("stepfunctions", region_name="us-east-1")


def _execution(stack: Any, call_id: str) -> str:
    arn = stack.settings.function_call_state_machine_arn
    return f"{arn.replace(':stateMachine:', ':execution:', 1)}:{call_id}"


def _wait_ended(stack: Any, call_id: str, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        described = _sfn().describe_execution(executionArn=_execution(stack, call_id))
        if described["status"] != "RUNNING":
            return dict(described)
        assert time.monotonic() < deadline, described
        time.sleep(0.1)


def test_f5_a_stopped_execution_gives_its_slot_back_through_the_tick(api, stack, agents):
    caller = _setup(api, stack, agents)
    call_id = _call(api, caller, "confirm", {"action": "deploy"})
    wait_for(api, caller, call_id, {"input_required"})
    assert _running(api, caller) == 1
    _sfn().stop_execution(executionArn=_execution(stack, call_id), error="Operator")
    assert _wait_ended(stack, call_id)["status"] == "ABORTED"
    # The record still says it waits, and holds its slot, until the tick looks.
    assert api("GET", f"/v1/calls/{call_id}", caller).body["state"] == "input_required"
    assert _tick()["calls_reconciled"] == 0  # within the grace: not asked yet
    stack.clock.advance(limits.RECONCILE_GRACE_SECONDS + 1)
    first = _tick()
    assert (first["calls_checked"], first["calls_reconciled"]) == (1, 1)
    done = api("GET", f"/v1/calls/{call_id}", caller).body
    assert done["state"] == "interrupted" and "ABORTED" in done["errors"][-1]
    assert done["pending_inputs"] == []
    assert _running(api, caller) == 0
    assert _tick()["calls_checked"] == 0  # recorded: out of the reconciliation index


def test_f5_a_running_execution_is_left_alone_and_asked_again_later(api, stack, agents):
    caller = _setup(api, stack, agents)
    call_id = _call(api, caller, "confirm", {"action": "deploy"})
    wait_for(api, caller, call_id, {"input_required"})
    stack.clock.advance(limits.RECONCILE_GRACE_SECONDS + 1)
    assert (_tick()["calls_checked"], _running(api, caller)) == (1, 1)
    assert _tick()["calls_checked"] == 0  # asked again only after the recheck interval
    stack.clock.advance(limits.RECONCILE_RECHECK_SECONDS + 1)
    again = _tick()
    assert (again["calls_checked"], again["calls_reconciled"]) == (1, 0)
    assert api("GET", f"/v1/calls/{call_id}", caller).body["state"] == "input_required"


def test_f5_a_failing_finish_is_caught_and_recorded_interrupted(api, stack, agents, monkeypatch):
    caller = _setup(api, stack, agents)

    def broken(*_args: Any, **_kwargs: Any) -> None:
        raise RuntimeError("the outcome store is down")

    monkeypatch.setattr(StepRunner, "finish", broken)
    call_id = _call(api, caller, "summarize", {"text": "t"})
    done = wait_for(api, caller, call_id, TERMINAL, timeout=90)
    assert done["state"] == "interrupted" and "RuntimeError" in done["errors"][-1]
    assert _running(api, caller) == 0  # the Catch on Finish freed it, no tick needed


def test_f5_when_not_even_interrupted_can_record_the_tick_does(api, stack, agents, monkeypatch):
    caller = _setup(api, stack, agents)

    def broken(*_args: Any, **_kwargs: Any) -> None:
        raise RuntimeError("the outcome store is down")

    monkeypatch.setattr(StepRunner, "finish", broken)
    monkeypatch.setattr(StepRunner, "interrupt", broken)
    call_id = _call(api, caller, "summarize", {"text": "t"})
    ended = _wait_ended(stack, call_id, timeout=90)
    assert ended["status"] == "FAILED" and ended.get("error") == "Unrecorded"
    assert api("GET", f"/v1/calls/{call_id}", caller).body["state"] not in TERMINAL
    assert _running(api, caller) == 1  # leaked, until the tick reconciles it
    stack.clock.advance(limits.RECONCILE_GRACE_SECONDS + 1)
    assert _tick()["calls_reconciled"] == 1
    done = api("GET", f"/v1/calls/{call_id}", caller).body
    assert done["state"] == "interrupted" and "FAILED" in done["errors"][-1]
    assert _running(api, caller) == 0


def test_f5_an_admitted_call_whose_execution_never_started_gives_its_slot_back(api, stack, agents):
    """The process died between admission and StartExecution."""
    caller = _setup(api, stack, agents)
    call_id = admit_call_record(stack, caller, "accepted")
    assert _running(api, caller) == 1
    stack.clock.advance(limits.RECONCILE_GRACE_SECONDS + 1)
    assert _tick()["calls_reconciled"] == 1
    done = api("GET", f"/v1/calls/{call_id}", caller).body
    assert done["state"] == "interrupted" and "never started" in done["errors"][-1]
    assert _running(api, caller) == 0


def test_m7_a_message_run_the_tick_reconciles_moves_its_receipt_to_processed(
    api, stack, agents, monkeypatch
):
    """A Crew's run on a message whose execution ended unrecorded: the tick records it
    interrupted and, as a run that ends itself does, moves the message's receipt from
    admitted to processed, so the sender does not wait for ever."""
    from tests.integration.test_crew_messages import crew, record_of, send, wait_for_state

    crew(api, stack, "on")
    caller = agents.connection("caller")["token"]

    def broken(*_args: Any, **_kwargs: Any) -> None:
        raise RuntimeError("the outcome store is down")

    monkeypatch.setattr(StepRunner, "finish", broken)
    monkeypatch.setattr(StepRunner, "interrupt", broken)
    sent = send(api, caller, "What does clause 7 say?").body
    state = wait_for_state(api, stack, lambda s: record_of(s, sent["message_id"]).get("run_id"))
    run_id = record_of(state, sent["message_id"])["run_id"]
    assert _wait_ended(stack, run_id, timeout=90)["status"] == "FAILED"

    def receipts() -> list[str]:
        mine = api("GET", f"/v1/inboxes/{sent['inbox_id']}/state", caller).body
        return [r["receipt"] for r in mine["delivery_records"]]

    assert receipts() == ["admitted"]  # the run started; nothing recorded its end
    stack.clock.advance(limits.RECONCILE_GRACE_SECONDS + 1)
    assert _tick()["calls_reconciled"] == 1
    assert receipts() == ["processed"]
    record = record_of(api("GET", "/v1/crews/contracts/state", stack.admin_token).body,
                       sent["message_id"])  # fmt: skip
    assert record["run_state"] == "interrupted"


def test_f5_a_tick_checks_at_most_reconcile_calls_per_tick_calls(api, stack, agents, monkeypatch):
    """F5: one more open call than a tick asks about: the tick checks and records
    RECONCILE_CALLS_PER_TICK of them, the next tick the last one.

    The bound is lowered to 2 (a Crew runs at most RUNNING_PER_CREW calls): the tick reads
    `limits.RECONCILE_CALLS_PER_TICK` when it runs, so the rule under test is the same."""
    monkeypatch.setattr(limits, "RECONCILE_CALLS_PER_TICK", 2)
    caller = _setup(api, stack, agents)
    calls = [admit_call_record(stack, caller, "accepted") for _ in range(3)]
    stack.clock.advance(limits.RECONCILE_GRACE_SECONDS + 1)
    first = _tick()
    assert (first["calls_checked"], first["calls_reconciled"]) == (2, 2)
    states = [api("GET", f"/v1/calls/{c}", caller).body["state"] for c in calls]
    assert sorted(states) == ["accepted", "interrupted", "interrupted"]
    assert _running(api, caller) == 1
    assert _tick()["calls_reconciled"] == 1
    assert {api("GET", f"/v1/calls/{c}", caller).body["state"] for c in calls} == {"interrupted"}
    assert _running(api, caller) == 0
