"""Work a run does not redo (W6, W7): the resume cache replays an unchanged cacheable step
with no session and no cost; a retry replays what the original completed and re-runs from
the first step that never succeeded, and an input override re-runs exactly the steps whose
resolved input changes, directly or through the session they continue."""

from __future__ import annotations

from typing import Any

from tests.integration.workflow_support import (
    TIMED,
    define,
    start,
    step_of,
    wait_run,
    wait_step,
)
from tests.support import workflow_agents


def _audit(since: str) -> dict[str, Any]:
    return {
        "workflowId": "nightly-audit",
        "cacheKey": "nightly-audit",
        "input": {"SINCE": since},
        "stages": [
            {
                "steps": [
                    {
                        "label": "scan",
                        "adapter": "timed",
                        "prompt": "Summarize the changelog since {{SINCE}}. cost 0.25",
                        "cacheable": True,
                    },
                    {"label": "post", "adapter": "timed", "prompt": "Post it since {{SINCE}}"},
                ]
            },
            {"steps": [{"label": "check", "sessionRef": "scan", "prompt": "Check the summary"}]},
        ],
    }


def test_an_unchanged_cacheable_step_replays_and_a_changed_one_runs(api, stack) -> None:
    workflow_agents.reset()
    define(api, stack.admin_token, TIMED)
    first = wait_run(api, stack.admin_token, start(api, stack.admin_token, _audit("v1.0")))
    assert first["status"] == "succeeded", first
    assert first["cost"] == 0.25

    again = wait_run(api, stack.admin_token, start(api, stack.admin_token, _audit("v1.0")))
    assert again["status"] == "succeeded", again
    scan = step_of(again, "scan")
    assert scan["replayed"] is True and scan["cost"] == 0
    assert scan["output"] == step_of(first, "scan")["output"]
    # A session of this run's own holds the journaled turns: what `check` continues.
    session = api(
        "GET", f"/v1/workflows/{again['runId']}/sessions/{scan['sessionId']}", stack.admin_token
    )
    assert session.status == 200 and scan["sessionId"].startswith("sess_"), session.body
    assert session.body["turns"][0]["content"].startswith("Summarize the changelog since v1.0")
    assert len(workflow_agents.turns_for("Summarize the changelog since v1.0")) == 1
    assert step_of(again, "post")["replayed"] is False  # not cacheable: it runs every time
    assert len(workflow_agents.turns_for("Post it since v1.0")) == 2
    # The step that continues the replayed session gets its journaled history.
    check = step_of(again, "check")
    assert "Summarize the changelog since v1.0" in check["output"]
    assert again["cost"] == 0

    changed = wait_run(api, stack.admin_token, start(api, stack.admin_token, _audit("v2.0")))
    assert step_of(changed, "scan")["replayed"] is False
    assert len(workflow_agents.turns_for("Summarize the changelog since v2.0")) == 1


def _build(x: str, y: str, z: str) -> dict[str, Any]:
    return {
        "workflowId": "build",
        "input": {"X": x, "Y": y, "Z": z},
        "stages": [
            {
                "steps": [
                    {"label": "a", "adapter": "timed", "prompt": "Alpha {{X}}"},
                    {"label": "b", "adapter": "timed", "prompt": "Beta {{Y}}"},
                ]
            },
            {
                "steps": [
                    {"label": "c", "sessionRef": "a", "prompt": "Gamma"},
                    {"label": "d", "sessionRef": "b", "prompt": "Delta {{Z}}"},
                ]
            },
        ],
    }


def _replayed(run: dict[str, Any]) -> dict[str, bool]:
    return {s["label"]: s["replayed"] for stage in run["stages"] for s in stage["steps"]}


def test_retry_replays_completed_steps_and_reruns_what_changed(api, stack) -> None:
    workflow_agents.reset()
    define(api, stack.admin_token, TIMED)
    token = stack.admin_token
    original_id = start(api, token, _build("1", "1", "explode"))
    original = wait_run(api, token, original_id)
    assert original["status"] == "failed"
    assert step_of(original, "d")["error"] == "exploded as asked"
    assert step_of(original, "c")["status"] == "succeeded"  # a sibling ends on its own

    # No override: everything that succeeded replays; d (never succeeded) runs again.
    plain = api("POST", f"/v1/workflows/{original_id}/retry", token, {})
    assert plain.status == 202 and plain.body["retryOf"] == original_id, plain.body
    rerun = wait_run(api, token, plain.body["runId"])
    assert _replayed(rerun) == {"a": True, "b": True, "c": True, "d": False}
    assert rerun["retryOf"] == original_id and rerun["status"] == "failed"

    # Y changes b and, through b's session, d; a and c are untouched and replay.
    turns_before = len(workflow_agents.TURNS)
    fixed = api(
        "POST", f"/v1/workflows/{original_id}/retry", token, {"input": {"Y": "2", "Z": "ok"}}
    )
    assert fixed.status == 202, fixed.body
    run = wait_run(api, token, fixed.body["runId"])
    assert run["status"] == "succeeded", run
    assert _replayed(run) == {"a": True, "b": False, "c": True, "d": False}
    ran = [t.prompt for t in workflow_agents.TURNS[turns_before:]]
    assert sorted(ran) == ["Beta 2", "Delta ok"]

    refused = api("POST", f"/v1/workflows/{fixed.body['runId']}/retry", token, {})
    assert refused.status == 409 and "succeeded" in refused.body["error"]["message"]


def test_a_running_run_cannot_be_retried(api, stack) -> None:
    define(api, stack.admin_token, TIMED)
    token = stack.admin_token
    step = {"label": "s", "adapter": "timed", "policy": "escalate", "prompt": "Wait. ask: go"}
    run_id = start(api, token, {"workflowId": "w", "stages": [{"steps": [step]}]})
    wait_step(api, token, run_id, "s", {"waiting"})
    refused = api("POST", f"/v1/workflows/{run_id}/retry", token, {})
    assert refused.status == 409 and "running" in refused.body["error"]["message"]
    assert api("POST", f"/v1/workflows/{run_id}/cancel", token).status == 200


def test_a_cached_step_replays_for_workflow_cache_seconds_then_runs_again(api, stack) -> None:
    """W6: a resume-cache entry lives WORKFLOW_CACHE_SECONDS from when its step succeeded:
    replayed up to its last second, run again from then on."""
    from agentworks import limits

    workflow_agents.reset()
    define(api, stack.admin_token, TIMED)
    first = wait_run(api, stack.admin_token, start(api, stack.admin_token, _audit("v1.0")))
    assert first["status"] == "succeeded", first
    stack.clock.advance(limits.WORKFLOW_CACHE_SECONDS - 1)
    again = wait_run(api, stack.admin_token, start(api, stack.admin_token, _audit("v1.0")))
    assert step_of(again, "scan")["replayed"] is True
    stack.clock.advance(1)
    later = wait_run(api, stack.admin_token, start(api, stack.admin_token, _audit("v1.0")))
    assert step_of(later, "scan")["replayed"] is False
    assert len(workflow_agents.turns_for("Summarize the changelog since v1.0")) == 2
