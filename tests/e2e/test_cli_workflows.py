"""Workflows through the `agentworks` CLI, run as a subprocess against the local stack
(W4, W5, W7): the example WORKFLOW.md and the seed's JSON run to the end under `--watch`,
a waiting step is answered with `resolve`, a run is cancelled and retried, and a missing
variable is refused before any work."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_cli_messages import Cli

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
PROFILE = ROOT / "examples" / "claude-code-adapter.yaml"
WORKFLOW_MD = ROOT / "examples" / "workflows" / "WORKFLOW.md"
SEED = ROOT / "examples" / "workflows" / "review-then-fix.json"


@pytest.fixture
def cli(local_stack: object) -> Cli:
    return Cli(local_stack)


@pytest.fixture
def profile(cli: Cli, tmp_path: Path) -> str:
    """The example profile under a name of this test's (the stack may be shared)."""
    name = f"claude-code-{uuid.uuid4().hex[:6]}"
    path = tmp_path / "adapter.yaml"
    path.write_text(PROFILE.read_text().replace("name: claude-code", f"name: {name}"))
    cli.ok("adapters", "create", "--file", str(path))
    return name


def _status(cli: Cli, run_id: str) -> dict[str, Any]:
    return dict(cli.ok("workflow", "status", "--run-id", run_id, "--json").json())


def _until_waiting(cli: Cli, run_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        run = _status(cli, run_id)
        steps = [s for stage in run["stages"] for s in stage["steps"]]
        if any(s["status"] == "waiting" for s in steps):
            return run
        assert time.monotonic() < deadline, run
        time.sleep(0.2)


def test_the_example_workflow_file_and_the_seed_json_run_to_the_end(
    cli: Cli, profile: str, tmp_path: Path
) -> None:
    workflow = tmp_path / "WORKFLOW.md"
    workflow.write_text(WORKFLOW_MD.read_text().replace("claude-code", profile))
    watched = cli(
        "workflow", "run-file", str(workflow), "--input", '{"AREA": "token expiry"}', "--watch"
    )
    assert watched.code == 0, watched
    last = watched.out.strip().splitlines()
    table = "\n".join(last)
    assert ": succeeded, cost $0.0000" in table
    assert "review-auth" in table and "fix-auth" in table and "Found 2 bugs in auth.ts" in table

    seed = tmp_path / "review-then-fix.json"
    seed.write_text(SEED.read_text().replace("claude-code", profile))
    started = cli.ok("workflow", "start", "--file", str(seed), "--json").json()
    assert started["status"] == "running" and started["runId"].startswith("wfrun_")
    ended = cli("workflow", "status", "--run-id", started["runId"], "--watch", "--json")
    assert ended.code == 0, ended
    run = json.loads(ended.out)
    fix = run["stages"][1]["steps"][0]
    assert run["status"] == "succeeded" and fix["label"] == "fix-auth"
    assert "Found 2 bugs in auth.ts." in fix["output"]  # the session's history reached it

    listed = cli.ok("workflow", "list").out
    assert started["runId"] in listed and "review-then-fix" in listed


def test_resolve_cancel_and_retry_from_the_cli(cli: Cli, profile: str, tmp_path: Path) -> None:
    asker = f"asker-{uuid.uuid4().hex[:6]}"
    path = tmp_path / "asker.yaml"
    path.write_text(
        f"name: {asker}\ntype: scripted\nrules:\n"
        '  - when: "Deploy"\n    ask: "Which region?"\n    reply: "Deployed to {answer}."\n'
    )
    cli.ok("adapters", "create", "--file", str(path))
    definition = {
        "workflowId": "deploy",
        "stages": [
            {"steps": [{"label": "go", "adapter": asker, "policy": "escalate",
                        "prompt": "Deploy the service."}]}
        ],
    }  # fmt: skip
    stages = tmp_path / "deploy.json"
    stages.write_text(json.dumps(definition))

    run_id = cli.ok("workflow", "start", "--file", str(stages), "--json").json()["runId"]
    shown = _until_waiting(cli, run_id)
    assert shown["stages"][0]["steps"][0]["question"] == "Which region?"
    human = cli.ok("workflow", "status", "--run-id", run_id).out
    assert "go asks: Which region?" in human and "workflow resolve wfrun_" in human
    cli.ok("workflow", "resolve", "--run-id", run_id, "--step", "go", "--answer", "eu-west-1")
    done = cli("workflow", "status", "--run-id", run_id, "--watch", "--json")
    assert done.code == 0, done
    assert json.loads(done.out)["stages"][0]["steps"][0]["output"] == "Deployed to eu-west-1."

    parked = cli.ok("workflow", "start", "--file", str(stages), "--json").json()["runId"]
    _until_waiting(cli, parked)
    cancelled = cli.ok("workflow", "cancel", "--run-id", parked, "--json").json()
    assert cancelled["status"] == "cancelled"
    watched = cli("workflow", "status", "--run-id", parked, "--watch")
    assert watched.code == 7, watched  # the exit code of a cancelled run
    retried = cli.ok("workflow", "retry", "--run-id", parked).out
    assert f"(a retry of {parked})" in retried
    again = retried.split()[2]
    _until_waiting(cli, again)
    cli.ok("workflow", "cancel", "--run-id", again)


def test_a_missing_variable_is_refused_before_any_work(cli: Cli, profile: str) -> None:
    refused = cli("workflow", "run-file", str(WORKFLOW_MD))
    assert refused.code == 1, refused
    assert "required variable AREA is missing from input" in refused.err
    assert "Traceback" not in refused.err
    bad = cli("workflow", "start", "--file", str(SEED), "--input", "[1]")
    assert bad.code == 2 and "--input is a JSON object" in bad.err


def test_a_registered_workflow_runs_from_a_signed_webhook(
    cli: Cli, profile: str, tmp_path: Path, local_stack: Any
) -> None:
    from agentworks.workflows.webhooks import SIGNATURE_HEADER, signature

    workflow_id = f"hooked-{uuid.uuid4().hex[:6]}"
    path = tmp_path / "WORKFLOW.md"
    path.write_text(
        f"---\nworkflowId: {workflow_id}\ntriggers:\n"
        "  - {kind: webhook, name: push, variables: {AREA: area}}\n"
        "  - {kind: schedule, name: nightly, schedule: 'cron(0 3 * * ? *)'}\n"
        f"---\n## review\n### look\n```yaml\nadapter: {profile}\n```\n"
        "Review auth.ts ({{AREA}})\n"
    )
    registered = cli.ok("workflow", "register", str(path)).out
    assert f"registered {workflow_id} (version 1)" in registered
    assert "secret (shown once; sign with it):" in registered and "next run" in registered
    shown = cli.ok("workflow", "registered", workflow_id, "--json").json()
    hook = next(t for t in shown["triggers"] if t["kind"] == "webhook")
    secret = next(
        line.split(": ", 1)[1] for line in registered.splitlines() if "secret (shown once" in line
    )
    body = json.dumps({"area": "sessions"}).encode()
    headers = {SIGNATURE_HEADER: signature(secret, int(time.time()), body)}
    status, answer = _post(local_stack.url + hook["path"], body, headers)
    assert status == 202, answer
    ended = cli("workflow", "status", answer["runId"], "--watch", "--json")
    assert ended.code == 0, ended
    status, refused = _post(local_stack.url + hook["path"], body, {})
    assert status == 401 and refused["error"]["code"] == "unauthenticated"
    assert workflow_id in cli.ok("workflow", "registered").out

    # Unregistered: its webhook and schedule are gone with it (issue 29).
    gone = cli.ok("workflow", "unregister", workflow_id).out
    assert gone.startswith(f"unregistered {workflow_id}")
    assert workflow_id not in cli.ok("workflow", "registered").out
    assert cli("workflow", "registered", workflow_id).code == 4
    # The same signed call that started a run is refused: the trigger is gone (an unknown
    # trigger is refused like a bad signature, so as not to say which exist).
    status, _ = _post(local_stack.url + hook["path"], body, headers)
    assert status == 401


def _post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, Any]:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, data=body, method="POST", headers=headers)
    request.add_header("Content-Type", "application/json")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())
