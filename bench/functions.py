"""Structured function calls: Step Functions state transitions, DynamoDB requests and the
end-to-end local latency of a one-turn scripted call, through the real API and step-runner
handlers on moto with its Step Functions executor."""

from __future__ import annotations

import statistics
import threading
import time
from collections import Counter
from typing import Any

import boto3
from moto import mock_aws

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


class _Requests:
    """Counts AWS requests by service and operation, from the clients the handlers use.
    Requests made off the main thread are the execution's (moto's Step Functions runner)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.execution: Counter[str] = Counter()

    def hook(self, client: Any) -> None:
        client.meta.events.register("before-call.*.*", self._count)

    def _count(self, model: Any, **_: Any) -> None:
        key = f"{model.service_model.service_name}:{model.name}"
        self.counts[key] += 1
        if threading.current_thread() is not threading.main_thread():
            self.execution[key] += 1

    def total(self, service: str) -> int:
        return sum(n for k, n in self.counts.items() if k.startswith(service + ":"))


def _stack() -> tuple[Any, Any, Any, _Requests]:
    from agentworks import runtime
    from agentworks.settings import Settings
    from agentworks.signing import Signer
    from agentworks_cli.localstack import lambda_seam, moto_patches
    from agentworks_cli.localstack.template import create_resources
    from tests.support.handlers import Api, invoke_function

    moto_patches.apply()
    session = boto3.Session(region_name="us-east-1")
    resources = create_resources(session, prefix="bench-fn")
    lambda_seam.install(lambda name, event: invoke_function(resources.logical_id_of(name), event))
    env = resources.environment()
    settings = Settings(
        identity_table=env["IDENTITY_TABLE"],
        messages_table=env["MESSAGES_TABLE"],
        signing_secret_arn=env["SIGNING_SECRET_ARN"],
        work_table=env["WORK_TABLE"],
        outputs_bucket=env["OUTPUTS_BUCKET"],
        function_call_state_machine_arn=env["FUNCTION_CALL_STATE_MACHINE_ARN"],
        workflow_state_machine_arn=env["WORKFLOW_STATE_MACHINE_ARN"],
    )
    requests = _Requests()
    dynamodb, s3, sfn = (session.client(s) for s in ("dynamodb", "s3", "stepfunctions"))
    for client in (dynamodb, s3, sfn):
        requests.hook(client)
    services = runtime.build_services(
        settings, dynamodb, Signer(b"bench-signing-key-0123456789"), s3=s3, stepfunctions=sfn
    )
    runtime.install(services)
    admin = services.identity.bootstrap("bench").token
    return Api(), admin, session.client("stepfunctions"), requests


def measure() -> dict[str, float]:
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        api, admin, sfn, requests = _stack()
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
