"""Routes and a person's inputs (W9): which steps a routing or branch step's choice lets
run, how a choice is read from an answer, and what a step asks a person for.

A routing step's session answers with a route name; a branch step asks a person to choose
(routeSource "human"). The steps a route names run only when it was taken — and so do the
steps that continue their sessions; the rest are `skipped`, which a barrier counts as done.
"""

from __future__ import annotations

import json

from agentworks.errors import InvalidInput
from agentworks.workflows import sessions
from agentworks.workflows.definition import Step, WorkflowStart
from agentworks.workflows.records import StepRecord
from agentworks.workflows.variables import parse_human


def skipped(start: WorkflowStart, step: Step, done: dict[str, StepRecord]) -> bool:
    """The step is on a route that was not taken, or continues a session that was."""
    for label in sessions.chain(start, step.label):
        decided = start.routes_to(label)
        if decided is not None:
            chooser, route = decided
            if done.get(chooser) is None or done[chooser].route != route:
                return True
        earlier = done.get(label)
        if label != step.label and earlier is not None and earlier.status == "skipped":
            return True
    return False


def route_named(step: Step, text: str) -> str | None:
    """The route an answer names: the bare name, or {"route": name} (any case)."""
    routes = {name.lower(): name for name in step.routes or {}}
    candidate = text.strip()
    try:
        parsed = json.loads(candidate)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("route"), str):
        candidate = parsed["route"]
    return routes.get(candidate.strip().strip(".").lower())


def route_problem(step: Step) -> str:
    return "answer with exactly one of the routes: " + ", ".join(step.routes or {})


def question(step: Step) -> str:
    """What a waiting branch or humanInputs step asks."""
    if step.kind == "branch":
        asked = step.prompt.strip() or "Which way?"
        return f"{asked} (choose a route: {', '.join(step.routes or {})})"
    if len(step.human_inputs) == 1:
        return f"This step needs {step.human_inputs[0]} from a person."
    names = ", ".join(step.human_inputs)
    return f"This step needs {names} from a person (answer with a JSON object of them)."


def checked_answer(step: Step, record: StepRecord, answer: str) -> str:
    """`resolve`'s answer, refused with what to send when it cannot answer the step."""
    if step.kind == "branch":
        route = route_named(step, answer)
        if route is None:
            raise InvalidInput(
                f"Step {step.label!r} waits for a route: {', '.join(step.routes or {})}.",
                field="answer",
            )
        return route
    if step.human_inputs and record.human is None:
        parse_human(step.human_inputs, answer)
    return answer
