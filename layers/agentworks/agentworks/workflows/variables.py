"""A run's variables (W9): `requiredVariables` present and not blank, and each prompt's
`{{NAME}}` replaced from `input` — checked before any work, so a run never starts with a
prompt it cannot complete."""

from __future__ import annotations

import json
import re

from agentworks.errors import InvalidInput
from agentworks.workflows.definition import VariableValue, WorkflowStart, refused

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def as_text(value: VariableValue) -> str:
    """A variable as a prompt shows it: strings as they are, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


def item_variables(start: WorkflowStart, item: int) -> dict[str, VariableValue]:
    """W12: a pipeline item's variables — ITEM (the item, as text for an object) and, for
    an object, its fields — over the run's input."""
    if not start.items:
        return dict(start.input)
    value = start.items[item]
    if isinstance(value, dict):
        return {**start.input, "ITEM": json.dumps(value, sort_keys=True), **value}
    return {**start.input, "ITEM": value}


def resolved_prompts(start: WorkflowStart, item: int = 0) -> dict[str, str]:
    """Each step's prompt with its variables filled in, by step label; InvalidInput naming
    every required variable that is missing or blank and every placeholder without a value."""
    prompts, problems = _resolved(start, item)
    if problems:
        raise refused("Cannot start the workflow", problems)
    return prompts


def variable_problems(start: WorkflowStart) -> list[str]:
    """What resolved_prompts would refuse, for the first item that has any (a pipeline's
    items share their problems more often than not: one item's are enough to act on)."""
    for item in range(len(start.items or [None])):
        if problems := _resolved(start, item)[1]:
            return problems
    return []


def _resolved(start: WorkflowStart, item: int) -> tuple[dict[str, str], list[str]]:
    problems = []
    variables = item_variables(start, item)
    for name in start.required_variables:
        if name not in variables:
            problems.append(f"required variable {name} is missing from input")
        elif not as_text(variables[name]).strip():
            problems.append(f"required variable {name} is blank")
    prompts: dict[str, str] = {}
    for _, step in start.steps():
        # A step's humanInputs are filled in when a person gives them (with_human).
        known = {*variables, *step.human_inputs}
        unknown = sorted({m for m in PLACEHOLDER.findall(step.prompt) if m not in known})
        if unknown:
            problems.append(f"step {step.label!r} uses {', '.join(unknown)}, not in input")
            continue
        prompts[step.label] = PLACEHOLDER.sub(
            lambda match: (
                as_text(variables[match.group(1)])
                if match.group(1) in variables
                else match.group(0)
            ),
            step.prompt,
        )
    where = f"item {item}: " if start.items else ""
    return prompts, [where + problem for problem in problems]


def with_human(prompt: str, given: dict[str, str]) -> str:
    """W9: the prompt with the person's humanInputs in their placeholders; the ones it does
    not name follow it as scoped instructions."""
    named = set(PLACEHOLDER.findall(prompt))
    filled = PLACEHOLDER.sub(lambda m: given.get(m.group(1), m.group(0)), prompt)
    rest = [f"{name}: {value}" for name, value in given.items() if name not in named]
    if not rest:
        return filled
    return filled + "\n\nInstructions from a person for this step:\n" + "\n".join(rest)


def parse_human(names: list[str], answer: str) -> dict[str, str]:
    """A person's answer to a step's humanInputs: the text itself for one input, a JSON
    object with exactly those names for several; InvalidInput saying what to send."""
    if len(names) == 1:
        return {names[0]: answer}
    wanted = ", ".join(names)
    try:
        given = json.loads(answer)
    except ValueError:
        given = None
    if (
        not isinstance(given, dict)
        or set(given) != set(names)
        or not all(isinstance(v, str) and v.strip() for v in given.values())
    ):
        raise InvalidInput(
            f"answer with a JSON object of {wanted}, each a non-empty string", field="answer"
        )
    return {name: given[name] for name in names}
