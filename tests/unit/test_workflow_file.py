"""WORKFLOW.md (W5): the example reads into the same definition as its JSON form, and each
way a file can be malformed is refused naming its line."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentworks.errors import InvalidInput
from agentworks.workflows.definition import parse_workflow
from agentworks.workflows.variables import resolved_prompts
from agentworks.workflows.workflow_file import WorkflowFileError, parse_workflow_file

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workflows" / "WORKFLOW.md"

FRONT = "---\nworkflowId: w\n---\n"


def _line_of(text: str) -> tuple[int, str]:
    with pytest.raises(WorkflowFileError) as refused:
        parse_workflow_file(text)
    return refused.value.line, refused.value.message


def test_w5_the_example_reads_as_its_json_form() -> None:
    read = parse_workflow_file(EXAMPLE.read_text(), input={"AREA": "token expiry"})
    same = parse_workflow(
        {
            "workflowId": "review-then-fix",
            "requiredVariables": ["AREA"],
            "maxTotalCostUsd": 5,
            "input": {"AREA": "token expiry"},
            "stages": [
                {
                    "label": "review",
                    "steps": [
                        {"label": "review-auth", "adapter": "claude-code", "cacheable": True,
                         "prompt": "Review auth.ts for bugs, looking hardest at {{AREA}}."},
                        {"label": "review-db", "adapter": "claude-code",
                         "prompt": "Review db.ts for bugs, looking hardest at {{AREA}}."},
                    ],
                },
                {
                    "label": "fix",
                    "steps": [
                        {"label": "fix-auth", "sessionRef": "review-auth", "policy": "escalate",
                         "prompt": "Now fix what you found."}
                    ],
                },
            ],
        }
    )  # fmt: skip
    assert read.start == same and read.triggers == []
    prompts = resolved_prompts(read.start)
    assert prompts["review-db"] == "Review db.ts for bugs, looking hardest at token expiry."
    with pytest.raises(InvalidInput, match="required variable AREA is missing"):
        resolved_prompts(parse_workflow_file(EXAMPLE.read_text()).start)


def test_w5_front_matter_carries_triggers_and_a_step_may_have_no_options_block() -> None:
    text = (
        "---\nworkflowId: w\ntriggers:\n  - kind: schedule\n    cron: '0 3 * * *'\n---\n"
        "## only\n### crew-step\n```yaml\ncrew: contracts\nfunction: summarize\n"
        "args: {text: hi}\n```\n"
    )
    read = parse_workflow_file(text)
    assert read.triggers == [{"kind": "schedule", "cron": "0 3 * * *"}]
    step = read.start.stages[0].steps[0]
    assert (step.kind, step.crew, step.args) == ("crew", "contracts", {"text": "hi"})


@pytest.mark.parametrize(
    ("text", "line", "why"),
    [
        ("workflowId: w\n## s\n", 1, "starts with front matter"),
        ("---\nworkflowId: w\n## s\n", 1, "no closing '---'"),
        ("---\nworkflowId: [w\n---\n", 2, "not valid YAML"),
        ("---\n- w\n---\n", 2, "a YAML mapping"),
        ("---\nworkflowId: w\nsurprise: 1\n---\n## s\n### a\nx\n", 2, "unknown front matter"),
        (FRONT + "# Title\n", 4, "no stages"),
        (FRONT + "### a\nDo it.\n", 4, "before any stage"),
        (FRONT + "## s\n## t\n### a\n```yaml\nadapter: x\n```\nDo.\n", 4, "stage s has no steps"),
        (FRONT + "## s\ntext\n", 5, "belongs to a step"),
        (FRONT + "## s\n### a\n```json\n{}\n```\n", 6, "a ```yaml block"),
        (FRONT + "## s\n### a\n```yaml\nadapter: x\n", 6, "never closed"),
        (FRONT + "## s\n### a\n```yaml\nadapter: [x\n```\n", 7, "not valid YAML"),
        (FRONT + "## s\n### a\n```yaml\n- x\n```\n", 6, "options are a YAML mapping"),
        (FRONT + "## s\n### a\n```yaml\nadaptor: x\n```\nDo.\n", 6, "unknown option adaptor"),
        (FRONT + "## s\n### a\nDo.\n```yaml\nadapter: x\n```\n", 7, "options block comes first"),
        (
            FRONT + "## s\n### a\n```yaml\nadapter: x\n```\n",
            5,
            "step a: an agent step needs a 'prompt'",
        ),
        (FRONT + "## s\n### bad label\n```yaml\nadapter: x\n```\nDo.\n", 5, "step label"),
    ],
)
def test_w5_a_malformed_file_is_refused_with_its_line(text: str, line: int, why: str) -> None:
    found_line, message = _line_of(text)
    assert (found_line, why in message) == (line, True), message
    assert message.startswith(f"WORKFLOW.md line {line}: ")


def test_a_step_with_several_problems_is_refused_with_all_of_them_at_its_line() -> None:
    text = FRONT + "## s\n### a\n```yaml\nadapter: x\nsessionRef: y\n```\n"
    line, message = _line_of(text)
    assert (line, message) == (
        5,
        "WORKFLOW.md line 5: step a: an agent step names exactly one of 'adapter' or "
        "'sessionRef'; step a: an agent step needs a 'prompt'",
    )


def test_every_steps_problems_are_reported_each_with_its_line() -> None:
    text = FRONT + "## s\n### a\n```yaml\nadapter: x\n```\n## t\n### b\n```yaml\nadapter: y\n```\n"
    with pytest.raises(WorkflowFileError) as refused:
        parse_workflow_file(text)
    assert refused.value.line == 5
    assert refused.value.message == (
        "WORKFLOW.md line 5: step a: an agent step needs a 'prompt'; "
        "line 10: step b: an agent step needs a 'prompt'"
    )
    assert refused.value.details["problems"] == [
        "WORKFLOW.md line 5: step a: an agent step needs a 'prompt'",
        "WORKFLOW.md line 10: step b: an agent step needs a 'prompt'",
    ]


def test_w5_run_wide_rules_hold_for_files_too() -> None:
    text = FRONT + "## s\n### a\n```yaml\nsessionRef: b\n```\nGo.\n"
    with pytest.raises(InvalidInput, match="sessionRef 'b' names a step of no earlier stage"):
        parse_workflow_file(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("-#`~: \n\tayml{}[]wx{}'\"")), max_size=200))
def test_any_text_is_read_or_refused_with_invalid_input(text: str) -> None:
    try:
        parse_workflow_file(FRONT + text)
    except WorkflowFileError as error:
        assert error.line >= 1
    except InvalidInput:
        pass
