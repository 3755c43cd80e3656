"""Step runner: the Lambda behind statemachines/function_call.asl.json's task states."""

from __future__ import annotations

from typing import Any

from agentworks.observability import logger, observed_handler
from agentworks.runtime import services


@observed_handler()
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    logger.append_keys(call_id=event.get("call_id"), action=event.get("action"))
    return services().crews.runner.handle(event)
