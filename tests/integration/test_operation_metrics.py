"""Issue 12: the metrics the alarms and the dashboard read are counted where the thing
happens, once: calls and workflow runs ended by outcome, push notices that failed to post,
webhooks that failed every attempt (tests/infrastructure/test_operations.py checks the
template names only these)."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from agentworks import observability
from agentworks.crews import outcomes
from agentworks.workflows import run_ends, runs
from agentworks.workflows.webhooks import Webhooks
from tests.integration.crew_support import CONTRACTS, wait_for
from tests.integration.test_push_listeners import Stream, _connect
from tests.integration.workflow_support import (
    CLAUDE_CODE,
    TIMED,
    define,
    start,
    wait_run,
    wait_step,
)
from tests.support import workflow_agents
from tests.support.clock import FakeClock

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "workflows"


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    seen: Counter[str] = Counter()

    def add_metric(name: str, unit: Any, value: float, **_: Any) -> None:
        seen[name] += int(value)

    def count_outcome(name: str, outcome: str) -> None:
        seen[f"{name}/{outcome}"] += 1

    monkeypatch.setattr(observability.metrics, "add_metric", add_metric)
    for module in (outcomes, run_ends, runs):
        monkeypatch.setattr(module, "count_outcome", count_outcome)
    return seen


def test_a_call_that_ends_is_counted_once_by_outcome(api, stack, agents, counted):
    assert api("POST", "/v1/crews", stack.admin_token, CONTRACTS).status == 201
    caller = agents.connection("caller")["token"]
    body = {"target": "crew:contracts", "function": "summarize", "args": {"text": "x"}}
    accepted = api("POST", "/v1/calls", caller, body)
    assert accepted.status == 202, accepted.body
    done = wait_for(api, caller, accepted.body["call_id"], {"succeeded", "failed", "interrupted"})
    assert done["state"] == "succeeded"
    # The step runner counts right after it records the end: the API can see the end first.
    until = time.monotonic() + 10
    while counted["FunctionCallsEnded/succeeded"] == 0 and time.monotonic() < until:
        time.sleep(0.02)
    ends = {k: v for k, v in counted.items() if k.startswith("FunctionCallsEnded/") and v}
    assert ends == {"FunctionCallsEnded/succeeded": 1}
    assert counted["FunctionCallsAccepted"] == 1


def _plotted(label: str) -> str:
    """The metric the dashboard's widget labelled `label` plots (template.yaml)."""
    [widget] = [line for line in (Path(__file__).resolve().parents[2] / "template.yaml")
                .read_text().splitlines() if f'"label": "{label}"' in line]  # fmt: skip
    return str(json.loads(widget.strip().rstrip(","))[1])


def test_a_refused_authentication_is_counted_under_the_dashboards_name(api, stack, counted):
    """The dashboard's "authentication refused" widget plots this metric: a refused token
    counts once, an accepted one not at all."""
    plotted = _plotted("authentication refused")
    assert api("GET", "/v1/whoami", "aw_not_a_token").status == 401
    assert api("GET", "/v1/whoami", stack.admin_token).status == 200
    assert counted[plotted] == 1 and plotted == "AuthenticationRefused"


def test_a_stored_send_counts_once_and_its_replay_not_again(api, agents, counted):
    """The dashboard's "sent" line: each message stored counts one, a send replayed from
    its submission_id none (nothing new was stored)."""
    plotted = _plotted("sent")
    worker, _reviewer = agents.named("worker"), agents.named("reviewer")
    body = {"target": "agent:reviewer", "message": "hi", "submission_id": "once"}
    assert api("POST", "/v1/messages", worker, body).status == 201
    assert counted[plotted] == 1 and plotted == "MessagesSent"
    replayed = api("POST", "/v1/messages", worker, body)
    assert replayed.status == 200 and replayed.body["replayed"] is True
    inbox = replayed.body["inbox_id"]
    again = {"inbox_id": inbox, "message": "again"}
    assert api("POST", "/v1/messages", worker, again).status == 201
    assert counted[plotted] == 2


def test_workflow_runs_are_counted_when_they_end_and_when_they_are_cancelled(api, stack, counted):
    define(api, stack.admin_token, CLAUDE_CODE, TIMED)
    seed = json.loads((EXAMPLES / "review-then-fix.json").read_text())
    run_id = start(api, stack.admin_token, seed)
    assert wait_run(api, stack.admin_token, run_id)["status"] == "succeeded"
    # The runner counts right after it records the end: the API can see the end first.
    until = time.monotonic() + 10
    while counted["WorkflowRunsEnded/succeeded"] == 0 and time.monotonic() < until:
        time.sleep(0.02)
    assert counted["WorkflowRunsEnded/succeeded"] == 1

    workflow_agents.reset()
    step = {"label": "wait", "adapter": "timed", "policy": "escalate", "prompt": "Hold. ask: go"}
    waiting = start(api, stack.admin_token, {"workflowId": "long", "stages": [{"steps": [step]}]})
    wait_step(api, stack.admin_token, waiting, "wait", {"waiting"})
    assert api("POST", f"/v1/workflows/{waiting}/cancel", stack.admin_token).status == 200
    assert counted["WorkflowRunsEnded/cancelled"] == 1
    assert api("POST", f"/v1/workflows/{waiting}/cancel", stack.admin_token).status == 409
    ends = {k: v for k, v in counted.items() if k.startswith("WorkflowRunsEnded/")}
    assert ends == {"WorkflowRunsEnded/succeeded": 1, "WorkflowRunsEnded/cancelled": 1}


def test_a_notice_that_fails_to_post_is_counted_and_fails_the_batch(
    api, agents, stack, counted, monkeypatch
):
    from agentworks.push.channel import ManagementApiChannel

    reader = agents.named("reader")
    stream = Stream(stack)
    assert _connect(reader, agent_name="reader")[1] == 200

    def refuse(self: Any, ws_id: str, data: bytes) -> bool:
        raise RuntimeError("API Gateway answered 500")

    monkeypatch.setattr(ManagementApiChannel, "post", refuse)
    sender = agents.connection("sender")["token"]
    assert api("POST", "/v1/messages", sender, {"target": "agent:reader", "message": "hi"}).status
    with pytest.raises(RuntimeError):  # Lambda retries the batch, then keeps its record
        stream.deliver()
    assert counted["PushNoticesFailed"] == 1


def test_a_webhook_that_fails_every_attempt_is_counted_once(counted, allow_loopback_webhooks):
    note = Webhooks(FakeClock(start=1_800_000_000.0)).send(
        "http://127.0.0.1:9/hook", "key", "completed", {"runId": "r"}
    )
    assert not note.delivered and note.attempts > 1
    assert counted["WebhookDeliveriesFailed"] == 1
