"""W8: a step's final message against its `outputSchema` (re-prompted once on a mismatch)."""

from __future__ import annotations

import json

from agentworks.crews.adapters.base import TurnResult
from agentworks.crews.schema_check import SchemaProblem, check
from agentworks.workflows.definition import Step


def output_problem(step: Step, result: TurnResult) -> str | None:
    """W8: why the step's final message does not satisfy its outputSchema (None if it does)."""
    if step.output_schema is None:
        return None
    if result.has_result:
        value = result.result
    else:
        try:
            value = json.loads(result.final_text or "")
        except ValueError:
            return "the final message is not JSON matching the outputSchema"
    try:
        check(step.output_schema, value)
    except SchemaProblem as problem:
        return problem.message.replace("data", "output", 1)
    return None
