"""Structured function calls: Step Functions state transitions, DynamoDB requests and the
end-to-end local latency of a one-turn scripted call, through the real API and step-runner
handlers on moto with its Step Functions executor."""

from __future__ import annotations

import statistics
import time
from typing import Any

from moto import mock_aws

from bench.stack import Requests, executing_stack

CALLS = 5
CREW = {
    "name": "bench",
    "instructions": "Summarize.",
    "adapter": {
        "type": "scripted",
        "rules": [{"function": "summarize", "result": {"summary": "{args.text}"}}],
    },
    "functions": [
        {
            "name": "summarize",
            "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}},
            "output_schema": {
                "type": "object",
                "properties": {"summary": {"type": "string"}},
                "required": ["summary"],
            },
        }
    ],
}


def measure() -> dict[str, float]:
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        requests = Requests()
        stack = executing_stack("bench-fn", requests)
        api, admin, sfn = stack.api, stack.admin_token, stack.stepfunctions
        assert api("POST", "/v1/crews", admin, CREW).status == 201
        latencies, transitions, ddb, sfn_calls = [], [], [], []
        for i in range(CALLS):
            before, executed = requests.counts.copy(), requests.execution.copy()
            started = time.perf_counter()
            accepted = api(
                "POST",
                "/v1/calls",
                admin,
                {"target": "crew:bench", "function": "summarize", "args": {"text": f"t{i}"}},
            )
            # The call's admission (authentication's one GetItem excluded) ...
            admission = requests.counts - before - (requests.execution - executed)
            call_id = accepted.body["call_id"]
            while True:  # the caller's status polls are its own choice: not counted
                status = api("GET", f"/v1/calls/{call_id}", admin).body
                if status["terminal"]:
                    break
                time.sleep(0.005)
            latencies.append(time.perf_counter() - started)
            assert status["state"] == "succeeded", status
            execution = next(
                e
                for e in sfn.list_executions(stateMachineArn=_machine(sfn))["executions"]
                if e["name"] == call_id
            )
            history = sfn.get_execution_history(executionArn=execution["executionArn"])["events"]
            transitions.append(sum(1 for e in history if e["type"].endswith("StateEntered")))
            # ... plus everything the execution did.
            spent = admission + (requests.execution - executed)
            ddb.append(sum(n for k, n in spent.items() if k.startswith("dynamodb:")) - 1)
            sfn_calls.append(sum(n for k, n in spent.items() if k.startswith("stepfunctions:")))
    return {
        "function_call_state_transitions": float(statistics.median(transitions)),
        "function_call_ddb_requests": float(statistics.median(ddb)),
        "function_call_sfn_requests": float(statistics.median(sfn_calls)),
        "function_call_latency_s": statistics.median(latencies),
    }


def _machine(sfn: Any) -> str:
    machines = sfn.list_state_machines()["stateMachines"]
    return next(
        m["stateMachineArn"] for m in machines if m["name"].endswith("FunctionCallStateMachine")
    )
