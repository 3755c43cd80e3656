"""Scheduler tick (EventBridge rate(1 minute)): retention sweeps now, wakeups later."""

from __future__ import annotations

from typing import Any

from agentworks.observability import count, logger, metrics, tracer
from agentworks.runtime import tick_services


@logger.inject_lambda_context
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    report = tick_services().sweep()
    count("InboxesRetired", report.retired_idle)
    count("RetiredForgotten", report.forgotten)
    logger.info("tick", extra=report.as_dict())
    return report.as_dict()
