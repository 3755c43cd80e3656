"""Plans (W9): a routing step's answer picks its route, a branch waits for a person's
choice (routeSource "human"), the steps of a route not taken are skipped, humanInputs are
asked of a person before the step runs, and a scripted step needs a scripted profile."""

from __future__ import annotations

from typing import Any

from agentworks import limits
from tests.integration.workflow_support import (
    TIMED,
    define,
    start,
    step_of,
    wait_run,
    wait_step,
)
from tests.support import workflow_agents

TRIAGE = {
    "name": "triage",
    "type": "scripted",
    "rules": [{"when": "Triage", "reply": "Fix."}, {"default": "Done: {prompt}"}],
}


def _routes(first: dict[str, Any]) -> dict[str, Any]:
    return {
        "workflowId": "plans",
        "stages": [
            {"steps": [first]},
            {
                "steps": [
                    {"label": "do-fix", "adapter": "timed", "prompt": "fix it"},
                    {"label": "do-report", "adapter": "timed", "prompt": "report it"},
                ]
            },
            {"steps": [{"label": "follow", "sessionRef": "do-report", "prompt": "and more"}]},
        ],
    }


ROUTES = {"fix": ["do-fix"], "report": ["do-report"]}


def test_a_routing_step_picks_its_route_and_the_others_are_skipped(api, stack) -> None:
    workflow_agents.reset()
    define(api, stack.admin_token, TIMED, TRIAGE)
    first = {"label": "triage", "kind": "routing", "adapter": "triage", "prompt": "Triage it",
             "routes": ROUTES}  # fmt: skip
    run = wait_run(api, stack.admin_token, start(api, stack.admin_token, _routes(first)))
    assert run["status"] == "succeeded", run
    assert step_of(run, "triage")["route"] == "fix"
    assert step_of(run, "do-fix")["status"] == "succeeded"
    # Not taken: the route's step, and the step that would continue its session.
    assert step_of(run, "do-report")["status"] == "skipped"
    assert step_of(run, "follow")["status"] == "skipped"
    assert workflow_agents.turns_for("report it") == []


def test_a_routing_answer_that_names_no_route_is_re_prompted_then_fails(api, stack) -> None:
    define(api, stack.admin_token, TIMED, TRIAGE)
    first = {"label": "triage", "kind": "routing", "adapter": "triage", "prompt": "Guess",
             "routes": ROUTES}  # fmt: skip
    run = wait_run(api, stack.admin_token, start(api, stack.admin_token, _routes(first)))
    assert run["status"] == "failed"
    assert step_of(run, "triage")["error"] == (
        "output schema: answer with exactly one of the routes: fix, report"
    )


def test_a_branch_waits_for_a_persons_choice(api, stack) -> None:
    define(api, stack.admin_token, TIMED)
    token = stack.admin_token
    first = {"label": "choose", "kind": "branch", "routeSource": "human",
             "prompt": "Ship the fix or report?", "routes": ROUTES}  # fmt: skip
    run_id = start(api, token, _routes(first))
    waiting = wait_step(api, token, run_id, "choose", {"waiting"})
    assert waiting["question"] == "Ship the fix or report? (choose a route: fix, report)"
    wrong = api("POST", f"/v1/workflows/{run_id}/resolve", token, {"step": "choose", "answer": "x"})
    assert wrong.status == 400 and "fix, report" in wrong.body["error"]["message"]
    assert step_of(api("GET", f"/v1/workflows/{run_id}", token).body, "choose")["status"] == (
        "waiting"
    )  # a refused answer changed nothing
    chosen = api(
        "POST", f"/v1/workflows/{run_id}/resolve", token, {"step": "choose", "answer": "Report"}
    )
    assert chosen.status == 200, chosen.body
    run = wait_run(api, token, run_id)
    assert run["status"] == "succeeded", run
    assert step_of(run, "choose")["route"] == "report"
    assert step_of(run, "do-fix")["status"] == "skipped"
    assert step_of(run, "follow")["status"] == "succeeded"


def test_human_inputs_are_asked_before_the_step_runs(api, stack) -> None:
    workflow_agents.reset()
    define(api, stack.admin_token, TIMED)
    token = stack.admin_token
    one = {"label": "note", "adapter": "timed", "humanInputs": ["TONE"],
           "prompt": "Write the release note in {{TONE}}"}  # fmt: skip
    two = {"label": "mail", "adapter": "timed", "humanInputs": ["TO", "SIGN"],
           "prompt": "Mail it"}  # fmt: skip
    run_id = start(api, token, {"workflowId": "notes", "stages": [{"steps": [one, two]}]})
    assert wait_step(api, token, run_id, "note", {"waiting"})["question"] == (
        "This step needs TONE from a person."
    )
    waiting = wait_step(api, token, run_id, "mail", {"waiting"})
    assert "TO, SIGN" in waiting["question"]
    assert workflow_agents.turns_for("release note") == []  # nothing ran before the answer
    resolve = f"/v1/workflows/{run_id}/resolve"
    assert api("POST", resolve, token, {"step": "note", "answer": "a calm tone"}).status == 200
    bad = api("POST", resolve, token, {"step": "mail", "answer": "ops@example.com"})
    assert bad.status == 400 and "JSON object of TO, SIGN" in bad.body["error"]["message"]
    given = '{"TO": "ops@example.com", "SIGN": "Ada"}'
    assert api("POST", resolve, token, {"step": "mail", "answer": given}).status == 200
    run = wait_run(api, token, run_id)
    assert run["status"] == "succeeded", run
    assert step_of(run, "note")["output"].startswith("did: Write the release note in a calm tone")
    mail = step_of(run, "mail")["output"]
    assert "Instructions from a person for this step:" in mail and "SIGN: Ada" in mail


def test_a_scripted_step_needs_a_scripted_profile(api, stack) -> None:
    mailbox = {"name": "outside", "type": "mailbox", "agent": "reviewer"}
    define(api, stack.admin_token, TIMED, mailbox)
    step = {"label": "s", "kind": "scripted", "adapter": "outside", "prompt": "p"}
    refused = api(
        "POST",
        "/v1/workflows",
        stack.admin_token,
        {"workflowId": "w", "stages": [{"steps": [step]}]},
    )
    assert refused.status == 400
    assert "step 's' is scripted; profile 'outside' is mailbox" in refused.body["error"]["message"]
    step["adapter"] = "timed"
    run = wait_run(
        api,
        stack.admin_token,
        start(api, stack.admin_token, {"workflowId": "w", "stages": [{"steps": [step]}]}),
    )
    assert run["status"] == "succeeded"


def _many_routes(n: int) -> dict[str, Any]:
    """A routing step with `n` routes, each to a step of its own; the last route is `fix`."""
    names = [f"route-{i}" for i in range(n - 1)] + ["fix"]
    first = {"label": "triage", "kind": "routing", "adapter": "triage", "prompt": "Triage it",
             "routes": {name: [f"do-{name}"] for name in names}}  # fmt: skip
    later = [{"label": f"do-{name}", "adapter": "timed", "prompt": f"do {name}"} for name in names]
    return {"workflowId": "plans", "stages": [{"steps": [first]}, {"steps": later}]}


def test_a_routing_step_holds_workflow_routes_max_routes_and_no_more(api, stack) -> None:
    """W9: WORKFLOW_ROUTES_MAX routes run, the last one picked and every other route's step
    skipped; one more route is refused before anything runs."""
    workflow_agents.reset()
    define(api, stack.admin_token, TIMED, TRIAGE)
    token = stack.admin_token
    run = wait_run(api, token, start(api, token, _many_routes(limits.WORKFLOW_ROUTES_MAX)))
    assert run["status"] == "succeeded", run
    assert step_of(run, "triage")["route"] == "fix"
    assert step_of(run, "do-fix")["status"] == "succeeded"
    skipped = [s for s in run["stages"][1]["steps"] if s["status"] == "skipped"]
    assert len(skipped) == limits.WORKFLOW_ROUTES_MAX - 1

    before = api("GET", "/v1/workflows", token).body["runs"]
    refused = api("POST", "/v1/workflows", token, _many_routes(limits.WORKFLOW_ROUTES_MAX + 1))
    assert refused.status == 400 and "routes" in refused.body["error"]["message"]
    assert api("GET", "/v1/workflows", token).body["runs"] == before
