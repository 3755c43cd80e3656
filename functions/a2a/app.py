"""A2A function: `/a2a`, every Crew an A2A agent (issue 30 §1), and `/a2a-callbacks`, external
A2A agents' push notifications about tasks calls and steps wait for (§2).

Thin: the handler, cards and routes live in the runtime layer (agentworks.a2a_server). The
a2a SDK (protobuf types, its dispatchers) loads on the first request, not at init.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.logging import correlation_paths

from agentworks.observability import observed_handler


@observed_handler(correlation_paths.API_GATEWAY_HTTP)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    from agentworks.a2a_server import task_callbacks

    if task_callbacks.is_callback(event):  # an external agent's notice of a task we wait for
        return task_callbacks.handle_callback(event)
    from agentworks.a2a_server.lambda_adapter import handle_event

    return handle_event(event, context)
