"""Pipelines (W12): N items through K stages with no barrier across items — each item
flows through the stages on its own, so a slow item never holds another's next stage, and
a failed item fails only itself (the run reports it)."""

from __future__ import annotations

import time
from typing import Any

from tests.integration.workflow_support import TIMED, define, start, wait_run
from tests.support import workflow_agents


def _pipeline(items: list[Any]) -> dict[str, Any]:
    return {
        "workflowId": "pipe",
        "items": items,
        "stages": [
            {"label": "draft", "steps": [
                {"label": "write", "adapter": "timed", "prompt": "Draft {{ITEM}}"}]},
            {"label": "check", "steps": [
                {"label": "review", "sessionRef": "write", "prompt": "Check {{ITEM}}"}]},
        ],
    }  # fmt: skip


def _item_step(run: dict[str, Any], item: int, label: str) -> dict[str, Any]:
    for stage in run["items"][item]["stages"]:
        for step in stage["steps"]:
            if step["label"] == label:
                return dict(step)
    raise KeyError(label)


def test_an_item_never_waits_for_another_items_stage(api, stack) -> None:
    workflow_agents.reset()
    define(api, stack.admin_token, TIMED)
    # The slow item's draft lasts until the quick item's stage 2 has begun.
    run_id = start(api, stack.admin_token, _pipeline(["slow: await Check", "quick"]))
    run = wait_run(api, stack.admin_token, run_id)
    assert run["status"] == "succeeded", run
    slow = workflow_agents.turns_for("Draft slow")[0]
    quick_check = workflow_agents.turns_for("Check quick")[0]
    assert quick_check.began < slow.ended, "the quick item's stage 2 ran during the slow draft"
    assert [i["status"] for i in run["items"]] == ["succeeded", "succeeded"]
    assert run["stages"] == []  # a pipeline's steps are per item
    review = _item_step(run, 1, "review")
    assert "history: Draft quick" in review["output"]  # its own item's session
    assert "slow" not in review["output"]


def test_a_failed_item_fails_only_itself(api, stack) -> None:
    workflow_agents.reset()
    define(api, stack.admin_token, TIMED)
    run_id = start(api, stack.admin_token, _pipeline(["explode", {"ITEM": "fine"}]))
    run = wait_run(api, stack.admin_token, run_id)
    assert run["status"] == "failed"
    assert [i["status"] for i in run["items"]] == ["failed", "succeeded"]
    assert _item_step(run, 0, "review")["status"] == "pending"
    assert _item_step(run, 1, "review")["status"] == "succeeded"
    assert run["error"].startswith("item 0: step write failed")


def test_each_items_waiting_step_is_answered_on_its_own(api, stack) -> None:
    define(api, stack.admin_token, TIMED)
    token = stack.admin_token
    asking = {
        "workflowId": "pipe-ask",
        "items": ["a", "b"],
        "stages": [{"steps": [{"label": "go", "adapter": "timed", "policy": "escalate",
                               "prompt": "Do {{ITEM}}. ask: ready"}]}],
    }  # fmt: skip
    run_id = start(api, token, asking)
    deadline = time.monotonic() + 30
    while True:
        run = api("GET", f"/v1/workflows/{run_id}", token).body
        if all(_item_step(run, i, "go")["status"] == "waiting" for i in (0, 1)):
            break
        assert time.monotonic() < deadline, run
        time.sleep(0.05)
    resolve = f"/v1/workflows/{run_id}/resolve"
    assert api("POST", resolve, token, {"step": "go", "answer": "B!", "item": 1}).status == 200
    assert api("POST", resolve, token, {"step": "go", "answer": "B!", "item": 1}).status == 409
    assert api("POST", resolve, token, {"step": "go", "answer": "A!", "item": 0}).status == 200
    run = wait_run(api, token, run_id)
    assert "answer: A!" in _item_step(run, 0, "go")["output"]
    assert "answer: B!" in _item_step(run, 1, "go")["output"]
