"""MCP tasks (issue 30 §3): DynamoDB requests of one `tasks/get` against the same call's
status over HTTP (`GET /v1/calls/{call_id}`), target equal. Both through the real handlers
(MCP function, API function) on moto with the Step Functions executor, for one call that
succeeded and one that waits for an answer; authentication's GetItem counted on both
sides (each surface checks the token once), the execution's own requests never."""

from __future__ import annotations

import json
import time
from collections import Counter
from typing import Any

from moto import mock_aws

from bench.stack import Requests, executing_stack

EVENT = "events/mcp_tasks_get.json"
CREW = {
    "name": "bench-tasks",
    "instructions": "Summarize, or ask first.",
    "adapter": {
        "type": "scripted",
        "rules": [
            {"function": "summarize", "result": {"summary": "{args.text}"}},
            {"function": "confirm", "ask": "Proceed?", "result": {"ok": "{answer}"}},
        ],
    },
    "functions": [
        {"name": "summarize", "input_schema": {"type": "object"}},
        {"name": "confirm", "input_schema": {"type": "object"}},
    ],
}


def _tasks_get_event(token: str, call_id: str) -> dict[str, Any]:
    from tests.support.handlers import ROOT

    event = json.loads((ROOT / EVENT).read_text())
    event["headers"]["authorization"] = f"Bearer {token}"
    event["headers"]["mcp-name"] = call_id
    body = json.loads(event["body"])
    body["params"]["taskId"] = call_id
    event["body"] = json.dumps(body)
    return event


def _ddb(requests: Requests, before: Counter[str], executed: Counter[str]) -> int:
    """DynamoDB requests on the caller's side since `before` (the execution's excluded)."""
    spent = (requests.counts - before) - (requests.execution - executed)
    return sum(n for k, n in spent.items() if k.startswith("dynamodb:"))


def measure() -> dict[str, float]:
    from tests.support.handlers import LambdaContext, load_handler

    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        requests = Requests()
        stack = executing_stack("bench-tasks", requests)
        api, admin = stack.api, stack.admin_token
        mcp = load_handler("mcp").handler
        assert api("POST", "/v1/crews", admin, CREW).status == 201
        over_http, over_mcp = [], []
        for function, state in (("summarize", "succeeded"), ("confirm", "input_required")):
            body = {"target": "crew:bench-tasks", "function": function, "args": {}}
            call_id = api("POST", "/v1/calls", admin, body).body["call_id"]
            deadline = time.monotonic() + 30
            while api("GET", f"/v1/calls/{call_id}", admin).body["state"] != state:
                assert time.monotonic() < deadline, call_id
                time.sleep(0.005)
            before, executed = requests.counts.copy(), requests.execution.copy()
            status = api("GET", f"/v1/calls/{call_id}", admin)
            over_http.append(_ddb(requests, before, executed))
            before, executed = requests.counts.copy(), requests.execution.copy()
            answered = mcp(_tasks_get_event(admin, call_id), LambdaContext())
            over_mcp.append(_ddb(requests, before, executed))
            task = json.loads(answered["body"])["result"]
            assert task["taskId"] == call_id and status.body["state"] == state, task
    return {
        "mcp_tasks_get_ddb_requests": float(max(over_mcp)),
        "call_status_http_ddb_requests": float(max(over_http)),
        "mcp_tasks_get_extra_ddb_requests": float(
            max(m - h for m, h in zip(over_mcp, over_http, strict=True))
        ),
    }
