"""Step Functions history (issue 23): the worst-case history events per execution of the
runs the 25,000-event quota must hold for — a crew step waiting 6 h, a function call at
its turn limit, a pipeline of 1,000 items × 10 stages, a Relay run at its maximum attempts,
the widest run of stages — from tests.support.history_model (computed from the ASL,
calibrated against moto's executor by tests/integration/test_workflow_history.py); and the
states a crew step enters, measured on moto for a quick call and for one that waits for a
person's answer."""

from __future__ import annotations

import time
from typing import Any

from moto import mock_aws

from bench.stack import Requests, executing_stack
from tests.integration.crew_support import CONTRACTS
from tests.support import history_model

WAIT_S = 2.0  # how long the waiting step's call waits for its answer (one poll, before)


def _step(label: str, function: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"label": label, "crew": "contracts", "function": function, "args": args}


def _history(sfn: Any, run_id: str) -> list[dict[str, Any]]:
    arn = next(
        m["stateMachineArn"]
        for m in sfn.list_state_machines()["stateMachines"]
        if m["name"].endswith("WorkflowRunStateMachine")
    )
    execution = f"{arn.replace(':stateMachine:', ':execution:', 1)}:{run_id}"
    return list(sfn.get_execution_history(executionArn=execution, maxResults=1000)["events"])


def _entered_by_step(events: list[dict[str, Any]]) -> int:
    steps = {n + history_model.INLINE for n in history_model.workflow_states()[2]}
    return sum(
        1
        for e in events
        if e["type"].endswith("StateEntered") and e["stateEnteredEventDetails"]["name"] in steps
    )


def _wait(api: Any, admin: str, run_id: str) -> dict[str, Any]:
    while True:
        status = api("GET", f"/v1/workflows/{run_id}", admin).body
        if status["status"] != "running":
            return dict(status)
        time.sleep(0.01)


def measured_transitions() -> dict[str, float]:
    """States entered per crew step: a quick call, and a call that waits for an answer."""
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        stack = executing_stack("bench-hist", Requests())
        api, admin, sfn = stack.api, stack.admin_token, stack.stepfunctions
        assert api("POST", "/v1/crews", admin, CONTRACTS).status == 201
        quick = {"workflowId": "quick", "stages": [{"steps": [
            _step("sum", "summarize", {"text": "the lease ends in May"})]}]}  # fmt: skip
        run_id = api("POST", "/v1/workflows", admin, quick).body["runId"]
        assert _wait(api, admin, run_id)["status"] == "succeeded"
        short = _entered_by_step(_history(sfn, run_id))
        waits = {"workflowId": "waits", "stages": [{"steps": [
            _step("confirm", "confirm", {"action": "sign"})]}]}  # fmt: skip
        run_id = api("POST", "/v1/workflows", admin, waits).body["runId"]
        while not any(e["type"] == "TaskSubmitted" for e in _history(sfn, run_id)):
            time.sleep(0.01)
        time.sleep(WAIT_S)
        runs = stack.services.workflows.runs._runs
        call_id = next(s.call_id for s in runs.read_all(run_id).steps if s.call_id)
        asked = api("GET", f"/v1/calls/{call_id}", admin).body
        request_id = asked["pending_inputs"][0]["request_id"]
        body = {"request_id": request_id, "answer": "yes"}
        assert api("POST", f"/v1/calls/{call_id}/reply", admin, body).status == 200
        assert _wait(api, admin, run_id)["status"] == "succeeded"
        waited = _entered_by_step(_history(sfn, run_id))
    return {
        "workflow_transitions_per_crew_step_quick": float(short),
        "workflow_transitions_per_crew_step_waiting": float(waited),
    }


def measure() -> dict[str, float]:
    scenarios = history_model.scenarios()
    results = {f"history_events_{name}": float(n) for name, n in scenarios.items()}
    held = [n for name, n in scenarios.items() if not name.endswith("_before")]
    results["history_events_worst_execution"] = float(max(held))
    results.update(measured_transitions())
    return results


if __name__ == "__main__":
    import os

    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    for name, value in measure().items():
        print(f"{name}: {value:,.0f}")
