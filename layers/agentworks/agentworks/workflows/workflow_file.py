"""WORKFLOW.md (W5): a workflow written as a document, read into the same definition as
workflow_start's JSON.

    ---                                  front matter (YAML): workflowId, cacheKey,
    workflowId: review-then-fix          requiredVariables, maxTotalCostUsd, notifyUrl,
    requiredVariables: [FILE]            triggers
    ---
    # Anything before the first stage is a description.
    ## review                            one `##` heading per stage (its label)
    ### review-auth                      one `###` heading per step (its label)
    ```yaml
    adapter: claude-code                 the step's options, in one fenced YAML block
    ```
    Review {{FILE}} for bugs.            the rest of the section is the prompt

A malformed file is refused with the line that is wrong (docs/workflows.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from agentworks.errors import InvalidInput
from agentworks.workflows.definition import Step, WorkflowStart, describe, parse_workflow

FRONT_MATTER_KEYS = frozenset(
    {"workflowId", "cacheKey", "requiredVariables", "maxTotalCostUsd", "notifyUrl", "triggers"}
)
STEP_OPTION_KEYS = frozenset(
    spec.alias or name
    for name, spec in Step.model_fields.items()
    if name not in ("label", "prompt")
)
_FENCE = re.compile(r"^(```|~~~)\s*(\S*)\s*$")
_STAGE = re.compile(r"^##\s+(.*?)\s*$")
_STEP = re.compile(r"^###\s+(.*?)\s*$")


class WorkflowFileError(InvalidInput):
    """A WORKFLOW.md that cannot be read, with the line (1-based) that is wrong."""

    def __init__(self, line: int, message: str, **details: Any) -> None:
        super().__init__(f"WORKFLOW.md line {line}: {message}", **details)
        self.line = line


@dataclass
class WorkflowFile:
    """A read WORKFLOW.md: the run's definition and the triggers it declares (W11)."""

    start: WorkflowStart
    triggers: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class _StepText:
    label: str
    line: int
    options: dict[str, Any] = field(default_factory=dict)
    prompt_lines: list[str] = field(default_factory=list)


@dataclass
class _StageText:
    label: str
    line: int
    steps: list[_StepText] = field(default_factory=list)


def parse_workflow_file(text: str, input: dict[str, Any] | None = None) -> WorkflowFile:
    """Reads a WORKFLOW.md; `input` holds the run's variables (`--input`)."""
    lines = text.splitlines()
    front, body_start = _front_matter(lines)
    stages = _stages(lines, body_start)
    triggers = front.pop("triggers", [])
    if not isinstance(triggers, list) or not all(isinstance(t, dict) for t in triggers):
        raise WorkflowFileError(1, "triggers is a list of mappings")
    steps = [[(step, _step_data(step)) for step in stage.steps] for stage in stages]
    # Each step on its own first: its problems get its line; every step's, not the first's.
    refused: list[tuple[int, str]] = []
    for stage_steps in steps:
        for step, data in stage_steps:
            try:
                found = Step.model_validate(data).problems()
            except ValidationError as error:
                found = [describe(error)]
            refused += [(step.line, f"step {step.label}: {problem}") for problem in found]
    if refused:
        first_line = refused[0][0]
        problems = [f"WORKFLOW.md line {line}: {problem}" for line, problem in refused]
        message = "; ".join(
            problem if line == first_line else f"line {line}: {problem}"
            for line, problem in refused
        )
        raise WorkflowFileError(first_line, message, problems=problems)
    data = {
        **front,
        "input": input or {},
        "stages": [
            {"label": stage.label, "steps": [d for _, d in stage_steps]}
            for stage, stage_steps in zip(stages, steps, strict=True)
        ],
    }
    return WorkflowFile(parse_workflow(data), triggers)


def _step_data(step: _StepText) -> dict[str, Any]:
    return {**step.options, "label": step.label, "prompt": "\n".join(step.prompt_lines).strip()}


def _front_matter(lines: list[str]) -> tuple[dict[str, Any], int]:
    if not lines or lines[0].strip() != "---":
        raise WorkflowFileError(1, "a WORKFLOW.md starts with front matter: a line '---'")
    for end in range(1, len(lines)):
        if lines[end].strip() == "---":
            break
    else:
        raise WorkflowFileError(1, "the front matter has no closing '---' line")
    front = _yaml("\n".join(lines[1:end]), first_line=2)
    if not isinstance(front, dict):
        raise WorkflowFileError(2, "the front matter is a YAML mapping (workflowId: …)")
    unknown = sorted(set(map(str, front)) - FRONT_MATTER_KEYS)
    if unknown:
        known = ", ".join(sorted(FRONT_MATTER_KEYS))
        raise WorkflowFileError(2, f"unknown front matter {', '.join(unknown)}; known: {known}")
    return front, end + 1


def _stages(lines: list[str], start: int) -> list[_StageText]:
    stages: list[_StageText] = []
    step: _StepText | None = None
    fence: tuple[int, str, list[str]] | None = None  # (line, marker, content)
    for index in range(start, len(lines)):
        number, line = index + 1, lines[index]
        if fence is not None:
            if line.strip() == fence[1]:
                assert step is not None
                step.options = _options(fence[2], fence[0], step)
                fence = None
            else:
                fence[2].append(line)
            continue
        if (found := _STEP.match(line)) is not None:
            if not stages:
                raise WorkflowFileError(number, "a step (###) comes before any stage (##)")
            step = _StepText(found.group(1), number)
            stages[-1].steps.append(step)
        elif (found := _STAGE.match(line)) is not None:
            if stages and not stages[-1].steps:
                raise WorkflowFileError(stages[-1].line, f"stage {stages[-1].label} has no steps")
            stages.append(_StageText(found.group(1), number))
            step = None
        elif (found := _FENCE.match(line)) is not None and step is not None:
            if found.group(2) not in ("yaml", "yml"):
                raise WorkflowFileError(number, "a step's options are a ```yaml block")
            if step.options or (step.prompt_lines and any(p.strip() for p in step.prompt_lines)):
                raise WorkflowFileError(number, "the options block comes first in a step")
            fence = (number, found.group(1), [])
        elif step is not None:
            step.prompt_lines.append(line)
        elif stages and line.strip():
            raise WorkflowFileError(number, "text in a stage belongs to a step (### label)")
    if fence is not None:
        raise WorkflowFileError(fence[0], "this ```yaml block is never closed")
    if not stages:
        raise WorkflowFileError(start + 1, "no stages: add '## <stage label>' headings")
    if not stages[-1].steps:
        raise WorkflowFileError(stages[-1].line, f"stage {stages[-1].label} has no steps")
    return stages


def _options(content: list[str], line: int, step: _StepText) -> dict[str, Any]:
    options = _yaml("\n".join(content), first_line=line + 1)
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise WorkflowFileError(line, f"step {step.label}: the options are a YAML mapping")
    unknown = sorted(set(map(str, options)) - STEP_OPTION_KEYS)
    if unknown:
        raise WorkflowFileError(
            line,
            f"step {step.label}: unknown option {', '.join(unknown)}; known: "
            f"{', '.join(sorted(STEP_OPTION_KEYS))}",
        )
    return options


def _yaml(text: str, first_line: int) -> Any:
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = first_line + (mark.line if mark is not None else 0)
        problem = getattr(error, "problem", None) or str(error)
        raise WorkflowFileError(where, f"not valid YAML: {problem}") from None
