"""Helpers for workflow tests: adapter profiles, starting runs over HTTP, polling."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import yaml

# The profile (examples/claude-code-adapter.yaml): Review rules, a failing rule,
# and a default that shows the session's history.
CLAUDE_CODE: dict[str, Any] = yaml.safe_load(
    (Path(__file__).resolve().parents[2] / "examples" / "claude-code-adapter.yaml").read_text()
)
# Real turns recorded by tests.support.workflow_agents (sleeps, costs, questions).
TIMED: dict[str, Any] = {
    "name": "timed",
    "type": "scripted",
    "entrypoint": "tests.support.workflow_agents:timed",
}

TERMINAL = {"succeeded", "failed", "cancelled"}


def define(api: Any, admin: str, *profiles: dict[str, Any]) -> None:
    for profile in profiles:
        created = api("POST", "/v1/adapters", admin, dict(profile))
        assert created.status == 201, created.body


def start(api: Any, token: str, definition: dict[str, Any]) -> str:
    started = api("POST", "/v1/workflows", token, definition)
    assert started.status == 202, started.body
    assert started.body["status"] == "running"
    return str(started.body["runId"])


def wait_run(
    api: Any, token: str, run_id: str, statuses: set[str] = TERMINAL, timeout: float = 60
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        status = api("GET", f"/v1/workflows/{run_id}", token)
        assert status.status == 200, status.body
        if status.body["status"] in statuses:
            return dict(status.body)
        assert time.monotonic() < deadline, status.body
        time.sleep(0.05)


def wait_step(
    api: Any, token: str, run_id: str, label: str, statuses: set[str], timeout: float = 60
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        body = api("GET", f"/v1/workflows/{run_id}", token).body
        found = step_of(body, label)
        if found["status"] in statuses:
            return found
        assert time.monotonic() < deadline, body
        time.sleep(0.05)


def step_of(run: dict[str, Any], label: str) -> dict[str, Any]:
    for stage in run["stages"]:
        for step in stage["steps"]:
            if step["label"] == label:
                return dict(step)
    raise KeyError(label)
