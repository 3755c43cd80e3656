"""Pipelines (W12): N items through K stages with no barrier across items — each item
flows through the stages on its own, so a slow item never holds another's next stage, and
a failed item fails only itself (the run reports it)."""

from __future__ import annotations

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
    run_id = start(api, stack.admin_token, _pipeline(["slow: sleep 0.8", "quick"]))
    run = wait_run(api, stack.admin_token, run_id)
    assert run["status"] == "succeeded", run
    slow = workflow_agents.turns_for("Draft slow")[0]
    quick_check = workflow_agents.turns_for("Check quick")[0]
    assert quick_check.ended < slow.ended, "the quick item's stage 2 ran during the slow draft"
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
