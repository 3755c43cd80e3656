"""What the stateless JSON transport serves, checked before the SDK sees a request, and the
one JSON-RPC error shape for everything refused at the transport.

The SDK would answer some of these itself, but not always in JSON-RPC (plain-text 400/413)
and not always at all: a GET opens an SSE stream that, stateless, never sends or closes.
"""

from __future__ import annotations

import json
from typing import Any

from agentworks import json_input, limits

# JSON-RPC 2.0 codes.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INTERNAL = -32603
# The "server error" range; the SDK uses -32000…-32099 for its own transport errors.
UNAUTHENTICATED = -32001


def jsonrpc_error(
    status: int,
    rpc_code: int,
    code: str,
    message: str,
    request_id: Any = None,
    headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A Lambda proxy result carrying a JSON-RPC error with the product's error in `data`."""
    body = {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {
            "code": rpc_code,
            "message": message,
            # The product's error shape, as every other surface returns it.
            "data": {"error": {"code": code, "message": message}},
        },
    }
    return {
        "statusCode": status,
        "headers": {"Content-Type": "application/json", **(headers or {})},
        "body": json.dumps(body),
        "isBase64Encoded": False,
    }


def request_id(event: dict[str, Any]) -> Any:
    """The JSON-RPC id of the request, when the body is one readable request."""
    try:
        parsed = json_input.loads(json_input.body_text(event))
    except json_input.InvalidJson:
        return None
    return parsed.get("id") if isinstance(parsed, dict) else None


def refusal(event: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON-RPC error for a request this transport does not serve; None to serve it."""
    method = ((event.get("requestContext") or {}).get("http") or {}).get("method", "")
    if method != "POST":
        # Stateless JSON mode: no SSE stream to GET, no session to DELETE (MCP spec:
        # a server without a stream answers GET with 405).
        return jsonrpc_error(
            405,
            INVALID_REQUEST,
            "method_not_allowed",
            f"{method or 'This method'} is not served here: send JSON-RPC requests with POST.",
            headers={"Allow": "POST"},
        )
    headers = {str(k).lower(): str(v) for k, v in (event.get("headers") or {}).items()}
    media_type = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media_type != "application/json":
        return jsonrpc_error(
            415,
            INVALID_REQUEST,
            "unsupported_media_type",
            "Send the JSON-RPC request with 'Content-Type: application/json'.",
        )
    if json_input.body_too_large(event):
        return jsonrpc_error(
            413,
            INVALID_REQUEST,
            "payload_too_large",
            f"Request bodies are limited to {limits.REQUEST_BODY_MAX_BYTES // 1024} KiB.",
        )
    try:
        parsed = json_input.loads(json_input.body_text(event))
    except json_input.InvalidJson as invalid:
        return jsonrpc_error(400, PARSE_ERROR, "invalid_request", f"Parse error: {invalid}")
    if isinstance(parsed, list):
        return jsonrpc_error(
            400,
            INVALID_REQUEST,
            "invalid_request",
            "Batches are not supported: send one JSON-RPC request per POST.",
        )
    if not isinstance(parsed, dict):
        return jsonrpc_error(
            400, INVALID_REQUEST, "invalid_request", "The body must be one JSON-RPC object."
        )
    return None


def as_jsonrpc(event: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    """The SDK's response, with any non-JSON error it wrote (plain text) as a JSON-RPC one."""
    status = int(response["statusCode"])
    response["statusCode"] = status  # Starlette may hand back an HTTPStatus
    if status < 400:
        return response
    try:
        json.loads(response.get("body") or "")
    except ValueError:
        text = str(response.get("body") or "").strip()[:200] or f"HTTP {status}"
        return jsonrpc_error(status, INVALID_REQUEST, "invalid_request", text, request_id(event))
    return response
