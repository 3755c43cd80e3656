"""One MCP tool call from a workflow step (issue 28): what it adds to the step — DynamoDB
requests, Step Functions state transitions (target 0: the call happens inside the step's
turn) and latency over the server's own time — through the real API and workflow-runner
handlers on moto, against the real MCP test server (official SDK, streamable HTTP).

Two one-step workflows on the same profile's rules, one whose step calls `echo` and one
whose step only answers, run alternately; the differences are what the call adds. The
server's own time is the same call made with the MCP client directly (the connection, the
tool list and the call, as the platform makes them, without the platform around them).
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

from moto import mock_aws

from bench.stack import Requests, executing_stack
from bench.workflows import run_to_end

ROUNDS = 5
PROFILE: dict[str, Any] = {
    "name": "bench-mcp",
    "type": "scripted",
    "rules": [
        {
            "when": "^call$",
            "mcp": {"server": "tools", "tool": "echo", "arguments": {"text": "bench"}},
            "reply": "{mcp.outcome}: {mcp.text}",
        },
        {"default": "answered"},
    ],
    "mcp_tools": [{"server": "tools", "tools": ["echo"]}],
}


def _definition(prompt: str) -> dict[str, Any]:
    steps = [{"label": "one", "adapter": "bench-mcp", "prompt": prompt}]
    return {"workflowId": "bench-mcp", "stages": [{"steps": steps}]}


def _run(stack: Any, requests: Requests, prompt: str) -> dict[str, float]:
    ended = run_to_end(
        stack.api, stack.admin_token, stack.stepfunctions, requests, _definition(prompt)
    )
    step = ended.status["stages"][0]["steps"][0]
    return {
        "transitions": ended.transitions,
        "ddb": ended.ddb,
        "secrets": float(ended.spent.get("secretsmanager:GetSecretValue", 0)),
        "wall": ended.wall,
        "call_ms": float(step["mcpCalls"][0]["durationMs"]) if step["mcpCalls"] else 0.0,
    }


def _server_time(url: str, token: str) -> float:
    """The same call straight through the MCP client, as the platform makes it with the
    server's tool list already kept (ms)."""
    from agentworks.mcp_servers import client

    endpoint = client.Endpoint(url, {"Authorization": f"Bearer {token}"})
    started = time.perf_counter()
    client.call_tool(endpoint, "echo", {"text": "bench"}, 10.0, 1 << 20)
    return (time.perf_counter() - started) * 1000


def measure() -> dict[str, float]:
    from agentworks.aws_clients import secretsmanager
    from agentworks.outbound.urls import ALLOW_LOOPBACK_ENV
    from tests.support.mcp_test_server import mcp_test_server

    os.environ[ALLOW_LOOPBACK_ENV] = "1"  # the test server listens on 127.0.0.1
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    try:
        with (
            mcp_test_server() as server,
            mock_aws(config={"stepfunctions": {"execute_state_machine": True}}),
        ):
            requests = Requests()
            stack = executing_stack("bench-mcp", requests)
            requests.hook(secretsmanager())
            api, admin = stack.api, stack.admin_token
            headers = {"Authorization": f"Bearer {server.token}"}
            body = {"name": "tools", "url": server.url, "headers": headers}
            assert api("POST", "/v1/mcp-servers", admin, body).status == 201
            assert api("POST", "/v1/adapters", admin, PROFILE).status == 201
            _run(stack, requests, "call")  # warms the container's tool list (a minute)
            calls, plain = [], []
            for _ in range(ROUNDS):
                calls.append(_run(stack, requests, "call"))
                plain.append(_run(stack, requests, "answer"))
            own = statistics.median(_server_time(server.url, server.token) for _ in range(ROUNDS))
    finally:
        os.environ.pop(ALLOW_LOOPBACK_ENV, None)

    def median(runs: list[dict[str, float]], key: str) -> float:
        return statistics.median(r[key] for r in runs)

    recorded = median(calls, "call_ms")
    return {
        "mcp_call_ddb_requests": median(calls, "ddb") - median(plain, "ddb"),
        "mcp_call_state_transitions": median(calls, "transitions") - median(plain, "transitions"),
        "mcp_call_secret_reads": median(calls, "secrets") - median(plain, "secrets"),
        "mcp_call_server_ms": round(own, 1),
        "mcp_call_recorded_ms": recorded,
        # The call as the step records it (the caller's connection, the server's item, its
        # secret, admission) over the bare client call.
        "mcp_call_added_latency_ms": round(recorded - own, 1),
        # The step end to end (noisy: moto's executor polls in real time).
        "mcp_call_step_wall_delta_ms": round(
            (median(calls, "wall") - median(plain, "wall")) * 1000, 1
        ),
    }


if __name__ == "__main__":
    for name, value in measure().items():
        print(f"{name}: {value}")
