"""Issue 28 items 2–5, the rules of one turn's MCP tool use (crews.mcp_tool_use) against a
fake service: the per-turn bound on calls, the record's inline bound on arguments and
results (larger ones kept outside it), the remaining time passed as the call's bound, a
removed server's clear message, and the call record's budget for tool calls. The real
server's side is tests/integration/test_mcp_tool_use.py."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from agentworks import limits
from agentworks.crews.call_bounds import bound_record
from agentworks.crews.mcp_tool_use import TurnMcpTools
from agentworks.crews.models import CallRecord
from agentworks.errors import McpServerFailed, Unavailable
from agentworks.identity.models import Principal
from agentworks.mcp_servers.client import ToolResult
from agentworks.mcp_servers.declarations import parse_declaration

DECLARED = parse_declaration([{"server": "tools", "tools": ["echo"]}])
CALLER = Principal("acct_1", "conn_1", frozenset({"functions:call"}))


class FakeServers:
    def __init__(self, raises: Exception | None = None) -> None:
        self.calls: list[dict[str, Any]] = []
        self.raises = raises

    def call(self, principal: Any, name: str, tool: str, arguments: Any, **bounds: Any) -> Any:
        self.calls.append({"name": name, "tool": tool, "arguments": arguments, **bounds})
        if self.raises is not None:
            raise self.raises
        text = str(arguments.get("text", ""))
        return ToolResult(False, [{"type": "text", "text": text}], None, len(text))


def _tools(servers: FakeServers, kept: dict[str, bytes] | None = None, **more: Any) -> Any:
    def keep(name: str, data: bytes) -> str:
        if kept is not None:
            kept[name] = data
        return name

    return TurnMcpTools(servers, DECLARED, lambda: CALLER, "functions:call", keep, **more)  # type: ignore[arg-type]


def test_a_turn_makes_at_most_the_bound_of_calls() -> None:
    servers = FakeServers()
    tools = _tools(servers)
    for _ in range(limits.MCP_CALLS_PER_TURN_MAX):
        assert tools.call("tools", "echo", {"text": "x"}).outcome == "ok"
    past = tools.call("tools", "echo", {"text": "x"})
    assert past.outcome == "refused" and str(limits.MCP_CALLS_PER_TURN_MAX) in past.text
    assert len(servers.calls) == limits.MCP_CALLS_PER_TURN_MAX  # the one past never left
    assert len(tools.calls) == limits.MCP_CALLS_PER_TURN_MAX + 1  # …and is recorded


def _stored(text: str) -> int:
    """The record's measure, computed here from the documented rule."""
    content = {"arguments": {"text": text}, "result": text}
    return len(json.dumps(content, ensure_ascii=False, separators=(",", ":")).encode())


def test_arguments_and_results_up_to_the_bound_sit_in_the_record_larger_ones_outside() -> None:
    fixed = _stored("")
    each = (limits.MCP_CALL_RECORD_INLINE_MAX_BYTES - fixed) // 2
    at = "a" * each
    assert _stored(at) <= limits.MCP_CALL_RECORD_INLINE_MAX_BYTES < _stored(at + "a")
    kept: dict[str, bytes] = {}
    tools = _tools(FakeServers(), kept)
    tools.call("tools", "echo", {"text": at})
    tools.call("tools", "echo", {"text": at + "a"})
    inline, outside = tools.calls
    assert inline["arguments"] == {"text": at} and inline["result"] == at
    assert "content_file" not in inline
    assert "arguments" not in outside and outside["content_file"] == "mcp-calls/002.json"
    assert json.loads(kept["mcp-calls/002.json"]) == {
        "arguments": {"text": at + "a"},
        "result": at + "a",
    }


def test_the_call_is_bounded_by_the_turns_remaining_time() -> None:
    servers = FakeServers()
    _tools(servers, time_left=lambda: 12.5).call("tools", "echo", {"text": "x"})
    assert servers.calls[0]["time_left"] == 12.5
    assert servers.calls[0]["declaration"] == DECLARED


def test_a_removed_server_and_a_failing_one_say_so_as_the_agents_error() -> None:
    gone = _tools(FakeServers(Unavailable())).call("tools", "echo", {})
    assert gone.outcome == "refused" and "No MCP server tools is attached" in gone.text
    down = _tools(FakeServers(McpServerFailed("MCP server tools: it did not answer"))).call(
        "tools", "echo", {}
    )
    assert down.outcome == "failed" and down.is_error and "did not answer" in down.text


def test_the_call_record_keeps_its_newest_tool_calls_within_the_budget() -> None:
    record = CallRecord(
        "call_1", "acct_1", "helper", "crew_1", "lookup", {}, "conn_1", "running", 0, 0
    )
    entry = {"server": "tools", "tool": "echo", "outcome": "ok", "result": "x" * 1000}
    size = len(json.dumps(entry, separators=(",", ":")).encode())
    fits = (limits.CALL_MCP_CALLS_MAX_BYTES - 2 + 1) // (size + 1)  # "[]" and the commas
    at = replace(record, mcp_calls=[{**entry, "n": i % 10} for i in range(fits)])
    assert len(bound_record(at).mcp_calls) == fits
    past = replace(record, mcp_calls=[{**entry, "n": i % 10} for i in range(fits + 1)])
    kept = bound_record(past).mcp_calls
    assert len(kept) == fits and kept[-1] == past.mcp_calls[-1]  # the oldest went


def test_a_scripted_mcp_rule_is_checked_when_the_settings_are() -> None:
    from agentworks.crews.adapters.scripted import validate

    good = {
        "type": "scripted",
        "rules": [{"default": "x"}, {"when": "a", "mcp": {"server": "s", "tool": "t"}}],
    }
    assert validate(good) == []
    for bad in (
        {"server": "s"},
        {"server": "s", "tool": "t", "arguments": []},
        {"server": "s", "tool": "t", "x": 1},
    ):
        problems = validate({"type": "scripted", "rules": [{"when": "a", "mcp": bad}]})
        assert any("'mcp' must be" in p for p in problems), bad


def test_a_scripted_mcp_rule_without_tool_access_fails_the_turn() -> None:
    import pytest

    from agentworks.crews.adapters.base import AdapterError, TurnRequest
    from agentworks.crews.adapters.scripted import ScriptedAdapter

    adapter = ScriptedAdapter(
        {"type": "scripted", "rules": [{"when": "a", "mcp": {"server": "s", "tool": "t"}}]}
    )
    with pytest.raises(AdapterError, match="no access to attached MCP servers"):
        adapter.run_turn(TurnRequest("c", "", {}, "message", "a"))
