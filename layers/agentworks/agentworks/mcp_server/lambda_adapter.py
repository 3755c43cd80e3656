"""Serves one API Gateway HTTP API (payload 2.0) event with the MCP app.

The bearer token is resolved here (identity.bearer, the same middleware as the REST API);
without a principal the request is refused with a JSON-RPC error, status 401, whose data
holds the product's error shape.
"""

from __future__ import annotations

from typing import Any

from mangum import Mangum

from agentworks.asgi_loop import own_event_loop
from agentworks.authentication import authenticate_event
from agentworks.errors import Unauthenticated
from agentworks.mcp_server import transport
from agentworks.mcp_server.principal import acting_as
from agentworks.mcp_server.server import asgi_app
from agentworks.mcp_server.transport import INTERNAL, UNAUTHENTICATED
from agentworks.observability import logger


def handle_event(event: dict[str, Any], context: Any) -> dict[str, Any]:
    refused_by_transport = transport.refusal(event)
    if refused_by_transport is not None:
        return refused_by_transport
    try:
        principal = authenticate_event(event)
    except Unauthenticated as refused:
        return _jsonrpc_error(event, 401, UNAUTHENTICATED, refused.code, refused.message)
    try:
        with acting_as(principal), own_event_loop():
            # lifespan="auto": Mangum starts and stops the session manager per request.
            response = Mangum(asgi_app(), lifespan="auto")(event, context)
    except Exception:
        # Never a stack trace to the caller; the log has it (without bodies or tokens).
        logger.exception("mcp request failed")
        return _jsonrpc_error(event, 500, INTERNAL, "internal", "Internal error; retry later.")
    return transport.as_jsonrpc(event, response)


def _jsonrpc_error(
    event: dict[str, Any], status: int, rpc_code: int, code: str, message: str
) -> dict[str, Any]:
    return transport.jsonrpc_error(status, rpc_code, code, message, transport.request_id(event))
