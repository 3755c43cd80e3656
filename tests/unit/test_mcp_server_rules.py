"""Attached MCP servers' rules that need no AWS (issue 28): what a definition may be, what an
`mcp_tools` declaration may be and what it admits, a call's timeout; each bound at its limit
and just past it."""

from __future__ import annotations

from typing import Any

import pytest

from agentworks import limits
from agentworks.errors import InvalidInput, McpServerFailed
from agentworks.mcp_servers.declarations import admit, parse_declaration
from agentworks.mcp_servers.models import parse_change, parse_definition
from agentworks.mcp_servers.service import _call_seconds

URL = "https://mcp.invalid/mcp"  # .invalid never resolves: saved, checked again at connect


def _definition(**changes: Any) -> dict[str, Any]:
    return {"name": "github", "url": URL, "headers": {"Authorization": "Bearer t"}, **changes}


def test_a_definition_is_name_url_and_headers() -> None:
    parsed = parse_definition(_definition(name="GitHub"))
    assert (parsed.name, parsed.url, parsed.headers) == (
        "github",
        URL,
        {"Authorization": "Bearer t"},
    )
    assert parse_definition({"name": "x", "url": URL}).headers == {}


def test_the_name_holds_its_length_and_fails_just_past_it() -> None:
    at = "n" * limits.MCP_SERVER_NAME_MAX_CHARS
    assert parse_definition(_definition(name=at)).name == at
    with pytest.raises(InvalidInput) as past:
        parse_definition(_definition(name=at + "n"))
    assert past.value.details["field"] == "name"
    for bad in ("", "-x", "a b", "a/b", "ä"):
        with pytest.raises(InvalidInput):
            parse_definition(_definition(name=bad))


def test_the_url_holds_its_length_and_fails_just_past_it() -> None:
    at = URL + "/" + "a" * (limits.MCP_SERVER_URL_MAX_CHARS - len(URL) - 1)
    assert len(at) == limits.MCP_SERVER_URL_MAX_CHARS
    assert parse_definition(_definition(url=at)).url == at
    with pytest.raises(InvalidInput) as past:
        parse_definition(_definition(url=at + "a"))
    assert past.value.details["field"] == "url"


def test_headers_hold_their_count_and_value_length_and_fail_just_past() -> None:
    many = {f"X-H{n}": "v" for n in range(limits.MCP_SERVER_HEADERS_MAX)}
    assert len(parse_definition(_definition(headers=many)).headers) == len(many)
    with pytest.raises(InvalidInput):
        parse_definition(_definition(headers={**many, "X-One-More": "v"}))
    value = "v" * limits.MCP_SERVER_HEADER_VALUE_MAX_CHARS
    assert parse_definition(_definition(headers={"X-Key": value})).headers["X-Key"] == value
    with pytest.raises(InvalidInput) as past:
        parse_definition(_definition(headers={"X-Key": value + "v"}))
    assert value not in past.value.message  # a refusal never repeats a value


@pytest.mark.parametrize(
    "headers",
    [
        {"Host": "evil"},
        {"Mcp-Session-Id": "x"},
        {"Content-Length": "1"},
        {"X-Key": "a\r\nInjected: 1"},
        {"X-Key": ""},
        {"Bad Name": "v"},
        {"X-Key": "v", "x-key": "w"},
        {"X-Key": 1},
    ],
)
def test_headers_the_client_sets_or_cannot_send_are_refused(headers: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput) as refused:
        parse_definition(_definition(headers=headers))
    assert refused.value.details["field"] == "headers"
    assert "Injected" not in refused.value.message


def test_unknown_fields_and_empty_changes_are_refused() -> None:
    with pytest.raises(InvalidInput):
        parse_definition(_definition(token="x"))
    with pytest.raises(InvalidInput):
        parse_change({})
    assert parse_change({"headers": {"Authorization": "Bearer n"}}) == (
        None,
        {"Authorization": "Bearer n"},
    )


def test_a_declaration_admits_only_what_it_names() -> None:
    declaration = parse_declaration(
        [{"server": "GitHub", "tools": ["search"]}, {"server": "docs", "tools": ["*"]}]
    )
    assert admit(declaration, "github", "search") and admit(declaration, "GITHUB", "search")
    assert not admit(declaration, "github", "delete_repo")
    assert not admit(declaration, "github", "*x")
    assert admit(declaration, "docs", "anything")
    assert not admit(declaration, "other", "search")
    assert not admit(parse_declaration(None), "github", "search")  # absent: nothing


@pytest.mark.parametrize(
    "data",
    [
        {"server": "github", "tools": ["a"]},  # not a list
        ["github"],
        [{"server": "github"}],  # no tools: never a wildcard by default
        [{"server": "github", "tools": []}],
        [{"server": "github", "tools": ["a", "a"]}],
        [{"server": "github", "tools": ["a"]}, {"server": "GitHub", "tools": ["b"]}],
        [{"server": "git hub", "tools": ["a"]}],
        [{"server": "github", "tools": ["a"], "extra": 1}],
    ],
)
def test_bad_declarations_say_what_is_wrong(data: Any) -> None:
    with pytest.raises(InvalidInput) as refused:
        parse_declaration(data)
    assert refused.value.details["field"] == "mcp_tools"


def test_a_declaration_holds_its_bounds_and_fails_just_past_them() -> None:
    servers = [
        {"server": f"s{n}", "tools": ["t"]} for n in range(limits.MCP_TOOLS_DECLARED_SERVERS_MAX)
    ]
    assert len(parse_declaration(servers)) == limits.MCP_TOOLS_DECLARED_SERVERS_MAX
    with pytest.raises(InvalidInput):
        parse_declaration([*servers, {"server": "one-more", "tools": ["t"]}])
    tools = [f"t{n}" for n in range(limits.MCP_TOOLS_DECLARED_TOOLS_MAX)]
    assert len(parse_declaration([{"server": "s", "tools": tools}])[0].tools) == len(tools)
    with pytest.raises(InvalidInput):
        parse_declaration([{"server": "s", "tools": [*tools, "one-more"]}])
    name = "t" * limits.MCP_TOOL_NAME_MAX_CHARS
    assert parse_declaration([{"server": "s", "tools": [name]}])[0].tools == (name,)
    with pytest.raises(InvalidInput):
        parse_declaration([{"server": "s", "tools": [name + "t"]}])


def test_a_calls_timeout_is_the_default_at_most_the_bound_and_the_time_left() -> None:
    assert _call_seconds(None, None) == limits.MCP_CALL_TIMEOUT_DEFAULT_SECONDS
    assert (
        _call_seconds(limits.MCP_CALL_TIMEOUT_MAX_SECONDS, None)
        == limits.MCP_CALL_TIMEOUT_MAX_SECONDS
    )
    with pytest.raises(InvalidInput):
        _call_seconds(limits.MCP_CALL_TIMEOUT_MAX_SECONDS + 0.001, None)
    with pytest.raises(InvalidInput):
        _call_seconds(0, None)
    # The API function has 29 s: the default call gets what is left, less a moment.
    assert _call_seconds(None, 28.5) == 27.5
    with pytest.raises(McpServerFailed):
        _call_seconds(None, 1.0)


def test_listing_tools_waits_the_list_timeout() -> None:
    from agentworks.identity.models import ALL_SCOPES, Principal
    from agentworks.mcp_servers.server_store import McpServer
    from agentworks.mcp_servers.service import McpServers
    from tests.support.clock import FakeClock

    server = McpServer("acct", "s", URL, (), "sid", 1, 0, 0)
    waited: list[float] = []

    class Store:
        def get(self, account: str, name: str) -> McpServer:
            return server

    class Secrets:
        def read(self, secret_id: str) -> dict[str, str]:
            return {}

    class Connector:
        def list_tools(self, endpoint: Any, timeout: float) -> list[Any]:
            waited.append(timeout)
            return []

    service = McpServers(Store(), Secrets(), FakeClock(start=0.0), Connector())  # type: ignore[arg-type]
    principal = Principal("acct", "conn", frozenset(ALL_SCOPES))
    assert service.show(principal, "s").tools == []
    assert waited == [limits.MCP_LIST_TIMEOUT_SECONDS]
