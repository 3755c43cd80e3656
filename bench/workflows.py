"""Workflow runs (issue 8): Step Functions state transitions and DynamoDB requests per step
and per stage, and the local wall time of a 2-stage × 3-step scripted workflow, through the
real API and workflow-runner handlers on moto with its Step Functions executor."""

from __future__ import annotations

import statistics
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from moto import mock_aws

from bench.stack import Requests, executing_stack

RUNS = 3
STAGES, STEPS = 2, 3
PROFILE = {"name": "bench", "type": "scripted", "rules": [{"default": "Done: {prompt}"}]}


def definition(stages: int = STAGES, steps: int = STEPS) -> dict[str, Any]:
    return {
        "workflowId": "bench",
        "stages": [
            {
                "label": f"s{s}",
                "steps": [
                    {"label": f"s{s}-{i}", "adapter": "bench", "prompt": f"Work {s}.{i}"}
                    for i in range(steps)
                ],
            }
            for s in range(stages)
        ],
    }


@dataclass(frozen=True)
class Ended:
    """A run started over the API and waited for: its status, what it spent (the start and
    its execution; the caller's status polls are its own choice and not counted), its wall
    time and its execution's states entered."""

    status: dict[str, Any]
    spent: Counter[str]
    wall: float
    transitions: float

    @property
    def ddb(self) -> float:
        return float(sum(n for k, n in self.spent.items() if k.startswith("dynamodb:")))


def run_to_end(api: Any, admin: str, sfn: Any, requests: Any, shape: dict[str, Any]) -> Ended:
    before, executed = requests.counts.copy(), requests.execution.copy()
    started = time.perf_counter()
    run_id = api("POST", "/v1/workflows", admin, shape).body["runId"]
    # The start (on this thread) and everything the execution did (off it).
    admission = requests.counts - before - (requests.execution - executed)
    while True:
        status = api("GET", f"/v1/workflows/{run_id}", admin).body
        if status["status"] != "running":
            break
        time.sleep(0.005)
    wall = time.perf_counter() - started
    assert status["status"] == "succeeded", status
    arn = next(
        m["stateMachineArn"]
        for m in sfn.list_state_machines()["stateMachines"]
        if m["name"].endswith("WorkflowRunStateMachine")
    )
    execution = f"{arn.replace(':stateMachine:', ':execution:', 1)}:{run_id}"
    history = sfn.get_execution_history(executionArn=execution, maxResults=1000)["events"]
    entered = float(sum(1 for e in history if e["type"].endswith("StateEntered")))
    return Ended(status, admission + (requests.execution - executed), wall, entered)


def _run(api: Any, admin: str, sfn: Any, requests: Any, shape: dict[str, Any]) -> dict[str, float]:
    ended = run_to_end(api, admin, sfn, requests, shape)
    return {
        "transitions": ended.transitions,
        # The start's token check (one GetItem) is the caller's, as for every request.
        "ddb": ended.ddb - 1,
        "wall": ended.wall,
    }


def measure() -> dict[str, float]:
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        requests = Requests()
        stack = executing_stack("bench-wf", requests)
        api, admin, sfn = stack.api, stack.admin_token, stack.stepfunctions
        assert api("POST", "/v1/adapters", admin, PROFILE).status == 201
        runs = [_run(api, admin, sfn, requests, definition()) for _ in range(RUNS)]
        # One stage more, one step more per stage: what a stage and a step add.
        wider = _run(api, admin, sfn, requests, definition(STAGES, STEPS + 1))
        deeper = _run(api, admin, sfn, requests, definition(STAGES + 1, STEPS))
    base = {k: statistics.median(r[k] for r in runs) for k in ("transitions", "ddb", "wall")}
    steps = STAGES * STEPS
    per_step_transitions = (wider["transitions"] - base["transitions"]) / STAGES
    per_stage_transitions = (
        deeper["transitions"] - base["transitions"] - STEPS * per_step_transitions
    )
    return {
        "workflow_2x3_wall_s": base["wall"],
        "workflow_2x3_state_transitions": base["transitions"],
        "workflow_2x3_ddb_requests": base["ddb"],
        # A step's own work is its task state: the rest is the engine's overhead.
        "workflow_transitions_per_step": per_step_transitions,
        "workflow_overhead_transitions_per_step": (base["transitions"] - steps) / steps,
        "workflow_transitions_per_stage": per_stage_transitions,
        "workflow_ddb_requests_per_step": (wider["ddb"] - base["ddb"]) / STAGES,
        "workflow_ddb_requests_per_stage": deeper["ddb"]
        - base["ddb"]
        - STEPS * (wider["ddb"] - base["ddb"]) / STAGES,
    }


if __name__ == "__main__":
    import os

    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    for name, value in measure().items():
        print(f"{name}: {value:.3f}")
