"""The rules around a run (W1, W4, W8, W9): a failed step fails its stage once its
siblings end and nothing later runs; the budget stops the next spawn past it; an output
schema re-prompts once; bad starts are refused before any work; cancel stops a running
run; another account or connection cannot see, cancel, resolve or retry it."""

from __future__ import annotations

import json
from typing import Any

from agentworks import limits
from tests.integration.workflow_support import (
    CLAUDE_CODE,
    TIMED,
    define,
    start,
    step_of,
    wait_run,
    wait_step,
)
from tests.support import workflow_agents


def _one_stage(*steps: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"workflowId": "rules", "stages": [{"steps": list(steps)}], **extra}


def _executions(stack: Any) -> int:
    sfn = stack.services.workflows.runs._executions.client
    arn = stack.settings.workflow_state_machine_arn
    return len(sfn.list_executions(stateMachineArn=arn)["executions"])


def test_a_failed_step_fails_its_stage_after_its_siblings_and_nothing_later_runs(
    api, stack
) -> None:
    workflow_agents.reset()
    define(api, stack.admin_token, TIMED)
    run_id = start(
        api,
        stack.admin_token,
        {
            "workflowId": "fails",
            "stages": [
                {
                    "steps": [
                        {"label": "breaks", "adapter": "timed", "prompt": "explode: breaker"},
                        # Still running when its sibling fails: it ends only after that.
                        {"label": "slow", "adapter": "timed", "prompt": "slow one: after breaker"},
                    ]
                },
                {"steps": [{"label": "later", "adapter": "timed", "prompt": "never this"}]},
            ],
        },
    )
    run = wait_run(api, stack.admin_token, run_id)
    assert run["status"] == "failed"
    assert run["error"] == "step breaks failed: exploded as asked"
    assert step_of(run, "slow")["status"] == "succeeded"  # its sibling ran to its end
    assert step_of(run, "slow")["endedAt"] >= step_of(run, "breaks")["endedAt"]
    assert step_of(run, "later")["status"] == "pending"
    assert workflow_agents.turns_for("never this") == []
    assert [s["status"] for s in run["stages"]] == ["failed", "pending"]


def _three_steps_under_a_budget_of_1(api, stack, cost_each: float) -> dict[str, Any]:
    """A run of three one-step stages, each step costing `cost_each`, capped at $1."""
    workflow_agents.reset()
    define(api, stack.admin_token, TIMED)
    stages = [
        {"steps": [{"label": label, "adapter": "timed", "prompt": f"{nth} cost {cost_each}"}]}
        for label, nth in zip("abc", ("first", "second", "third"), strict=True)
    ]
    budget = {"workflowId": "budget", "maxTotalCostUsd": 1, "stages": stages}
    return wait_run(api, stack.admin_token, start(api, stack.admin_token, budget))


def test_the_budget_fails_the_next_spawn_past_it(api, stack) -> None:
    run = _three_steps_under_a_budget_of_1(api, stack, 0.6)
    assert run["status"] == "failed"
    assert [step_of(run, x)["status"] for x in "abc"] == ["succeeded", "succeeded", "failed"]
    assert step_of(run, "c")["error"].startswith("budget_exceeded: the run's steps cost $1.2000")
    assert workflow_agents.turns_for("third") == []  # nothing was spawned past the cap
    assert run["cost"] == 1.2


def test_a_run_that_spent_exactly_its_budget_spawns_nothing_more(api, stack) -> None:
    """maxTotalCostUsd is what the steps may cost in all: at the cap, not only past it, the
    next step is refused."""
    run = _three_steps_under_a_budget_of_1(api, stack, 0.5)
    assert [step_of(run, x)["status"] for x in "abc"] == ["succeeded", "succeeded", "failed"]
    assert step_of(run, "c")["error"] == (
        "budget_exceeded: the run's steps cost $1.0000 of maxTotalCostUsd $1.0000"
    )
    assert workflow_agents.turns_for("third") == [] and run["cost"] == 1.0


def test_an_output_schema_is_checked_and_re_prompted_once(api, stack) -> None:
    workflow_agents.reset()
    define(api, stack.admin_token, TIMED)
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    run_id = start(
        api,
        stack.admin_token,
        _one_stage(
            {"label": "fixed", "adapter": "timed", "prompt": "fixable count",
             "outputSchema": schema},
            {"label": "stuck", "adapter": "timed", "prompt": "hopeless count",
             "outputSchema": schema},
        ),
    )  # fmt: skip
    run = wait_run(api, stack.admin_token, run_id)
    assert step_of(run, "fixed")["status"] == "succeeded"
    assert json.loads(step_of(run, "fixed")["output"]) == {"n": 1}
    stuck = step_of(run, "stuck")
    assert stuck["status"] == "failed"
    assert (
        stuck["error"] == "output schema: the final message is not JSON matching the outputSchema"
    )
    assert len(workflow_agents.turns_for("hopeless")) == 2  # the turn and one re-prompt
    assert len(workflow_agents.turns_for("fixable")) == 2


def test_bad_starts_are_refused_before_any_work(api, stack) -> None:
    define(api, stack.admin_token, CLAUDE_CODE)
    token = stack.admin_token
    missing = _one_stage(
        {"label": "a", "adapter": "claude-code", "prompt": "Review {{FILE}} for {{AREA}}"},
        requiredVariables=["AREA"],
        input={"AREA": "  "},
    )
    refused = api("POST", "/v1/workflows", token, missing)
    assert refused.status == 400, refused.body
    message = refused.body["error"]["message"]
    assert "required variable AREA is blank" in message
    assert "step 'a' uses FILE, not in input" in message
    unknown = _one_stage({"label": "a", "adapter": "codex", "prompt": "Go"})
    refused = api("POST", "/v1/workflows", token, unknown)
    assert refused.status == 400
    assert (
        "adapter profile 'codex', which this account has not defined"
        in (refused.body["error"]["message"])
    )
    assert "agentworks adapters create --file" in refused.body["error"]["message"]
    assert api("GET", "/v1/workflows", token).body == {"runs": [], "nextBefore": None}
    assert _executions(stack) == 0


def test_a_start_with_several_problems_is_refused_with_all_of_them(api, stack) -> None:
    """The 400 lists every problem (`problems`) and its message says how many: the
    definition's, and together the variables' and the adapter profiles'."""
    define(api, stack.admin_token, CLAUDE_CODE)
    token = stack.admin_token
    bad = _one_stage(
        {"label": "a", "adapter": "claude-code", "sessionRef": "x"},
        {"label": "a", "adapter": "claude-code", "prompt": "Go"},
    )
    refused = api("POST", "/v1/workflows", token, bad)
    assert refused.status == 400, refused.body
    error = refused.body["error"]
    assert error["problems"] == [
        "stages.0.steps.0: an agent step names exactly one of 'adapter' or 'sessionRef'",
        "stages.0.steps.0: an agent step needs a 'prompt'",
        "step 'a': sessionRef 'x' names a step of no earlier stage; it can reuse the session "
        "of a step of an earlier stage",
        "step label 'a' is used twice",
    ]
    assert error["message"].startswith(
        "Invalid workflow (4 problems): stages.0.steps.0: an agent step names exactly one"
    )
    unready = _one_stage(
        {"label": "a", "adapter": "codex", "prompt": "Review {{FILE}}"},
        requiredVariables=["AREA"],
    )
    refused = api("POST", "/v1/workflows", token, unready)
    assert refused.status == 400, refused.body
    problems = refused.body["error"]["problems"]
    assert problems[:2] == [
        "required variable AREA is missing from input",
        "step 'a' uses FILE, not in input",
    ]
    assert problems[2].startswith("step 'a' names adapter profile 'codex', which this")
    assert refused.body["error"]["message"].startswith("Cannot start the workflow (3 problems): ")
    assert _executions(stack) == 0


def test_limits_of_a_definition_hold_at_and_just_past_them(api, stack) -> None:
    define(api, stack.admin_token, CLAUDE_CODE)
    token = stack.admin_token
    step = {"label": "a", "adapter": "claude-code"}
    at = _one_stage({**step, "prompt": "x" * limits.WORKFLOW_PROMPT_MAX_CHARS})
    assert api("POST", "/v1/workflows", token, at).status == 202
    past = _one_stage({**step, "prompt": "x" * (limits.WORKFLOW_PROMPT_MAX_CHARS + 1)})
    assert api("POST", "/v1/workflows", token, past).status == 400
    wide = [
        {**step, "label": f"s{i}", "prompt": "p"}
        for i in range(limits.WORKFLOW_STEPS_PER_STAGE_MAX)
    ]
    assert api("POST", "/v1/workflows", token, _one_stage(*wide)).status == 202
    wider = [*wide, {**step, "label": "one-more", "prompt": "p"}]
    assert api("POST", "/v1/workflows", token, _one_stage(*wider)).status == 400
    long_answer = "y" * (limits.WORKFLOW_ANSWER_MAX_CHARS + 1)
    refused = api(
        "POST", "/v1/workflows/wfrun_x/resolve", token, {"step": "a", "answer": long_answer}
    )
    assert refused.status == 400
    for run in api("GET", "/v1/workflows", token).body["runs"]:
        wait_run(api, token, run["runId"])


def test_cancel_stops_a_running_run(api, stack) -> None:
    workflow_agents.reset()
    define(api, stack.admin_token, TIMED)
    token = stack.admin_token
    run_id = start(
        api,
        token,
        {
            "workflowId": "long",
            "stages": [
                {"steps": [{"label": "wait", "adapter": "timed", "policy": "escalate",
                            "prompt": "Hold. ask: continue"}]},
                {"steps": [{"label": "after", "adapter": "timed", "prompt": "not reached"}]},
            ],
        },
    )  # fmt: skip
    wait_step(api, token, run_id, "wait", {"waiting"})
    cancelled = api("POST", f"/v1/workflows/{run_id}/cancel", token)
    assert cancelled.status == 200, cancelled.body
    assert cancelled.body["status"] == "cancelled"
    assert step_of(cancelled.body, "wait")["status"] == "cancelled"
    sfn = stack.services.workflows.runs._executions
    assert sfn.status(sfn.execution_arn(run_id)) == "ABORTED"
    again = api("POST", f"/v1/workflows/{run_id}/cancel", token)
    assert again.status == 409
    late = api("POST", f"/v1/workflows/{run_id}/resolve", token, {"step": "wait", "answer": "y"})
    assert late.status == 409
    assert workflow_agents.turns_for("not reached") == []


def test_another_account_or_connection_cannot_touch_a_run(api, stack, agents) -> None:
    define(api, stack.admin_token, TIMED)
    owner = stack.admin_token
    run_id = start(
        api,
        owner,
        _one_stage(
            {"label": "wait", "adapter": "timed", "policy": "escalate", "prompt": "Hold. ask: go"}
        ),
    )
    wait_step(api, owner, run_id, "wait", {"waiting"})
    before = api("GET", f"/v1/workflows/{run_id}", owner).body
    unknown = "wfrun_01ARZ3NDEKTSV4RRFFQ69G5FAV"
    intruders = {
        "other account": stack.services.identity.bootstrap("intruder").token,
        "other connection": agents.connection("colleague")["token"],
    }
    for who, token in intruders.items():
        for method, tail, body in (
            ("GET", "", None),
            ("POST", "/cancel", None),
            ("POST", "/resolve", {"step": "wait", "answer": "mine"}),
            ("POST", "/retry", {}),
            ("GET", f"/sessions/{step_of(before, 'wait')['sessionId']}", None),
        ):
            got = api(method, f"/v1/workflows/{run_id}{tail}", token, body)
            like = api(method, f"/v1/workflows/{unknown}{tail}", token, body)
            assert (got.status, got.body) == (404, like.body), (who, tail, got.body)
        assert api("GET", "/v1/workflows", token).body == {"runs": [], "nextBefore": None}, who
    assert api("GET", f"/v1/workflows/{run_id}", owner).body == before  # nothing changed
    assert api("POST", f"/v1/workflows/{run_id}/cancel", owner).status == 200
