"""Relay runner: the Lambda behind statemachines/relay_run.asl.json's task states."""

from __future__ import annotations

from typing import Any

from agentworks.observability import logger, observed_handler
from agentworks.runtime import relay_host


@observed_handler()
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    logger.append_keys(run_id=event.get("run_id"), action=event.get("action"))
    return relay_host().handle(event)
