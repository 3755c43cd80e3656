"""Step runner: the Lambda behind statemachines/function_call.asl.json's task states."""

from __future__ import annotations

from typing import Any

from agentworks.observability import logger, metrics, tracer
from agentworks.runtime import services


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    logger.append_keys(call_id=event.get("call_id"), action=event.get("action"))
    return services().crews.runner.handle(event, _time_left(context))


def _time_left(context: Any) -> Any:
    """The invocation's remaining seconds, read when a tool call asks (issue 28)."""
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    return None if remaining is None else lambda: remaining() / 1000
