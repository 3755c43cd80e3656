"""Step runner: the Lambda behind statemachines/function_call.asl.json's task states."""

from __future__ import annotations

from typing import Any

from agentworks.observability import logger, observed_handler
from agentworks.runtime import services


@observed_handler()
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    logger.append_keys(call_id=event.get("call_id"), action=event.get("action"))
    return services().crews.runner.handle(event, _time_left(context))


def _time_left(context: Any) -> Any:
    """The invocation's remaining seconds, read when a tool call asks (issue 28)."""
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    return None if remaining is None else lambda: remaining() / 1000
