"""A2A against the HTTP API on the same calls (issue 30): DynamoDB requests of a SendMessage
and a GetTask next to POST /v1/calls and GET /v1/calls/{id}, and the Step Functions
transitions of an A2A task, through the real handlers on moto's executor."""

from __future__ import annotations

import statistics
import time
import uuid
from collections import Counter
from typing import Any

import boto3
from moto import mock_aws

from bench.functions import CREW, _machine
from bench.stack import Requests, executing_stack, quiet

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


def measure_adapter_wait(reads: int = 3) -> dict[str, float]:
    """A call handed to an external A2A agent (the `a2a` adapter) whose task outlasts the
    turn: the states its execution enters in all and while the tick reads the task `reads`
    times (every tick, here), and the DynamoDB requests of one such read."""
    import json
    import os

    from agentworks import limits
    from agentworks.outbound.urls import ALLOW_LOOPBACK_ENV
    from tests.support.a2a_test_agent import a2a_test_agent
    from tests.support.handlers import LambdaContext, load_handler

    os.environ[ALLOW_LOOPBACK_ENV] = "1"  # the agent listens on 127.0.0.1
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")  # the adapter's Secrets Manager
    first_pause, limits.A2A_WAIT_POLL_FIRST_SECONDS = limits.A2A_WAIT_POLL_FIRST_SECONDS, 0
    try:
        with (
            mock_aws(config={"stepfunctions": {"execute_state_machine": True}}),
            a2a_test_agent() as agent,
        ):
            requests = Requests()
            stack = executing_stack("bench-a2a-wait", requests)
            api, admin, sfn = stack.api, stack.admin_token, stack.stepfunctions
            account = api("GET", "/v1/whoami", admin).body["account_id"]
            boto3.client("secretsmanager", region_name="us-east-1").create_secret(
                Name=f"bench-a2a-wait/a2a-agents/{account}/partner",  # the stack's prefix
                SecretString=json.dumps({"Authorization": f"Bearer {agent.token}"}),
            )
            crew = {
                "name": "partner",
                "instructions": "Hand the work to the partner agent.",
                "adapter": {"type": "a2a", "card_url": agent.card_url, "auth_secret": "partner"},
                "functions": [{"name": "later", "input_schema": {"type": "object"}}],
            }
            assert api("POST", "/v1/crews", admin, crew).status == 201
            tick = load_handler("tick").handler

            def tick_requests() -> tuple[dict[str, int], int]:
                before = requests.counts.copy()
                with quiet():
                    report = tick({"source": "aws.events"}, LambdaContext())
                return report, _ddb(requests.counts - before)

            idle = tick_requests()[1]  # a tick with nothing due, subtracted from each read
            call = {"target": "crew:partner", "function": "later", "args": {}}
            call_id = api("POST", "/v1/calls", admin, call).body["call_id"]

            def entered() -> int:
                arn = next(
                    e["executionArn"]
                    for e in sfn.list_executions(stateMachineArn=_machine(sfn))["executions"]
                    if e["name"] == call_id
                )
                events = sfn.get_execution_history(executionArn=arn)["events"]
                return sum(1 for e in events if e["type"].endswith("StateEntered"))

            while "waiting for it to end" not in str(
                (status := api("GET", f"/v1/calls/{call_id}", admin).body)["progress"]
            ):
                assert not status["terminal"], status
                time.sleep(0.05)
            time.sleep(0.5)  # the AwaitTask state's invocation stores the wait
            before_wait, per_read = entered(), []
            for _ in range(reads):
                report, n = tick_requests()
                assert report["external_tasks_read"] == 1, report
                per_read.append(n - idle)
            waited = entered() - before_wait
            agent.release.set()
            report, _ = tick_requests()
            assert report["external_waits_resumed"] == 1, report
            while not api("GET", f"/v1/calls/{call_id}", admin).body["terminal"]:
                time.sleep(0.005)
            total = entered()
    finally:
        limits.A2A_WAIT_POLL_FIRST_SECONDS = first_pause
        os.environ.pop(ALLOW_LOOPBACK_ENV, None)
    return {
        "a2a_adapter_task_state_transitions": float(total),
        "a2a_adapter_wait_state_transitions": float(waited),
        "a2a_adapter_tick_read_ddb_requests": float(statistics.median(per_read)),
    }


if __name__ == "__main__":
    print(measure())
    print(measure_adapter_wait())
