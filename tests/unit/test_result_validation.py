"""F6: a result is checked against the output schema up to RESULT_VALIDATION_MAX_BYTES of
JSON; a larger one fails validation as too large (never checked, never stored inline)."""

from __future__ import annotations

import json

from agentworks import limits
from agentworks.crews.runner import result_problem

SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


def _result_of(size: int) -> dict[str, str]:
    value = {"text": ""}
    value["text"] = "x" * (size - len(json.dumps(value)))
    assert len(json.dumps(value).encode()) == size
    return value


def test_a_result_at_the_validation_bound_is_checked_and_one_byte_more_is_too_large():
    assert result_problem(True, _result_of(limits.RESULT_VALIDATION_MAX_BYTES), SCHEMA) is None
    past = result_problem(True, _result_of(limits.RESULT_VALIDATION_MAX_BYTES + 1), SCHEMA)
    assert past == "the result is larger than 16 MiB"
    # At the bound the schema still applies.
    wrong = {"text": 7, "pad": "x" * (limits.RESULT_VALIDATION_MAX_BYTES - 30)}
    assert "text" in (result_problem(True, wrong, SCHEMA) or "")
