"""Issue 28 item 2, first part: a Crew, an adapter profile and a Relay declare the attached
MCP servers' tools they may call — `mcp_tools: [{server, tools: [tool, …]}]`, never a
wildcard by default, `"*"` only where written — validated when saved, stored, and shown
back as saved (lower-case server names). Nothing calls with them yet."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.integration.crew_support import CONTRACTS
from tests.integration.relay_support import publish

DECLARED = [{"server": "GitHub", "tools": ["search_issues", "get_issue"]}]
SHOWN = [{"server": "github", "tools": ["search_issues", "get_issue"]}]
EVERY = [{"server": "docs", "tools": ["*"]}]
BAD: list[tuple[Any, str]] = [
    ([{"server": "github"}], "tools"),  # no tools listed: no wildcard by default
    ([{"server": "github", "tools": []}], "tools"),
    ([{"server": "a", "tools": ["x"]}, {"server": "A", "tools": ["y"]}], "twice"),
    ({"server": "github", "tools": ["x"]}, "mcp_tools"),
    ([{"server": "bad name", "tools": ["x"]}], "server"),
]
PROFILE = {"name": "claude-code", "type": "scripted", "rules": [{"default": "Done."}]}
RELAY = {
    "relay.yaml": "name: triage\nfunctions:\n  - {name: run, entrypoint: main:run}\n"
    "mcp_tools:\n  - {server: GitHub, tools: [search_issues, get_issue]}\n",
    "main.py": "async def run(INPUT):\n    return INPUT\n",
}


def test_a_crew_declares_its_mcp_tools(api, stack) -> None:
    crew = {**copy.deepcopy(CONTRACTS), "mcp_tools": DECLARED}
    created = api("POST", "/v1/crews", stack.admin_token, crew)
    assert created.status == 201, created.body
    assert created.body["mcp_tools"] == SHOWN
    assert api("GET", "/v1/crews/contracts", stack.admin_token).body["mcp_tools"] == SHOWN
    changed = api("PUT", "/v1/crews/contracts", stack.admin_token, {**crew, "mcp_tools": EVERY})
    assert changed.status == 200 and changed.body["mcp_tools"] == EVERY, changed.body
    plain = api("PUT", "/v1/crews/contracts", stack.admin_token, copy.deepcopy(CONTRACTS))
    assert plain.body["mcp_tools"] == []  # absent: no tools at all


@pytest.mark.parametrize(("declared", "why"), BAD)
def test_a_crews_bad_declaration_says_what_is_wrong(api, stack, declared, why) -> None:
    crew = {**copy.deepcopy(CONTRACTS), "mcp_tools": declared}
    refused = api("POST", "/v1/crews", stack.admin_token, crew)
    assert refused.status == 400 and "mcp_tools" in refused.body["error"]["message"]
    assert why in refused.body["error"]["message"], refused.body
    assert api("GET", "/v1/crews/contracts", stack.admin_token).status == 404


def test_an_adapter_profile_declares_its_mcp_tools(api, stack) -> None:
    created = api("POST", "/v1/adapters", stack.admin_token, {**PROFILE, "mcp_tools": DECLARED})
    assert created.status == 201, created.body
    assert created.body["mcp_tools"] == SHOWN
    assert created.body["settings"] == {"type": "scripted", "rules": [{"default": "Done."}]}
    shown = api("GET", "/v1/adapters/claude-code", stack.admin_token).body
    assert shown["mcp_tools"] == SHOWN
    updated = api("PUT", "/v1/adapters/claude-code", stack.admin_token, PROFILE)
    assert updated.status == 200 and updated.body["mcp_tools"] == []


@pytest.mark.parametrize(("declared", "why"), BAD)
def test_a_profiles_bad_declaration_says_what_is_wrong(api, stack, declared, why) -> None:
    refused = api("POST", "/v1/adapters", stack.admin_token, {**PROFILE, "mcp_tools": declared})
    assert refused.status == 400 and refused.body["error"]["field"] == "mcp_tools"
    assert why in refused.body["error"]["message"], refused.body
    assert api("GET", "/v1/adapters", stack.admin_token).body == {"adapters": []}


def test_a_relay_declares_its_mcp_tools_in_relay_yaml(api, stack) -> None:
    released = publish(api, stack.admin_token, RELAY)
    assert released["mcp_tools"] == SHOWN
    listed = api("GET", "/api/relays/triage/releases", stack.admin_token)
    assert listed.status == 200, listed.body
    assert listed.body["releases"][0]["mcp_tools"] == SHOWN


def test_a_relays_bad_declaration_names_relay_yaml(api, stack) -> None:
    files = {**RELAY, "relay.yaml": RELAY["relay.yaml"].replace("[search_issues, get_issue]", "[]")}
    refused = api("POST", "/api/relays", stack.admin_token, {"files": files})
    assert refused.status == 400, refused.body
    assert (
        refused.body["error"]["file"] == "relay.yaml"
        and "mcp_tools" in refused.body["error"]["message"]
    )
