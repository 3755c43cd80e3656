"""Business metrics are counted once per operation, in the services, whichever surface
(HTTP or MCP) carried it — a retry with the same submission_id counts nothing."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.integration.test_mcp_handler import McpCaller, connection, load_handler_module
from tests.support.metrics import counted_metrics


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    return counted_metrics(monkeypatch)


def test_sends_and_reads_count_once_over_http_and_mcp(stack, api, agents, counted) -> None:
    bob = agents.named("bob")
    sender = agents.connection("ext")["token"]
    body = {"target": "agent:bob", "message": "hi", "submission_id": "s-1"}
    assert api("POST", "/v1/messages", sender, body).status == 201
    assert api("POST", "/v1/messages", sender, body).status == 200  # replayed: not counted
    assert api("GET", "/v1/messages", bob, query={"agent_name": "bob"}).status == 200
    assert (counted["MessagesSent"], counted["MessagesRead"]) == (1, 1)

    mcp = McpCaller(load_handler_module(), connection(stack, "mcp-sender"))
    mcp.ok(action="send", target="agent:bob", message="over MCP")
    McpCaller(load_handler_module(), bob).ok(action="read", agent_name="bob")
    assert (counted["MessagesSent"], counted["MessagesRead"]) == (2, 3)
