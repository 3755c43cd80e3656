"""A lambda adapter's MCP call token opens one route (issue 28): `POST
/v1/mcp-servers/{name}/tools/{tool}:call`, read from the event API Gateway sends (its
`rawPath`, or the request context's path). tests/integration/test_mcp_tool_use.py drives
the token end to end; this is the rule that every other route refuses it."""

from __future__ import annotations

from typing import Any

import pytest

from agentworks.authentication import _is_tool_call, _query

TOOL_CALL = "/v1/mcp-servers/tools/tools/echo:call"


def _event(method: str | None, path: str | None, raw_path: str | None = None) -> dict:
    http: dict[str, Any] = {}
    if method is not None:
        http["method"] = method
    if path is not None:
        http["path"] = path
    event: dict[str, Any] = {"requestContext": {"http": http}}
    if raw_path is not None:
        event["rawPath"] = raw_path
    return event


def test_the_tool_call_route_is_the_one_a_call_token_opens() -> None:
    assert _is_tool_call(_event("POST", TOOL_CALL))
    assert _is_tool_call(_event("POST", None, raw_path=TOOL_CALL))
    assert _is_tool_call(_event("POST", "/v1/elsewhere", raw_path=TOOL_CALL))  # rawPath first


@pytest.mark.parametrize(
    "event",
    [
        _event("GET", TOOL_CALL),
        _event(None, TOOL_CALL),
        _event("POST", "/v1/mcp-servers/tools/tools/echo"),
        _event("POST", "/v1/mcp-servers/tools/tools/echo:call/more"),
        _event("POST", "/v1/mcp-servers/tools:call"),
        _event("POST", "/v1/calls"),
        _event("POST", None),
        {},
    ],
)
def test_every_other_request_is_refused_to_a_call_token(event: dict) -> None:
    assert not _is_tool_call(event)


def test_a_query_parameter_is_read_as_text_or_nothing() -> None:
    assert _query({"queryStringParameters": {"ticket": "t-1"}}, "ticket") == "t-1"
    assert _query({"queryStringParameters": {"other": "x"}}, "ticket") == ""
    assert _query({"queryStringParameters": None}, "ticket") == ""
    assert _query({}, "ticket") == ""


@pytest.mark.parametrize("route", [("GET", TOOL_CALL), ("POST", "/v1/calls")])
def test_a_call_token_on_another_route_is_refused_as_any_bad_token(route: tuple) -> None:
    """Refused before anything is read (no service is built here), in the words every
    unknown, expired or revoked token gets."""
    from agentworks.authentication import authenticate_event
    from agentworks.errors import Unauthenticated
    from agentworks.mcp_servers.call_tokens import PREFIX

    event = {"headers": {"authorization": f"Bearer {PREFIX}.any.thing"}, **_event(*route)}
    with pytest.raises(Unauthenticated) as refused:
        authenticate_event(event)
    assert refused.value.message == (
        "Missing, invalid, expired or revoked token. Send 'Authorization: Bearer <token>'."
    )


def test_a_push_ticket_where_no_pages_url_is_known_is_refused_as_any_bad_token() -> None:
    """No origin can be the pages' then: refused before the ticket is looked at."""
    from agentworks.authentication import authenticate_event
    from agentworks.errors import Unauthenticated

    event = {
        "queryStringParameters": {"ticket": "t-1"},
        "headers": {"origin": "https://pages.example.com"},
    }
    with pytest.raises(Unauthenticated) as refused:
        authenticate_event(event, tickets=object())  # type: ignore[arg-type]
    assert refused.value.message == (
        "Missing, invalid, expired or revoked token. Send 'Authorization: Bearer <token>'."
    )
