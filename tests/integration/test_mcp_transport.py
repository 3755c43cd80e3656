"""The MCP endpoint's transport (SPEC §10, stateless JSON mode): everything it does not
serve is refused at once with a JSON-RPC error whose data holds the product's error shape
— never plain text, never a stream that stays open, never a 5xx."""

from __future__ import annotations

import base64
import json
import threading
from typing import Any

import pytest

from agentworks import limits
from tests.support.handlers import http_event, invoke_function

# The GET the TypeScript SDK (StreamableHTTPClientTransport) sends after initialize, to
# open its standalone SSE stream.
SSE_GET_HEADERS = {
    "accept": "text/event-stream",
    "mcp-protocol-version": "2025-11-25",
    "cache-control": "no-cache",
}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}}


def mcp(
    method: str,
    token: str | None,
    raw_body: str | None = None,
    headers: dict[str, str] | None = None,
    base64_body: bytes | None = None,
) -> dict[str, Any]:
    """The MCP function's answer to one request (in a thread: a hang fails, not blocks)."""
    event = http_event(method, "/mcp", token=token, raw_body=raw_body)
    event["headers"]["accept"] = "application/json, text/event-stream"
    event["headers"].update(headers or {})
    if base64_body is not None:
        event["body"], event["isBase64Encoded"] = base64.b64encode(base64_body).decode(), True
    answer: list[dict[str, Any]] = []
    worker = threading.Thread(
        target=lambda: answer.append(invoke_function("McpFunction", event)), daemon=True
    )
    worker.start()
    worker.join(timeout=20)
    assert answer, f"{method} /mcp did not answer within 20 s"
    return answer[0]


def rpc_error(response: dict[str, Any], status: int, rpc_code: int) -> dict[str, Any]:
    assert response["statusCode"] == status, response
    assert response["headers"]["Content-Type"] == "application/json"
    body = json.loads(response["body"])
    assert body["jsonrpc"] == "2.0" and body["error"]["code"] == rpc_code, body
    product = body["error"]["data"]["error"]
    assert product["code"] and product["message"] == body["error"]["message"]
    return body


@pytest.mark.parametrize("token_kind", ["valid", "none"])
def test_sdk_sse_get_is_405_allow_post(stack: Any, token_kind: str) -> None:
    """SPEC §10: stateless JSON mode has no SSE stream; the SDK's GET gets 405 + Allow."""
    token = stack.admin_token if token_kind == "valid" else None
    response = mcp("GET", token, headers=SSE_GET_HEADERS)
    body = rpc_error(response, 405, -32600)
    assert response["headers"]["Allow"] == "POST"
    assert body["error"]["data"]["error"]["code"] == "method_not_allowed"


@pytest.mark.parametrize("method", ["DELETE", "PUT", "PATCH", "HEAD", "OPTIONS", "TRACE"])
def test_other_methods_are_405(stack: Any, method: str) -> None:
    response = mcp(method, stack.admin_token, headers={"mcp-session-id": "abc"})
    rpc_error(response, 405, -32600)
    assert response["headers"]["Allow"] == "POST"


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", ""])
def test_wrong_content_type_is_415_in_jsonrpc(stack: Any, content_type: str) -> None:
    response = mcp(
        "POST",
        stack.admin_token,
        json.dumps(TOOLS_LIST),
        headers={"content-type": content_type},
    )
    body = rpc_error(response, 415, -32600)
    assert "application/json" in body["error"]["message"]


def test_content_type_with_charset_is_served(stack: Any) -> None:
    response = mcp(
        "POST",
        stack.admin_token,
        json.dumps(TOOLS_LIST),
        headers={"content-type": "application/json; charset=utf-8"},
    )
    assert response["statusCode"] == 200, response
    assert json.loads(response["body"])["id"] == 7


def test_body_at_the_size_limit_is_parsed_past_it_is_413(stack: Any) -> None:
    envelope = json.dumps({**TOOLS_LIST, "params": {"_meta": {"pad": ""}}})
    pad = "x" * (limits.REQUEST_BODY_MAX_BYTES - len(envelope))
    at_limit = envelope.replace('"pad": ""', f'"pad": "{pad}"')
    assert len(at_limit) == limits.REQUEST_BODY_MAX_BYTES
    assert mcp("POST", stack.admin_token, at_limit)["statusCode"] == 200
    past = at_limit.replace('"pad": "', '"pad": "x', 1)
    body = rpc_error(mcp("POST", stack.admin_token, past), 413, -32600)
    assert body["error"]["data"]["error"]["code"] == "payload_too_large"


def test_batch_is_invalid_request(stack: Any) -> None:
    """JSON-RPC batches were removed from MCP; one is refused with -32600, not validated."""
    batch = json.dumps([TOOLS_LIST, {**TOOLS_LIST, "id": 8}])
    body = rpc_error(mcp("POST", stack.admin_token, batch), 400, -32600)
    assert "Batches" in body["error"]["message"]
    for not_an_object in ("[]", "3", '"tools/list"', "null"):
        rpc_error(mcp("POST", stack.admin_token, not_an_object), 400, -32600)


BAD_JSON = {
    "not json": "{bad",
    "duplicate key": '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{},"id":2}',
    "NaN id": '{"jsonrpc":"2.0","id":NaN,"method":"tools/list","params":{}}',
    "Infinity": '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":-Infinity}}',
    "1e999": '{"jsonrpc":"2.0","id":1e999,"method":"tools/list","params":{}}',
    "5000 digits": '{"jsonrpc":"2.0","id":' + "9" * 5000 + ',"method":"tools/list"}',
    "lone surrogate": '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":"\\ud800"}}',
    "10000 deep": '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":'
    + "[" * 10_000
    + "]" * 10_000
    + "}}",
}


@pytest.mark.parametrize("case", sorted(BAD_JSON))
def test_body_that_is_not_strict_json_is_parse_error(stack: Any, case: str) -> None:
    rpc_error(mcp("POST", stack.admin_token, BAD_JSON[case]), 400, -32700)


def test_invalid_utf8_is_parse_error(stack: Any) -> None:
    raw = json.dumps(TOOLS_LIST).encode().replace(b"tools/list", b"tools/\xff\xfe")
    response = mcp("POST", stack.admin_token, base64_body=raw)
    assert "UTF-8" in rpc_error(response, 400, -32700)["error"]["message"]


def test_nesting_and_numbers_at_their_limits_reach_the_server(stack: Any) -> None:
    """At JSON_MAX_DEPTH and JSON_NUMBER_MAX_CHARS the request is served; one past, refused."""
    # The envelope object is level 1, params level 2: pad levels under params._meta.
    inner = limits.JSON_MAX_DEPTH - 3
    deep = {**TOOLS_LIST, "params": {"_meta": {"x": "[" * inner + "]" * inner}}}
    text = json.dumps(deep).replace(
        '"' + "[" * inner + "]" * inner + '"', "[" * inner + "]" * inner
    )
    assert mcp("POST", stack.admin_token, text)["statusCode"] == 200
    deeper = text.replace("[", "[[", 1).replace("]", "]]", 1)
    rpc_error(mcp("POST", stack.admin_token, deeper), 400, -32700)
    number = "1" * limits.JSON_NUMBER_MAX_CHARS
    at_limit = json.dumps(TOOLS_LIST).replace('"id": 7', f'"id": {number}')
    reply = mcp("POST", stack.admin_token, at_limit)
    assert reply["statusCode"] == 200 and json.loads(reply["body"])["id"] == int(number)
    rpc_error(mcp("POST", stack.admin_token, at_limit.replace(number, number + "1")), 400, -32700)


def test_f3_args_nested_past_the_limit_are_refused_over_mcp(stack: Any, api: Any) -> None:
    from tests.integration.crew_support import CONTRACTS

    assert api("POST", "/v1/crews", stack.admin_token, CONTRACTS).status == 201
    args: dict[str, Any] = {"text": "t"}
    for _ in range(limits.ARGS_MAX_DEPTH):
        args = {"text": "t", "more": args}
    call = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "tools/call",
        "params": {
            "name": "functions",
            "arguments": {
                "action": "call", "target": "crew:contracts", "function": "summarize",
                "args": args,
            },
        },
    }  # fmt: skip
    reply = json.loads(mcp("POST", stack.admin_token, json.dumps(call))["body"])
    result = reply["result"]
    assert result["isError"] is True
    error = result["structuredContent"]["error"]
    assert error["code"] == "invalid_request" and error["field"] == "args"
    assert f"{limits.ARGS_MAX_DEPTH} levels" in error["message"]
