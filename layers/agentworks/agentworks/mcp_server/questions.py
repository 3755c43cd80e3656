"""A call's pending question as an MCP elicitation, and the answer out of the client's result.

One form for every path that asks (F7): action=status's multi-round-trip result and the
tasks extension's `inputRequests` show the same question, and read the answer alike.
"""

from __future__ import annotations

from typing import Any

from mcp.types import ElicitRequest, ElicitRequestFormParams, ElicitResult

ANSWER_FIELD = "answer"


def elicitation(status: dict[str, Any], pending: dict[str, Any]) -> ElicitRequest:
    """The form asking `pending` (one of the status's `pending_inputs`) of the user."""
    message = (
        f"{status['target']} asks, while running {status['function']} (call "
        f"{status['call_id']}): {pending['question']}"
    )
    return ElicitRequest(
        params=ElicitRequestFormParams(
            message=message,
            requested_schema={
                "type": "object",
                "properties": {
                    ANSWER_FIELD: {
                        "type": "string",
                        "title": "Answer",
                        "description": "Your answer; the call continues with it.",
                        "minLength": 1,
                    }
                },
                "required": [ANSWER_FIELD],
            },
        )
    )


def accepted_answer(response: Any) -> str | None:
    """The answer of an accepted form; None when declined, cancelled, empty or not a form's
    result (then the question stays pending)."""
    if isinstance(response, dict):
        try:
            response = ElicitResult.model_validate(response)
        except ValueError:
            return None
    if not isinstance(response, ElicitResult) or response.action != "accept":
        return None
    value = (response.content or {}).get(ANSWER_FIELD)
    return value.strip() or None if isinstance(value, str) else None
