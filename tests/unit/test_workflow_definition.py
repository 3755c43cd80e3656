"""The workflow_start JSON (W1–W3, W6, W8, W9): the seed's examples start unchanged, every
rule refuses with where and why, every bound holds at its limit and fails just past it, and
no input makes the parser fail any other way than with InvalidInput."""

from __future__ import annotations

import contextlib
import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentworks import limits
from agentworks.errors import InvalidInput
from agentworks.workflows.definition import parse_workflow
from agentworks.workflows.variables import resolved_prompts

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "workflows"

# The seed's two examples, as the seed writes them (comments included).
SEED_REVIEW_THEN_FIX = """
{
  "workflowId": "review-then-fix",
  "stages": [
    {
      "label": "review",
      "steps": [
        { "label": "review-auth",  "adapter": "claude-code", "prompt": "Review auth.ts for bugs." },
        { "label": "review-db",    "adapter": "claude-code", "prompt": "Review db.ts for bugs." }
      ]
    },
    {
      "label": "fix",
      "steps": [
        // reuse the reviewer's session so the fixer sees its findings:
        { "label": "fix-auth", "sessionRef": "review-auth", "prompt": "Now fix what you found." }
      ]
    }
  ]
}
"""
SEED_NIGHTLY_AUDIT = """
{
  "workflowId": "nightly-audit",
  "cacheKey": "nightly-audit",           // enables the journal for this run
  "stages": [
    { "steps": [
      { "label": "scan", "adapter": "claude-code",
        "prompt": "Summarize the changelog since the last tag.",
        "cacheable": true }                // idempotent → safe to replay
    ] }
  ]
}
"""


def _without_comments(text: str) -> Any:
    # The seed's comments run from `//` to the end of a line, never inside its strings.
    return json.loads(re.sub(r"//[^\n]*", "", text))


def _step(label: str = "s", **options: Any) -> dict[str, Any]:
    return {"label": label, "adapter": "claude-code", "prompt": "Do it.", **options}


def _run(*stages: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    return {"workflowId": "w", "stages": [{"steps": steps} for steps in stages], **fields}


def _refused(data: Any) -> str:
    with pytest.raises(InvalidInput) as refused:
        parse_workflow(data)
    return refused.value.message


def test_w1_the_seeds_examples_start_unchanged() -> None:
    review = parse_workflow(_without_comments(SEED_REVIEW_THEN_FIX))
    assert [s.label for s in review.stages] == ["review", "fix"]
    assert [step.kind for _, step in review.steps()] == ["agent", "agent", "agent"]
    assert review.stages[1].steps[0].session_ref == "review-auth"
    audit = parse_workflow(_without_comments(SEED_NIGHTLY_AUDIT))
    assert audit.cache_key == "nightly-audit" and audit.stages[0].label == "stage-1"
    assert audit.stages[0].steps[0].cacheable is True
    # The examples folder holds the same two, and they read back as the seed writes them.
    for name, seed in (("review-then-fix", review), ("nightly-audit", audit)):
        example = json.loads((EXAMPLES / f"{name}.json").read_text())
        assert parse_workflow(example) == seed
        assert parse_workflow(seed.to_json()) == seed
        assert "sessionRef" in json.dumps(review.to_json()) and "session_ref" not in json.dumps(
            review.to_json()
        )


def test_w2_session_ref_names_a_step_of_an_earlier_stage() -> None:
    same_stage = _run([_step("a"), {"label": "b", "sessionRef": "a", "prompt": "go"}])
    assert "sessionRef 'a' names a step of this stage" in _refused(same_stage)
    later = _run([{"label": "b", "sessionRef": "a", "prompt": "go"}], [_step("a")])
    assert "sessionRef 'a' names a step of no earlier stage" in _refused(later)
    crew_step = {"label": "c", "crew": "contracts", "function": "summarize", "args": {}}
    no_session = _run([crew_step], [{"label": "b", "sessionRef": "c", "prompt": "go"}])
    assert "sessionRef 'c' has no session" in _refused(no_session)
    two_back = _run([_step("a")], [_step("b")], [{"label": "c", "sessionRef": "a", "prompt": "x"}])
    assert parse_workflow(two_back).stages[2].steps[0].session_ref == "a"


def test_w9_a_steps_kind_follows_from_what_it_names() -> None:
    crew = parse_workflow(_run([{"label": "c", "crew": "contracts", "function": "summarize"}]))
    assert crew.stages[0].steps[0].kind == "crew"
    for bad, why in (
        ({"label": "x", "prompt": "p"}, "exactly one of 'adapter' or 'sessionRef'"),
        (_step("x", sessionRef="y"), "exactly one of 'adapter' or 'sessionRef'"),
        (_step("x", prompt="  "), "needs a 'prompt'"),
        (_step("x", function="f"), "'function' and 'args' belong to a step with 'crew'"),
        ({"label": "x", "crew": "c"}, "names 'crew' (or 'workflow') and 'function'"),
        ({"label": "x", "crew": "c", "workflow": "w", "function": "f"}, "no more"),
        ({"label": "x", "crew": "c", "function": "f", "adapter": "a"}, "no more"),
        ({"label": "x", "kind": "crew", "adapter": "a", "prompt": "p"}, "names 'crew'"),
        (_step("x", policy="ask-me"), "stages.0.steps.0.policy"),
        (_step("x", surprise=1), "stages.0.steps.0.surprise"),
    ):
        assert why in _refused(_run([bad])), bad


def test_w1_labels_are_unique_and_well_formed() -> None:
    assert "step label 'a' is used twice" in _refused(_run([_step("a")], [_step("a")]))
    twice = {"workflowId": "w", "stages": [{"label": "x", "steps": [_step("a")]},
                                          {"label": "x", "steps": [_step("b")]}]}  # fmt: skip
    assert "stage label 'x' is used twice" in _refused(twice)
    assert "a step label is" in _refused(_run([_step("no spaces")]))
    assert "an id or cache key" in _refused({**_run([_step()]), "workflowId": "-x"})


def test_w3_notify_url_is_https_to_a_public_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OUTBOUND_ALLOW_LOOPBACK", raising=False)
    assert parse_workflow(_run([_step()], notifyUrl="https://hooks.example.com/x")).notify_url
    for url in ("http://hooks.example.com/x", "ftp://h/x", "not-a-url"):
        assert "an https:// URL is needed" in _refused(_run([_step()], notifyUrl=url)), url
    assert "spaces" in _refused(_run([_step()], notifyUrl="not a url"))
    assert "no host" in _refused(_run([_step()], notifyUrl="https://"))
    loopback = _refused(_run([_step()], notifyUrl="http://127.0.0.1:8080/hook"))
    assert "notifyUrl: refused: an https:// URL is needed" in loopback
    # The local stack's option (agentworks dev --allow-loopback-webhooks) lets it through.
    monkeypatch.setenv("OUTBOUND_ALLOW_LOOPBACK", "1")
    assert parse_workflow(_run([_step()], notifyUrl="http://127.0.0.1:8080/hook")).notify_url


@pytest.mark.parametrize(
    ("field", "at_limit", "past_limit"),
    [
        ("stages", limits.WORKFLOW_STAGES_MAX, limits.WORKFLOW_STAGES_MAX + 1),
        ("steps_per_stage", limits.WORKFLOW_STEPS_PER_STAGE_MAX,
         limits.WORKFLOW_STEPS_PER_STAGE_MAX + 1),
        ("label", limits.WORKFLOW_LABEL_MAX_CHARS, limits.WORKFLOW_LABEL_MAX_CHARS + 1),
        ("prompt", limits.WORKFLOW_PROMPT_MAX_CHARS, limits.WORKFLOW_PROMPT_MAX_CHARS + 1),
        ("variables", limits.WORKFLOW_VARIABLES_MAX, limits.WORKFLOW_VARIABLES_MAX + 1),
        ("variable", limits.WORKFLOW_VARIABLE_MAX_CHARS, limits.WORKFLOW_VARIABLE_MAX_CHARS + 1),
        ("cost", limits.WORKFLOW_COST_MAX_USD, limits.WORKFLOW_COST_MAX_USD + 0.01),
    ],
)  # fmt: skip
def test_each_bound_holds_at_its_limit_and_fails_just_past_it(
    field: str, at_limit: float, past_limit: float
) -> None:
    def sized(n: float) -> dict[str, Any]:
        count = int(n)
        if field == "stages":
            return _run(*[[_step(f"s{i}")] for i in range(count)])
        if field == "steps_per_stage":
            return _run([_step(f"s{i}") for i in range(count)])
        if field == "label":
            return _run([_step("a" * count)])
        if field == "prompt":
            return _run([_step(prompt="p" * count)])
        if field == "variables":
            return _run([_step()], input={f"V{i}": "x" for i in range(count)})
        if field == "variable":
            return _run([_step()], input={"V": "x" * count})
        return _run([_step()], maxTotalCostUsd=n)

    parse_workflow(sized(at_limit))
    with pytest.raises(InvalidInput):
        parse_workflow(sized(past_limit))


def test_steps_over_all_stages_are_bounded() -> None:
    per_stage = limits.WORKFLOW_STEPS_PER_STAGE_MAX
    stages = -(-limits.WORKFLOW_STEPS_MAX // per_stage)

    def run(total: int) -> dict[str, Any]:
        labels = [f"s{i}" for i in range(total)]
        chunks = [labels[i : i + per_stage] for i in range(0, total, per_stage)]
        return _run(*[[_step(label) for label in chunk] for chunk in chunks])

    assert stages <= limits.WORKFLOW_STAGES_MAX
    parse_workflow(run(limits.WORKFLOW_STEPS_MAX))
    assert f"at most {limits.WORKFLOW_STEPS_MAX} in a workflow" in _refused(
        run(limits.WORKFLOW_STEPS_MAX + 1)
    )


def test_the_whole_definition_is_bounded_in_bytes() -> None:
    # Many steps with long prompts: each field within its bound, the sum past the whole one.
    prompt = "p" * limits.WORKFLOW_PROMPT_MAX_CHARS
    count = limits.WORKFLOW_DEFINITION_MAX_BYTES // len(prompt) + 1
    data = _run(*[[_step(f"s{i}", prompt=prompt)] for i in range(count)])
    assert "bytes as JSON; at most" in _refused(data)


def test_w9_required_variables_and_placeholders_are_checked_before_any_work() -> None:
    start = parse_workflow(
        _run(
            [_step("a", prompt="Review {{FILE}} for {{ KIND }} bugs, {{COUNT}} of them.")],
            input={"FILE": "auth.ts", "KIND": "security", "COUNT": 3},
            requiredVariables=["FILE"],
        )
    )
    assert resolved_prompts(start) == {"a": "Review auth.ts for security bugs, 3 of them."}
    for fields, why in (
        ({"requiredVariables": ["FILE"]}, "required variable FILE is missing from input"),
        (
            {"requiredVariables": ["FILE"], "input": {"FILE": "  "}},
            "required variable FILE is blank",
        ),
        ({}, "step 'a' uses FILE, not in input"),
    ):
        with pytest.raises(InvalidInput) as refused:
            resolved_prompts(parse_workflow(_run([_step("a", prompt="{{FILE}}")], **fields)))
        assert why in refused.value.message, fields


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["workflowId", "stages", "cacheKey", "input", "requiredVariables",
                         "notifyUrl", "maxTotalCostUsd", "other"]),
        _JSON,
    )
)  # fmt: skip
def test_any_json_is_read_or_refused_with_invalid_input(data: dict[str, Any]) -> None:
    try:
        start = parse_workflow(data)
    except InvalidInput:
        return
    assert start.stages  # whatever is read is a whole definition


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_any_change_to_a_step_is_read_or_refused_with_invalid_input(data: st.DataObject) -> None:
    run = copy.deepcopy(_without_comments(SEED_REVIEW_THEN_FIX))
    step = run["stages"][data.draw(st.integers(0, 1))]["steps"][0]
    step[data.draw(st.sampled_from([*sorted(step), "crew", "kind", "args"]))] = data.draw(_JSON)
    with contextlib.suppress(InvalidInput):  # refused, or read: never another error
        parse_workflow(run)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("label", 7),
        ("label", ""),
        ("label", ["a"]),
        ("prompt", {"text": "x"}),
        ("prompt", 12),
        ("adapter", {"name": "claude-code"}),
        ("adapter", ""),
        ("kind", "bogus"),
        ("args", "not an object"),
        ("timeoutSeconds", "soon"),
    ],
)
def test_broken_steps_of_a_valid_run_are_refused_with_invalid_input(field: str, value: Any) -> None:
    run = copy.deepcopy(_without_comments(SEED_REVIEW_THEN_FIX))
    run["stages"][0]["steps"][0][field] = value
    with pytest.raises(InvalidInput):
        parse_workflow(run)


def test_w9_routes_name_steps_of_later_stages_once() -> None:
    def flow(routes: dict[str, list[str]]) -> dict[str, Any]:
        return {
            "workflowId": "w",
            "stages": [
                {"steps": [{"label": "pick", "kind": "branch", "routes": routes},
                           {"label": "same", "adapter": "a", "prompt": "p"}]},
                {"steps": [{"label": "x", "adapter": "a", "prompt": "p"},
                           {"label": "y", "adapter": "a", "prompt": "p"}]},
            ],
        }  # fmt: skip

    parsed = parse_workflow(flow({"one": ["x"], "two": ["y"]}))
    assert parsed.stages[0].steps[0].route_source == "human"
    assert parsed.routes_to("y") == ("pick", "two") and parsed.routes_to("same") is None
    with pytest.raises(InvalidInput, match="names 'same', which is not a step of a later"):
        parse_workflow(flow({"one": ["same"], "two": ["y"]}))
    with pytest.raises(InvalidInput, match="step 'x' is on two routes"):
        parse_workflow(flow({"one": ["x"], "two": ["x"]}))
    with pytest.raises(InvalidInput, match="at least 2"):
        parse_workflow(flow({"one": ["x"]}))
    agent_with_routes = {"label": "a", "adapter": "p", "prompt": "p", "routes": {"a": [], "b": []}}
    with pytest.raises(InvalidInput, match="belong to a routing or branch step"):
        parse_workflow({"workflowId": "w", "stages": [{"steps": [agent_with_routes]}]})


def _refusal(data: Any) -> InvalidInput:
    with pytest.raises(InvalidInput) as refused:
        parse_workflow(data)
    return refused.value


def test_a_definition_with_several_problems_is_refused_with_all_of_them() -> None:
    """Each problem in `problems`, the message naming how many and leading with the first
    problem's wording: within one step, across steps, and the workflow's own checks (labels,
    sessionRef) beside a step whose fields fit badly."""
    bad = {
        "workflowId": "several",
        "stages": [
            {"steps": [
                {"label": "a", "adapter": "p", "sessionRef": "q"},  # both, and no prompt
                {"label": "a", "adapter": "p", "prompt": "again"},
            ]},
            {"steps": [{"label": "c", "sessionRef": "zz", "prompt": "go"}]},
        ],
    }  # fmt: skip
    error = _refusal(bad)
    problems = error.details["problems"]
    assert problems == [
        "stages.0.steps.0: an agent step names exactly one of 'adapter' or 'sessionRef'",
        "stages.0.steps.0: an agent step needs a 'prompt'",
        "step 'a': sessionRef 'q' names a step of no earlier stage; it can reuse the session "
        "of a step of an earlier stage",
        "step label 'a' is used twice",
        "step 'c': sessionRef 'zz' names a step of no earlier stage; it can reuse the session "
        "of a step of an earlier stage",
    ]
    assert error.message == "Invalid workflow (5 problems): " + "; ".join(problems)


def test_a_step_whose_fields_fail_does_not_hide_another_steps_problems() -> None:
    bad = {
        "workflowId": "several",
        "stages": [{"steps": [
            {"label": "ok", "adapter": "p", "prompt": "fine", "kind": "branch"},
            {"label": "not a label", "adapter": "p", "prompt": "x"},
        ]}],
    }  # fmt: skip
    problems = _refusal(bad).details["problems"]
    assert problems[0].startswith("stages.0.steps.1.label: a step label is 1–64")
    assert problems[1:] == [
        "stages.0.steps.0: a branch step runs no session: no 'adapter', 'sessionRef', 'crew'",
        "stages.0.steps.0: a branch step has 'routes': at least 2, each a list of steps",
    ]


def test_one_problem_reads_as_before() -> None:
    error = _refusal({"workflowId": "one", "stages": [{"steps": [{"label": "a", "adapter": "p"}]}]})
    assert error.message == "Invalid workflow: stages.0.steps.0: an agent step needs a 'prompt'"
    assert error.details["problems"] == ["stages.0.steps.0: an agent step needs a 'prompt'"]


def test_the_problems_listed_are_bounded() -> None:
    steps = [{"label": f"s{n}", "adapter": "p"} for n in range(limits.WORKFLOW_STEPS_PER_STAGE_MAX)]
    stages = [{"steps": steps}] * 6  # 120 steps without a prompt, labels used again
    error = _refusal({"workflowId": "many", "stages": stages})
    assert len(error.details["problems"]) == limits.WORKFLOW_PROBLEMS_LISTED
    assert error.message.startswith(
        f"Invalid workflow ({limits.WORKFLOW_PROBLEMS_LISTED} problems)"
    )
