"""The Runs page's list of function calls (issue 11 item 8): a caller's own calls, newest
first, with where each stands; an admin sees the account's, within its target bounds;
nobody sees another's; the page size holds at and past its limits."""

from __future__ import annotations

from typing import Any

from agentworks import limits
from agentworks.identity.models import ALL_SCOPES
from tests.integration.crew_support import CONTRACTS, wait_for

TERMINAL = {"succeeded", "failed", "interrupted"}


def _call(api: Any, token: str, function: str, args: dict) -> str:
    body = {"target": "crew:contracts", "function": function, "args": args}
    accepted = api("POST", "/v1/calls", token, body)
    assert accepted.status == 202, accepted.body
    return str(accepted.body["call_id"])


def test_calls_are_listed_newest_first_with_their_state(api, stack, agents):
    assert api("POST", "/v1/crews", stack.admin_token, CONTRACTS).status == 201
    caller = agents.connection("caller")["token"]
    done = _call(api, caller, "summarize", {"text": "t"})
    assert wait_for(api, caller, done, TERMINAL)["state"] == "succeeded"
    stack.clock.advance(1)
    asking = _call(api, caller, "confirm", {"action": "sign"})
    wait_for(api, caller, asking, {"input_required"})
    listed = api("GET", "/v1/calls", caller)
    assert listed.status == 200, listed.body
    calls = listed.body["calls"]
    assert [c["call_id"] for c in calls] == [asking, done]
    assert [(c["state"], c["waiting_for_answer"]) for c in calls] == [
        ("input_required", True),
        ("succeeded", False),
    ]
    assert calls[1]["target"] == "crew:contracts" and calls[1]["function"] == "summarize"
    # Someone else's calls are not theirs to see; the account's admin sees them all.
    other = agents.connection("other")["token"]
    assert api("GET", "/v1/calls", other).body["calls"] == []
    admin_view = api("GET", "/v1/calls", stack.admin_token).body["calls"]
    assert {asking, done} <= {c["call_id"] for c in admin_view}
    bounded = api(
        "POST",
        "/v1/connections",
        stack.admin_token,
        {"name": "bounded", "scopes": sorted(ALL_SCOPES), "target_bounds": ["crew:other"]},
    ).body["token"]
    assert api("GET", "/v1/calls", bounded).body["calls"] == []
    intruder = stack.services.identity.bootstrap("intruder").token
    assert api("GET", "/v1/calls", intruder).body["calls"] == []


def test_the_page_size_at_and_past_its_limits(api, stack, agents):
    caller = agents.connection("caller")["token"]
    for ok in (1, limits.CALLS_PAGE_MAX):
        assert api("GET", "/v1/calls", caller, query={"limit": ok}).status == 200
    for past in (0, limits.CALLS_PAGE_MAX + 1):
        refused = api("GET", "/v1/calls", caller, query={"limit": past})
        assert refused.status == 400 and refused.body["error"]["code"] == "invalid_request"
