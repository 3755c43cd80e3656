"""API function: JSON REST under /v1. Thin: the routes live in the runtime layer."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.logging import correlation_paths

from agentworks.http_api.app import resolve
from agentworks.observability import observed_handler
from agentworks.shutdown import enable_in_lambda

# Lambda warns before retiring this environment only if an extension is registered, and
# only during init: the read tally (agentworks.usage.tally) is written then.
enable_in_lambda()


@observed_handler(correlation_paths.API_GATEWAY_HTTP)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return resolve(event, context)
