"""What a Crew looks like to whom (F1): an admin sees its adapter's settings, any other
caller only the adapter's type; times are ISO 8601 like every other response. Over HTTP
and through the MCP `crews` tool alike."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tests.integration.crew_support import CONTRACTS
from tests.integration.test_mcp_crews_tools import Tools
from tests.integration.test_mcp_handler import load_handler_module


def _iso(value: Any) -> datetime:
    assert isinstance(value, str), value
    return datetime.fromisoformat(value)


def test_f1_only_an_admin_sees_adapter_settings_over_http(api, agents, stack):
    created = api("POST", "/v1/crews", stack.admin_token, CONTRACTS)
    assert created.status == 201
    assert created.body["adapter"] == CONTRACTS["adapter"]
    assert _iso(created.body["created_at"]) <= _iso(created.body["updated_at"])
    caller = agents.connection("caller", scopes=["functions:read", "functions:call"])["token"]
    for reply in (
        api("GET", "/v1/crews/contracts", caller),
        api("GET", "/v1/crews", caller),
    ):
        assert reply.status == 200, reply.body
        crew = reply.body if "crew_id" in reply.body else reply.body["crews"][0]
        assert crew["adapter"] == {"type": "scripted"}
        assert "rules" not in str(crew) and "Clause {match.1}" not in str(crew)
        _iso(crew["updated_at"])
    listed = api("GET", "/v1/crews", stack.admin_token).body["crews"][0]
    assert listed["adapter"]["rules"] == CONTRACTS["adapter"]["rules"]


def test_f1_only_an_admin_sees_adapter_settings_over_mcp(agents, stack):
    app = load_handler_module()
    admin = Tools(app, stack.admin_token)
    admin.ok("crews", action="create", definition=CONTRACTS)
    caller_token = agents.connection("mcp-caller", scopes=["functions:read"])["token"]
    caller = Tools(app, caller_token)
    seen = caller.ok("crews", action="get", name="contracts")
    assert seen["adapter"] == {"type": "scripted"}
    _iso(seen["created_at"])
    (listed,) = caller.ok("crews", action="list")["crews"]
    assert listed["adapter"] == {"type": "scripted"}
    assert admin.ok("crews", action="get", name="contracts")["adapter"] == CONTRACTS["adapter"]
