"""Workflow runner: the Lambda behind statemachines/workflow_run.asl.json's task states."""

from __future__ import annotations

from typing import Any

from agentworks.observability import logger, observed_handler
from agentworks.runtime import workflow_engine


@observed_handler()
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    logger.append_keys(run_id=event.get("run_id"), action=event.get("action"))
    return workflow_engine().handle(event, _time_left(context))


def _time_left(context: Any) -> Any:
    """The invocation's remaining seconds, read when a tool call asks (issue 28)."""
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    return None if remaining is None else lambda: remaining() / 1000
