"""Issue 10 item 6 end to end: `agentworks bridge run --runner` as its own process against
`agentworks dev`, with stand-in `claude` first on its PATH (never the real CLI). A workflow
whose steps name a `cli` profile runs its turns on this computer — the second step resuming
the first's session — a failing CLI fails its step with the CLI's error, `bridge status` and
`agents` say the bridge is a runner, and stopping the bridge mid-session fails that step at
once (it is never started again on its own)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agentworks_cli.bridge.local_socket import ask
from tests.e2e.api_helpers import api
from tests.e2e.conftest import LocalStack
from tests.support import agent_clis

pytestmark = pytest.mark.e2e

AGENTWORKS = Path(sys.executable).with_name("agentworks")
PROFILE = {"name": "claude-code", "type": "cli", "command": "claude", "model": "sonnet"}


class RunnerBridge:
    def __init__(self, local_stack: LocalStack, root: Path) -> None:
        self.home, self.workdir, self.log = root / "bridge", root / "project", root / "runs.jsonl"
        self.workdir.mkdir(parents=True)
        self.env = {
            **agent_clis.install(root / "bin", self.log),
            "AGENTWORKS_BRIDGE_HOME": str(self.home),
        }
        self.config = local_stack.admin_config  # bootstrap admin: every scope
        self.process: subprocess.Popen[bytes] | None = None

    def cli(self, *words: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(AGENTWORKS), "--config", str(self.config), *words],
            capture_output=True, text=True, env=self.env, timeout=60,
        )  # fmt: skip

    def start(self) -> None:
        log = (self.home.parent / "bridge-run.log").open("ab")
        self.process = subprocess.Popen(
            [str(AGENTWORKS), "--config", str(self.config), "bridge", "run", "--runner",
             "--runner-dir", str(self.workdir), "--runner-name", "e2e-box",
             "--runner-poll", "1"],
            env=self.env, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while self.status() is None:
            assert self.process.poll() is None, "the bridge exited"
            assert time.monotonic() < deadline, "the bridge did not start"
            time.sleep(0.1)

    def status(self) -> dict[str, Any] | None:
        return ask(self.home / "bridge.sock", {"op": "status"}, timeout=1)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(30)


@pytest.fixture
def bridge(local_stack: LocalStack, tmp_path: Path) -> Any:
    run = RunnerBridge(local_stack, tmp_path)
    status, body, _ = api(local_stack, "POST", "/v1/adapters", local_stack.admin_token, PROFILE)
    assert status in (201, 409), body  # one profile for the module's stack
    run.start()
    try:
        yield run
    finally:
        run.stop()


def _start(local_stack: LocalStack, definition: dict[str, Any]) -> str:
    status, started, _ = api(
        local_stack, "POST", "/v1/workflows", local_stack.admin_token, definition
    )
    assert status == 202, started
    return str(started["runId"])


def _until(local_stack: LocalStack, run_id: str, done: Any, timeout: float = 90) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        status, run, _ = api(local_stack, "GET", f"/v1/workflows/{run_id}", local_stack.admin_token)
        assert status == 200, run
        if done(run):
            return dict(run)
        assert time.monotonic() < deadline, run
        time.sleep(0.2)


def _ended(run: dict[str, Any]) -> bool:
    return run["status"] in ("succeeded", "failed", "cancelled")


def _steps(run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["label"]: s for stage in run["stages"] for s in stage["steps"]}


def test_the_bridge_runs_cli_steps_resumes_their_session_and_says_it_is_a_runner(
    local_stack: LocalStack, bridge: RunnerBridge
) -> None:
    flow = {
        "workflowId": "review-then-fix",
        "stages": [
            {"steps": [{"label": "review", "adapter": "claude-code", "prompt": "Review auth.ts"}]},
            {"steps": [{"label": "fix", "sessionRef": "review", "prompt": "Fix it"}]},
        ],
    }
    run = _until(local_stack, _start(local_stack, flow), _ended)
    assert run["status"] == "succeeded", run
    review, fix = _steps(run)["review"], _steps(run)["fix"]
    assert review["output"] == "claude answered: Review auth.ts"
    assert review["sessionId"] == fix["sessionId"] and review["runner"] == "e2e-box"
    first, second = agent_clis.runs(bridge.log)
    assert first["argv"][:6] == ["-p", "--output-format", "json", "--model", "sonnet", "--"]
    assert second["argv"][-4:] == ["--resume", review["sessionId"], "--", "Fix it"]
    assert first["cwd"] == str(bridge.workdir)

    failing = {"workflowId": "failing", "stages": [{"steps": [
        {"label": "only", "adapter": "claude-code", "prompt": "FAIL on purpose"}]}]}  # fmt: skip
    failed = _until(local_stack, _start(local_stack, failing), _ended)
    assert failed["status"] == "failed"
    assert _steps(failed)["only"]["error"].endswith(
        "claude: Stand-in failure: the prompt asked for it"
    )

    for words in (("bridge", "status"), ("agents",)):
        shown = bridge.cli(*words)
        assert shown.returncode == 0, shown.stderr
        assert f"runner: on as e2e-box in {bridge.workdir}" in shown.stdout
        assert "idle; 3 turns run" in shown.stdout
    settings = bridge.home / "runner.json"
    assert settings.exists() and (settings.stat().st_mode & 0o777) == 0o600


def test_stopping_the_bridge_mid_session_fails_that_step_at_once(
    local_stack: LocalStack, bridge: RunnerBridge
) -> None:
    step = {"label": "only", "adapter": "claude-code", "prompt": "SLEEP 60 then answer"}
    slow = {"workflowId": "slow", "stages": [{"steps": [step]}]}
    run_id = _start(local_stack, slow)
    deadline = time.monotonic() + 60
    while ((bridge.status() or {}).get("runner") or {}).get("state") != "running":
        assert time.monotonic() < deadline, bridge.status()
        time.sleep(0.2)
    bridge.stop()
    run = _until(local_stack, run_id, _ended, timeout=30)
    assert run["status"] == "failed"
    assert "the runner's bridge stopped during the session" in _steps(run)["only"]["error"]
    # The bridge's own report, not the lapse of its 2-minute claim (which says otherwise).
    assert bridge.process is not None and bridge.process.returncode == 0
    (slept,) = agent_clis.runs(bridge.log)
    assert not _alive(slept["pid"])  # the CLI was stopped with its bridge


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
