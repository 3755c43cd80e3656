"""Serves one API Gateway HTTP API (payload 2.0) event with the A2A app.

The bearer token is resolved here, by the same middleware as every other surface; without
a principal the request is refused (401, the product's error shape) before the SDK reads it.
"""

from __future__ import annotations

import json
from typing import Any

from mangum import Mangum

from agentworks import json_input, limits
from agentworks.a2a_server.app import asgi_app
from agentworks.asgi_loop import own_event_loop
from agentworks.authentication import authenticate_event
from agentworks.errors import AgentWorksError, Unauthenticated
from agentworks.observability import logger


def handle_event(event: dict[str, Any], context: Any) -> dict[str, Any]:
    if json_input.body_too_large(event):
        return _refusal(
            413,
            "payload_too_large",
            f"Request bodies are limited to {limits.REQUEST_BODY_MAX_BYTES // 1024} KiB.",
        )
    try:
        principal = authenticate_event(event)
    except Unauthenticated as refused:
        return _refusal(401, refused.code, refused.message, {"WWW-Authenticate": "Bearer"})
    try:
        with own_event_loop():
            response = Mangum(asgi_app(principal), lifespan="off")(event, context)
    except AgentWorksError as refused:
        return _refusal(refused.status, refused.code, refused.message)
    except Exception:
        # Never a stack trace to the caller; the log has it (without bodies or tokens).
        logger.exception("a2a request failed")
        return _refusal(500, "internal", "Internal error; retry later.")
    response["statusCode"] = int(response["statusCode"])
    return response


def _refusal(
    status: int, code: str, message: str, headers: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "statusCode": status,
        "headers": {"Content-Type": "application/json", **(headers or {})},
        "body": json.dumps({"error": {"code": code, "message": message}}),
        "isBase64Encoded": False,
    }
