"""Serves one API Gateway HTTP API (payload 2.0) event with the MCP app.

The HTTP API's Lambda authorizer has already checked the bearer token; its context is
the principal. Without one the request is refused with a JSON-RPC error, status 401.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from mangum import Mangum

from agentworks.mcp_server.principal import acting_as, principal_from_event
from agentworks.mcp_server.server import asgi_app
from agentworks.observability import logger

# JSON-RPC "server error" range; the SDK uses -32000…-32099 for its own transport errors.
UNAUTHENTICATED = -32001
INTERNAL = -32603


def handle_event(event: dict[str, Any], context: Any) -> dict[str, Any]:
    principal = principal_from_event(event)
    if principal is None:
        return _jsonrpc_error(
            event,
            401,
            UNAUTHENTICATED,
            "unauthenticated",
            "This endpoint needs 'Authorization: Bearer <token>'.",
        )
    logger.append_keys(account_id=principal.account_id, connection_id=principal.connection_id)
    try:
        with acting_as(principal), _event_loop():
            # lifespan="auto": Mangum starts and stops the session manager per request.
            response = Mangum(asgi_app(), lifespan="auto")(event, context)
    except Exception:
        # Never a stack trace to the caller; the log has it (without bodies or tokens).
        logger.exception("mcp request failed")
        return _jsonrpc_error(event, 500, INTERNAL, "internal", "Internal error; retry later.")
    # Starlette may hand back an HTTPStatus; Lambda's response wants a plain int.
    response["statusCode"] = int(response["statusCode"])
    return response


@contextmanager
def _event_loop() -> Iterator[None]:
    """A loop of this request's own (Mangum runs on the thread's current loop): closed after,
    so a host that serves each request on a new thread (the local stack) leaks no loops."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        yield
    finally:
        asyncio.set_event_loop(None)
        loop.close()


def _request_id(event: dict[str, Any]) -> Any:
    """The JSON-RPC id of the request, when the body is one readable request."""
    body = event.get("body") or ""
    try:
        if event.get("isBase64Encoded"):
            body = base64.b64decode(body).decode()
        parsed = json.loads(body)
    except (ValueError, TypeError):
        return None
    return parsed.get("id") if isinstance(parsed, dict) else None


def _jsonrpc_error(
    event: dict[str, Any], status: int, rpc_code: int, code: str, message: str
) -> dict[str, Any]:
    body = {
        "jsonrpc": "2.0",
        "id": _request_id(event),
        "error": {
            "code": rpc_code,
            "message": message,
            # The product's error shape, as every other surface returns it.
            "data": {"error": {"code": code, "message": message}},
        },
    }
    return {
        "statusCode": status,
        "headers": {"Content-Type": "application/json"},
        "body": json.dumps(body),
        "isBase64Encoded": False,
    }
