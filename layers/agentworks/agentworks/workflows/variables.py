"""A run's variables (W9): `requiredVariables` present and not blank, and each prompt's
`{{NAME}}` replaced from `input` — checked before any work, so a run never starts with a
prompt it cannot complete."""

from __future__ import annotations

import json
import re

from agentworks.errors import InvalidInput
from agentworks.workflows.definition import VariableValue, WorkflowStart

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def as_text(value: VariableValue) -> str:
    """A variable as a prompt shows it: strings as they are, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


def resolved_prompts(start: WorkflowStart) -> dict[str, str]:
    """Each step's prompt with its variables filled in, by step label; InvalidInput naming
    every required variable that is missing or blank and every placeholder without a value."""
    problems = []
    for name in start.required_variables:
        if name not in start.input:
            problems.append(f"required variable {name} is missing from input")
        elif not as_text(start.input[name]).strip():
            problems.append(f"required variable {name} is blank")
    prompts: dict[str, str] = {}
    for _, step in start.steps():
        unknown = sorted({m for m in PLACEHOLDER.findall(step.prompt) if m not in start.input})
        if unknown:
            problems.append(f"step {step.label!r} uses {', '.join(unknown)}, not in input")
            continue
        prompts[step.label] = PLACEHOLDER.sub(
            lambda match: as_text(start.input[match.group(1)]), step.prompt
        )
    if problems:
        raise InvalidInput("Cannot start the workflow: " + "; ".join(problems)[:1500])
    return prompts
