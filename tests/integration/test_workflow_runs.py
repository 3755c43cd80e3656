"""Workflow runs on the real state machine (W1–W3): stages in order with a barrier, steps
in parallel, sessions reused by sessionRef, the seed's examples as they are."""

from __future__ import annotations

import json
from pathlib import Path

from tests.integration.workflow_support import CLAUDE_CODE, TIMED, define, start, step_of, wait_run
from tests.support import workflow_agents

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "workflows"


def test_the_seed_review_then_fix_runs_and_the_fixer_sees_the_review(api, stack) -> None:
    define(api, stack.admin_token, CLAUDE_CODE)
    seed = json.loads((EXAMPLES / "review-then-fix.json").read_text())
    run_id = start(api, stack.admin_token, seed)
    run = wait_run(api, stack.admin_token, run_id)
    assert run["status"] == "succeeded", json.dumps(run, indent=1)
    assert [s["label"] for s in run["stages"]] == ["review", "fix"]
    review = step_of(run, "review-auth")
    fix = step_of(run, "fix-auth")
    assert review["output"] == "Found 2 bugs in auth.ts."
    assert step_of(run, "review-db")["output"] == "Found 2 bugs in db.ts."
    # W2: the fixer continues the reviewer's session and its adapter got that history.
    assert fix["sessionId"] == review["sessionId"] != step_of(run, "review-db")["sessionId"]
    assert "user: Review auth.ts for bugs." in fix["output"]
    assert "assistant: Found 2 bugs in auth.ts." in fix["output"]
    assert "db.ts" not in fix["output"]
    session = api("GET", f"/v1/workflows/{run_id}/sessions/{fix['sessionId']}", stack.admin_token)
    assert session.status == 200, session.body
    assert [(t["step"], t["role"]) for t in session.body["turns"]] == [
        ("review-auth", "user"),
        ("review-auth", "assistant"),
        ("fix-auth", "user"),
        ("fix-auth", "assistant"),
    ]


def test_a_stage_waits_for_every_step_of_the_one_before(api, stack) -> None:
    workflow_agents.reset()
    define(api, stack.admin_token, TIMED)
    run_id = start(
        api,
        stack.admin_token,
        {
            "workflowId": "barrier",
            "stages": [
                {
                    "steps": [
                        # `one` runs until `two` has begun: only parallel steps finish.
                        {"label": "slow", "adapter": "timed", "prompt": "one: await two"},
                        {"label": "quick", "adapter": "timed", "prompt": "two"},
                    ]
                },
                {"steps": [{"label": "after", "adapter": "timed", "prompt": "three"}]},
            ],
        },
    )
    run = wait_run(api, stack.admin_token, run_id)
    assert run["status"] == "succeeded", json.dumps(run, indent=1)
    slow, quick = workflow_agents.turns_for("one")[0], workflow_agents.turns_for("two")[0]
    after = workflow_agents.turns_for("three")[0]
    assert quick.began < slow.ended, "a stage's steps run in parallel"
    # Causal, not timed: `after` is recorded beginning only once both turns were recorded.
    assert after.began >= slow.ended and after.began >= quick.ended, "the barrier holds"


def test_the_seed_nightly_audit_runs_and_replays_from_its_cache(api, stack) -> None:
    define(api, stack.admin_token, CLAUDE_CODE)
    seed = json.loads((EXAMPLES / "nightly-audit.json").read_text())
    first = wait_run(api, stack.admin_token, start(api, stack.admin_token, seed))
    assert first["status"] == "succeeded", first
    again = wait_run(api, stack.admin_token, start(api, stack.admin_token, seed))
    scan = step_of(again, "scan")
    assert scan["replayed"] is True and scan["output"] == step_of(first, "scan")["output"]


def test_the_run_list_pages_from_the_newest_back(api, stack, monkeypatch) -> None:
    """`GET /v1/workflows` answers WORKFLOW_RUNS_LISTED runs a page, newest first, and
    `nextBefore` asks for the older ones until none are left."""
    from agentworks import limits

    define(api, stack.admin_token, CLAUDE_CODE, TIMED)
    seed = json.loads((EXAMPLES / "review-then-fix.json").read_text())
    started = [start(api, stack.admin_token, seed) for _ in range(3)]
    monkeypatch.setattr(limits, "WORKFLOW_RUNS_LISTED", 2)
    first = api("GET", "/v1/workflows", stack.admin_token).body
    assert [r["runId"] for r in first["runs"]] == started[::-1][:2]
    assert first["nextBefore"] == started[1]
    older = api("GET", "/v1/workflows", stack.admin_token, query={"before": first["nextBefore"]})
    assert [r["runId"] for r in older.body["runs"]] == [started[0]]
    assert older.body["nextBefore"] is None
    too_long = api("GET", "/v1/workflows", stack.admin_token, query={"before": "r" * 65})
    assert too_long.status == 400
