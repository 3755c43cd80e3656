"""Sessions of a run (W2) and the resolved-input hash (W6, W7).

A step with `adapter` opens a session; a step with `sessionRef` continues the session of the
step it names. The history a step's adapter receives is the turns of its chain — the named
step, the step that one named, and so on back to the one that opened the session — in that
order. The hash of a step's resolved inputs covers its prompt after variables, the adapter
profile's settings and that history, so a change upstream changes every step downstream.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from agentworks.workflows.definition import Step, WorkflowStart
from agentworks.workflows.records import StepRecord


def steps_by_label(start: WorkflowStart) -> dict[str, Step]:
    return {step.label: step for _, step in start.steps()}


def chain(start: WorkflowStart, label: str) -> list[str]:
    """`label` and the steps whose session it continues, the session's opener first."""
    steps = steps_by_label(start)
    found = [label]
    while (ref := steps[found[-1]].session_ref) is not None:
        found.append(ref)
    return list(reversed(found))


def opener(start: WorkflowStart, label: str) -> Step:
    """The step that opened the session `label` runs in (it names the adapter profile)."""
    return steps_by_label(start)[chain(start, label)[0]]


def history(start: WorkflowStart, step: Step, done: dict[str, StepRecord]) -> list[dict[str, str]]:
    """The turns a step's adapter sees before its own: empty for a step that opens a session."""
    if step.session_ref is None:
        return []
    turns: list[dict[str, str]] = []
    for label in chain(start, step.session_ref):
        turns.extend(done[label].turns)
    return turns


def input_hash(prompt: str, profile: dict[str, Any], earlier: list[dict[str, str]]) -> str:
    blob = json.dumps(
        {"prompt": prompt, "adapter": profile, "history": earlier},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(blob.encode()).hexdigest()
