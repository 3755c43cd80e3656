"""The MCP function's handler driven with API Gateway HTTP API v2 events (SPEC §10).

Each event carries the bearer token of a real connection of the in-process moto stack,
so the tools run the same domain services as HTTP (M1–M8, M12, A3, A5).
"""

from __future__ import annotations

import importlib.util
import itertools
import json
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from agentworks import limits

ROOT = Path(__file__).resolve().parents[2]
EVENTS = ROOT / "events"
ACTIONS = {
    *("send", "read", "state", "register", "unregister", "list_agents", "ack", "wakeup"),
    *("request", "reply", "note", "requests", "cancel_request", "decline"),
}


def load_handler_module() -> ModuleType:
    # Every function file is named app.py: load this one by path, under its own name.
    spec = importlib.util.spec_from_file_location("mcp_function_app", ROOT / "functions/mcp/app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def mcp_app() -> ModuleType:
    return load_handler_module()


def lambda_context() -> Any:
    return SimpleNamespace(
        function_name="agentworks-mcp",
        memory_limit_in_mb=1024,
        invoked_function_arn="arn:aws:lambda:us-east-1:123456789012:function:agentworks-mcp",
        aws_request_id="00000000-0000-0000-0000-000000000000",
    )


def event(name: str, *, token: str | None = None, body: Any = None) -> dict[str, Any]:
    loaded = json.loads((EVENTS / name).read_text())
    if token is not None:
        loaded["headers"]["authorization"] = f"Bearer {token}"
    if body is not None:
        loaded["body"] = json.dumps(body)
    return loaded


class McpCaller:
    """Sends JSON-RPC requests through the handler as one connection."""

    def __init__(self, app: ModuleType, token: str) -> None:
        self.app = app
        self.token = token
        self.ids = itertools.count(10)

    def raw(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": next(self.ids), "method": method, "params": params}
        response = self.app.handler(
            event("mcp_tools_list.json", token=self.token, body=body), lambda_context()
        )
        assert response["statusCode"] == 200, response
        return json.loads(response["body"])

    def tool(self, **arguments: Any) -> dict[str, Any]:
        reply = self.raw("tools/call", {"name": "messages", "arguments": arguments})
        assert "result" in reply, reply
        return reply["result"]

    def ok(self, **arguments: Any) -> dict[str, Any]:
        result = self.tool(**arguments)
        assert result.get("isError") is not True, result
        return result["structuredContent"]


def connection(stack: Any, name: str, scopes: list[str] | None = None) -> str:
    """A new connection's bearer token."""
    admin = stack.principal(stack.admin_token)
    return str(stack.services.identity.create_connection(admin, name, scopes).token)


def connection_id(token: str) -> str:
    return token.split(".")[2]


def text_of(result: dict[str, Any]) -> str:
    return "\n".join(block["text"] for block in result["content"] if block["type"] == "text")


def test_initialize_names_the_server_and_offers_tools(stack: Any, mcp_app: ModuleType) -> None:
    """SPEC §10: initialize over stateless streamable HTTP, JSON response."""
    worker = connection(stack, "worker")
    response = mcp_app.handler(event("mcp_initialize.json", token=worker), lambda_context())
    assert response["statusCode"] == 200
    assert response["headers"]["content-type"].startswith("application/json")
    result = json.loads(response["body"])["result"]
    assert result["serverInfo"]["name"] == "agentworks"
    assert "tools" in result["capabilities"]
    assert "mcp-session-id" not in response["headers"]  # stateless
    assert "action=send" in result["instructions"]


def test_tools_list_describes_the_messages_tool(stack: Any, mcp_app: ModuleType) -> None:
    """SPEC §10: input schema with the action enum, annotations and an output schema."""
    response = mcp_app.handler(
        event("mcp_tools_list.json", token=connection(stack, "worker")), lambda_context()
    )
    tools = json.loads(response["body"])["result"]["tools"]
    (tool,) = [t for t in tools if t["name"] == "messages"]  # crews/functions: their own tests
    assert tool["name"] == "messages"
    schema = tool["inputSchema"]
    assert set(schema["properties"]["action"]["enum"]) == ACTIONS
    assert schema["required"] == ["action"]
    assert {
        "agent_name", "target", "inbox_id", "message", "submission_id", "after",
        "wait_seconds", "limit", "message_id", "delivery", "purpose", "provider",
        "allowed_connection_ids",
    } <= set(schema["properties"])  # fmt: skip
    assert schema["properties"]["message"]["maxLength"] == limits.MESSAGE_MAX_CHARS
    assert schema["properties"]["wait_seconds"]["maximum"] == limits.WAIT_MAX_SECONDS
    # The descriptions teach the protocol: keep inbox_id, reply_address, retry key, acks.
    assert "KEEP" in tool["description"] and "reply_address" in tool["description"]
    assert "SAME submission_id" in schema["properties"]["submission_id"]["description"]
    assert "admitted" in schema["properties"]["delivery"]["description"]
    assert tool["annotations"] == {
        "title": "AgentWorks messages",
        "readOnlyHint": False,
        "idempotentHint": False,
        "openWorldHint": False,
    }
    assert tool["outputSchema"]["type"] == "object"
    assert "anyOf" in tool["outputSchema"]


def test_every_action_through_tools_call(stack: Any, mcp_app: ModuleType) -> None:
    """M4 register/list/unregister, M1 send, M6 mailbox read, M3 inbox read, M7 ack,
    M8 state and M12 delivered text, all through tools/call."""
    worker = McpCaller(mcp_app, connection(stack, "worker"))
    reviewer = McpCaller(mcp_app, connection(stack, "reviewer"))

    registered = worker.ok(action="register", agent_name="worker", purpose="builds things")
    assert registered["agent_name"] == "worker" and registered["purpose"] == "builds things"
    reviewer.ok(action="register", agent_name="Reviewer", purpose="reviews PRs")
    names = [a["agent_name"] for a in worker.ok(action="list_agents")["agents"]]
    assert names == ["Reviewer", "worker"]

    sent = worker.ok(
        action="send", agent_name="worker", target="agent:reviewer", message="Please review PR 42"
    )
    assert sent["receipt"] == "stored" and sent["replayed"] is False
    assert sent["inbox_id"].startswith("ibx_")

    mailbox = reviewer.tool(action="read", agent_name="reviewer")
    page = mailbox["structuredContent"]
    assert page["kind"] == "mailbox"
    (first,) = page["messages"]
    assert first["body"] == "Please review PR 42" and first["sender"] == "agent:worker"
    # M12: the text leads with the delivered text, which frames the body.
    text = text_of(mailbox)
    assert first["delivered_text"] in text
    assert text.index(first["delivered_text"]) < text.index("next_cursor")
    assert "another agent's" in first["delivered_text"] and first["reply_address"] in text

    # A read from the returned cursor has nothing new.
    again = reviewer.ok(action="read", agent_name="reviewer", after=page["next_cursor"])
    assert again["messages"] == []

    reply = reviewer.ok(
        action="send", agent_name="reviewer", inbox_id=first["reply_address"], message="LGTM"
    )
    inbox = worker.ok(action="read", inbox_id=sent["inbox_id"], agent_name="worker")
    assert inbox["kind"] == "inbox"
    assert [(m["message_id"], m["body"]) for m in inbox["messages"]] == [
        (reply["message_id"], "LGTM")
    ]

    acked = reviewer.ok(action="ack", message_id=first["message_id"], delivery="admitted")
    assert acked == {"message_id": first["message_id"], "receipt": "admitted"}
    state = worker.ok(action="state", inbox_id=sent["inbox_id"])
    assert state["delivery_records"][0] == {
        "message_id": sent["message_id"],
        "created_at": sent["created_at"],
        "receipt": "admitted",
    }
    assert "body" not in json.dumps(state)

    gone = worker.ok(action="unregister", agent_name="worker")
    assert gone == {"agent_name": "worker", "unregistered": True}
    assert [a["agent_name"] for a in reviewer.ok(action="list_agents")["agents"]] == ["Reviewer"]


def test_send_to_unknown_agent_is_an_unavailable_error_result(
    stack: Any, mcp_app: ModuleType
) -> None:
    """A5 / M1: the domain error becomes is_error with the HTTP error shape."""
    worker = McpCaller(mcp_app, connection(stack, "worker"))
    result = worker.tool(action="send", target="agent:nobody", message="hello?")
    assert result["isError"] is True
    assert result["structuredContent"]["error"]["code"] == "unavailable"
    assert json.loads(text_of(result)) == result["structuredContent"]
    assert "Traceback" not in text_of(result)


def test_retried_send_with_submission_id_replays(stack: Any, mcp_app: ModuleType) -> None:
    """M2: same submission_id and content returns the original receipt, marked replayed."""
    worker = McpCaller(mcp_app, connection(stack, "worker"))
    McpCaller(mcp_app, connection(stack, "reviewer")).ok(action="register", agent_name="reviewer")
    args = {"action": "send", "target": "agent:reviewer", "message": "hi", "submission_id": "s-1"}
    first = worker.ok(**args)
    retry = worker.ok(**args)
    assert retry["message_id"] == first["message_id"] and retry["replayed"] is True
    conflict = worker.tool(**{**args, "message": "something else"})
    assert conflict["structuredContent"]["error"]["code"] == "conflict"


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"action": "explode"}, None),
        ({"action": "read", "agent_name": "x", "message": "stray"}, "message"),
        ({"action": "ack", "message_id": "msg_x"}, "delivery"),
        ({"action": "register"}, "agent_name"),
        ({"action": "read", "inbox_id": "not-an-inbox"}, "inbox_id"),
        ({"action": "ack", "message_id": "m", "delivery": "eaten"}, None),
        ({"action": "register", "agent_name": "x", "purpose": "p" * 513}, None),
        # M1 / M11: the domain's length rule, counted in characters, as over HTTP.
        (
            {
                "action": "send",
                "target": "agent:x",
                "message": "é" * (limits.MESSAGE_MAX_CHARS + 1),
            },
            "message",
        ),
        (
            {"action": "read", "agent_name": "x", "wait_seconds": limits.WAIT_MAX_SECONDS + 1},
            "wait_seconds",
        ),
        ({"action": "read", "agent_name": "x", "limit": limits.PAGE_MAX + 1}, "limit"),
    ],
)
def test_bad_arguments_are_invalid_request_results(
    stack: Any, mcp_app: ModuleType, arguments: dict[str, Any], field: str | None
) -> None:
    """Schema and argument errors have the same error shape as domain errors."""
    result = McpCaller(mcp_app, connection(stack, "worker")).tool(**arguments)
    assert result["isError"] is True
    error = result["structuredContent"]["error"]
    assert error["code"] == "invalid_request"
    if field is not None:
        assert error["field"] == field


def test_read_waits_through_the_domain_long_poll(stack: Any, mcp_app: ModuleType) -> None:
    """M3: wait_seconds reaches the service's long poll (on the test's clock)."""
    worker = McpCaller(mcp_app, connection(stack, "worker"))
    worker.ok(action="register", agent_name="worker")
    started = stack.clock.now()
    page = worker.ok(action="read", agent_name="worker", wait_seconds=5)
    assert page["messages"] == []
    assert 4 <= stack.clock.now() - started <= 5


def test_oversized_request_is_refused_before_parsing(stack: Any, mcp_app: ModuleType) -> None:
    """The MCP endpoint keeps the API's request-body bound (limits.REQUEST_BODY_MAX_BYTES)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "messages", "arguments": {"action": "send", "target": "agent:x",
        "message": "x" * (limits.REQUEST_BODY_MAX_BYTES + 1)}}}  # fmt: skip
    response = mcp_app.handler(
        event("mcp_tools_list.json", token=connection(stack, "worker"), body=body),
        lambda_context(),
    )
    assert response["statusCode"] == 413


def test_missing_scope_is_forbidden(stack: Any, mcp_app: ModuleType) -> None:
    """A2 / A4: a read-only connection cannot send; scopes come from the authorizer."""
    reader = McpCaller(mcp_app, connection(stack, "reader", ["messages:read"]))
    result = reader.tool(action="send", target="agent:anyone", message="hi")
    assert result["structuredContent"]["error"]["code"] == "forbidden"


def test_principal_does_not_leak_between_requests(stack: Any, mcp_app: ModuleType) -> None:
    """A4: each request acts as its own connection (a context variable, not a global)."""
    owner = McpCaller(mcp_app, connection(stack, "owner"))
    other = McpCaller(mcp_app, connection(stack, "other"))
    owner.ok(action="register", agent_name="private")
    owner.ok(action="read", agent_name="private")
    # `other` is not on the name's allow-list: reading its mailbox is refused.
    refused = other.tool(action="read", agent_name="private")
    assert refused["structuredContent"]["error"]["code"] == "unavailable"
    assert owner.ok(action="read", agent_name="private")["kind"] == "mailbox"


def test_register_allow_list_through_the_tool(stack: Any, mcp_app: ModuleType) -> None:
    """M5: allowed_connection_ids admits another connection; re-registering without the
    field keeps the list; [] leaves only the registering connection."""
    owner_token, helper_token = connection(stack, "owner"), connection(stack, "helper")
    owner, helper = McpCaller(mcp_app, owner_token), McpCaller(mcp_app, helper_token)
    view = owner.ok(
        action="register", agent_name="shared", allowed_connection_ids=[connection_id(helper_token)]
    )
    assert view["allowed_connection_ids"] == [
        connection_id(owner_token),
        connection_id(helper_token),
    ]
    assert helper.ok(action="read", agent_name="shared")["kind"] == "mailbox"
    kept = owner.ok(action="register", agent_name="shared", purpose="now with a purpose")
    assert kept["allowed_connection_ids"] == view["allowed_connection_ids"]
    owner.ok(action="register", agent_name="shared", allowed_connection_ids=[])
    refused = helper.tool(action="read", agent_name="shared")
    assert refused["structuredContent"]["error"]["code"] == "unavailable"


def test_request_without_token_is_refused(stack: Any, mcp_app: ModuleType) -> None:
    """A3: no token → 401 with a JSON-RPC error (the same error shape in data)."""
    response = mcp_app.handler(event("mcp_unauthenticated.json"), lambda_context())
    assert response["statusCode"] == 401
    body = json.loads(response["body"])
    assert body["id"] == 5 and body["jsonrpc"] == "2.0"
    assert body["error"]["data"]["error"]["code"] == "unauthenticated"


def test_bad_revoked_and_forged_tokens_are_refused_alike(stack: Any, mcp_app: ModuleType) -> None:
    """A3 / A5: garbage, a forged secret and a revoked token get the same 401 body as none."""
    token = connection(stack, "worker")
    account, conn = token.split(".")[1:3]
    admin = stack.principal(stack.admin_token)
    revoked = connection(stack, "gone")
    stack.services.identity.revoke(admin, connection_id(revoked))
    bodies = set()
    for bad in (None, "garbage", f"aw1.{account}.{conn}.forged-secret", revoked, "x" * 300):
        response = mcp_app.handler(event("mcp_tools_list.json", token=bad), lambda_context())
        assert response["statusCode"] == 401
        bodies.add(json.dumps(json.loads(response["body"])["error"], sort_keys=True))
    assert len(bodies) == 1
    assert McpCaller(mcp_app, token).raw("tools/list", {})["result"]["tools"]


def test_sample_events_run(stack: Any, mcp_app: ModuleType) -> None:
    """events/mcp_*.json (shared with `sam local invoke`) are valid requests."""
    worker, reviewer = connection(stack, "worker"), connection(stack, "reviewer")
    McpCaller(mcp_app, worker).ok(action="register", agent_name="worker")
    McpCaller(mcp_app, reviewer).ok(action="register", agent_name="reviewer")
    sent = mcp_app.handler(event("mcp_tools_call_send.json", token=worker), lambda_context())
    receipt = json.loads(sent["body"])["result"]["structuredContent"]
    assert receipt["receipt"] == "stored"
    read = mcp_app.handler(event("mcp_tools_call_read.json", token=reviewer), lambda_context())
    (message,) = json.loads(read["body"])["result"]["structuredContent"]["messages"]
    assert message["message_id"] == receipt["message_id"]
    assert message["body"] == "The build is green; please review PR 42."
