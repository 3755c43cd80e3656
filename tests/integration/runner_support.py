"""Helpers for cli steps and their runners (issue 10 item 6): profiles, a runner connection,
the bridge's Runner against the real API handlers, with the stand-in CLIs on its PATH."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from agentworks_cli.bridge.runner import Runner, RunnerSettings
from tests.integration.bridge_support import StackServer
from tests.support import agent_clis

CLAUDE = {
    "name": "claude-code",
    "type": "cli",
    "command": "claude",
    "model": "sonnet",
    "args": ["--permission-mode", "acceptEdits"],
}
CODEX = {"name": "codex", "type": "cli", "command": "codex", "args": ["--sandbox", "read-only"]}
RUNNER_SCOPES = ["workflows:runner"]


def runner_token(agents: Any, name: str = "laptop", **body: Any) -> str:
    """A connection that may run cli steps (the person's bridge login would have it)."""
    body = {"name": name, "scopes": RUNNER_SCOPES, **body}
    made = agents.api("POST", "/v1/connections", agents.stack.admin_token, body)
    assert made.status == 201, made.body
    return str(made.body["token"])


class Bench:
    """A folder with the stand-in CLIs and a workdir; runners made there share them."""

    def __init__(self, root: Path) -> None:
        self.log = root / "cli-runs.jsonl"
        self.environ = agent_clis.install(root / "bin", self.log)
        self.workdir = root / "project"
        self.workdir.mkdir(parents=True, exist_ok=True)

    def runner(self, api: Any, token: str, runner_id: str = "r-laptop", name: str = "laptop"):
        settings = RunnerSettings(True, runner_id, str(self.workdir), name, poll_seconds=0.05)
        return Runner(StackServer(api, token), settings, environ=self.environ)

    def runs(self) -> list[dict[str, Any]]:
        return agent_clis.runs(self.log)


def drive(api: Any, token: str, run_id: str, *runners: Runner, timeout: float = 60) -> dict:
    """Lets the runners claim and run jobs until the run ends; the run's last status."""
    deadline = time.monotonic() + timeout
    while True:
        status = api("GET", f"/v1/workflows/{run_id}", token)
        assert status.status == 200, status.body
        if status.body["status"] in ("succeeded", "failed", "cancelled"):
            return dict(status.body)
        assert time.monotonic() < deadline, status.body
        if not any([runner.run_once() for runner in runners]):
            time.sleep(0.05)


def wait_claim(server: StackServer, body: dict[str, Any], timeout: float = 30) -> dict[str, Any]:
    """Claims until a job is there (the state machine hands it out a moment after start)."""
    deadline = time.monotonic() + timeout
    while True:
        job = server.claim(body)["job"]
        if job:
            return dict(job)
        assert time.monotonic() < deadline, "no job was handed out"
        time.sleep(0.05)


def wait_queued(stack: Any, count: int, timeout: float = 30) -> None:
    """Until the account holds `count` queued jobs (the store's own view: the claims a test
    makes next then prove what a runner may not take, not a job handed out late)."""
    from agentworks.runners.job_store import RunnerJobStore

    store = RunnerJobStore(stack.client, stack.settings.work_table)
    account = stack.principal(stack.admin_token).account_id
    deadline = time.monotonic() + timeout
    while len(store.queued(account, 100)) != count:
        assert time.monotonic() < deadline, f"not {count} queued jobs"
        time.sleep(0.05)


def queued_job_ids(stack: Any, count: int) -> list[str]:
    """The ids of the account's queued jobs, once there are `count` of them."""
    from agentworks.runners.job_store import RunnerJobStore

    wait_queued(stack, count)
    store = RunnerJobStore(stack.client, stack.settings.work_table)
    account = stack.principal(stack.admin_token).account_id
    return [entry.job_id for entry in store.queued(account, 100)]
