"""A2A against the HTTP API on the same calls (issue 30): DynamoDB requests of a SendMessage
and a GetTask next to POST /v1/calls and GET /v1/calls/{id}, and the Step Functions
transitions of an A2A task, through the real handlers on moto's executor."""

from __future__ import annotations

import statistics
import time
import uuid
from collections import Counter
from typing import Any

from moto import mock_aws

from bench.functions import CREW, _machine
from bench.stack import Requests, executing_stack

ROUNDS = 3
VERSION = [("a2a-version", "1.0")]


def _ddb(counts: Counter[str]) -> int:
    return sum(n for k, n in counts.items() if k.startswith("dynamodb:"))


def measure() -> dict[str, float]:
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        requests = Requests()
        stack = executing_stack("bench-a2a", requests)
        api, admin, sfn = stack.api, stack.admin_token, stack.stepfunctions
        assert api("POST", "/v1/crews", admin, CREW).status == 201

        def spent(method: str, path: str, body: Any = None, a2a: bool = False) -> tuple[Any, int]:
            """The request's own DynamoDB requests (an execution's meanwhile excluded)."""
            before, executed = requests.counts.copy(), requests.execution.copy()
            reply = api(method, path, admin, body, headers=VERSION if a2a else None)
            return reply, _ddb(requests.counts - before - (requests.execution - executed))

        def settle(call_id: str) -> None:
            while not api("GET", f"/v1/calls/{call_id}", admin).body["terminal"]:
                time.sleep(0.005)

        http_send, http_get, a2a_send, a2a_get, transitions = [], [], [], [], []
        for i in range(ROUNDS):
            args = {"text": f"t{i}"}
            call = {"target": "crew:bench", "function": "summarize", "args": args}
            accepted, n = spent("POST", "/v1/calls", call)
            http_send.append(n)
            call_id = accepted.body["call_id"]
            settle(call_id)
            http_get.append(spent("GET", f"/v1/calls/{call_id}")[1])

            message = {
                "messageId": uuid.uuid4().hex,
                "role": "ROLE_USER",
                "parts": [{"data": {"function": "summarize", "args": args}}],
            }
            send = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "SendMessage",
                "params": {"message": message, "configuration": {"returnImmediately": True}},
            }
            sent, n = spent("POST", "/a2a/bench", send, a2a=True)
            a2a_send.append(n)
            task_id = sent.body["result"]["task"]["id"]
            settle(task_id)
            get = {"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": task_id}}
            got, n = spent("POST", "/a2a/bench", get, a2a=True)
            assert got.body["result"]["status"]["state"] == "TASK_STATE_COMPLETED", got.body
            a2a_get.append(n)
            execution = next(
                e
                for e in sfn.list_executions(stateMachineArn=_machine(sfn))["executions"]
                if e["name"] == task_id
            )
            history = sfn.get_execution_history(executionArn=execution["executionArn"])["events"]
            transitions.append(sum(1 for e in history if e["type"].endswith("StateEntered")))
    return {
        "a2a_send_ddb_requests": float(statistics.median(a2a_send)),
        "http_call_ddb_requests": float(statistics.median(http_send)),
        "a2a_get_task_ddb_requests": float(statistics.median(a2a_get)),
        "http_call_status_ddb_requests": float(statistics.median(http_get)),
        "a2a_task_state_transitions": float(statistics.median(transitions)),
    }


if __name__ == "__main__":
    print(measure())
