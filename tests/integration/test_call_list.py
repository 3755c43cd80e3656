"""The Runs page's list of function calls (issue 11 item 8): a caller's own calls, newest
first, with where each stands; an admin sees the account's, within its target bounds;
nobody sees another's; the page size holds at and past its limits."""

from __future__ import annotations

from typing import Any

from agentworks import limits
from agentworks.identity.models import ALL_SCOPES
from tests.integration.crew_support import CONTRACTS, admit_call_record, wait_for

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


def _seed_calls(stack: Any, caller_token: str, count: int) -> list[str]:
    """`count` finished calls of crew:contracts by `caller_token`'s connection, a millisecond
    apart, admitted as the service admits them; returns their ids, oldest first."""
    from agentworks.crews.crew_store import crew_key
    from agentworks.dynamo import to_item

    account = stack.principal(caller_token).account_id
    ids = []
    for _ in range(count):
        stack.clock.advance(0.001)
        ids.append(admit_call_record(stack, caller_token, "succeeded"))
        # The call ended: its slot is free again (RUNNING_PER_CREW bounds running calls).
        stack.client.update_item(
            TableName=stack.settings.work_table,
            Key=to_item(crew_key(account, "contracts")),
            UpdateExpression="SET running = :zero",
            ExpressionAttributeValues=to_item({":zero": 0}),
        )
    return ids


def test_a_page_of_calls_holds_limit_calls_newest_first_and_no_more(api, stack, agents):
    """C5 Runs page: CALLS_PAGE_MAX calls of more, CALLS_PAGE_DEFAULT without a limit."""
    assert api("POST", "/v1/crews", stack.admin_token, CONTRACTS).status == 201
    caller = agents.connection("caller")["token"]
    ids = _seed_calls(stack, caller, limits.CALLS_PAGE_MAX + 1)
    full = api("GET", "/v1/calls", caller, query={"limit": limits.CALLS_PAGE_MAX}).body["calls"]
    assert [c["call_id"] for c in full] == ids[::-1][: limits.CALLS_PAGE_MAX]
    default = api("GET", "/v1/calls", caller).body["calls"]
    assert [c["call_id"] for c in default] == ids[::-1][: limits.CALLS_PAGE_DEFAULT]
    three = api("GET", "/v1/calls", caller, query={"limit": 3}).body["calls"]
    assert [c["call_id"] for c in three] == ids[:-4:-1]


def test_a_call_is_listed_for_calls_listed_seconds(api, stack, agents):
    assert api("POST", "/v1/crews", stack.admin_token, CONTRACTS).status == 201
    caller = agents.connection("caller")["token"]
    [call_id] = _seed_calls(stack, caller, 1)
    stack.clock.advance(limits.CALLS_LISTED_SECONDS - 1)
    assert [c["call_id"] for c in api("GET", "/v1/calls", caller).body["calls"]] == [call_id]
    stack.clock.advance(1)
    assert api("GET", "/v1/calls", caller).body["calls"] == []
    # The record itself stays readable; only the list forgets it.
    assert api("GET", f"/v1/calls/{call_id}", caller).status == 200


def test_a_callers_list_looks_at_the_accounts_newest_calls_list_scan_entries(api, stack, agents):
    """C5: the list reads at most CALLS_LIST_SCAN of the account's newest entries, so a
    caller whose own call lies past that many newer calls of others sees none."""
    assert api("POST", "/v1/crews", stack.admin_token, CONTRACTS).status == 201
    caller = agents.connection("caller")["token"]
    busy = agents.connection("busy")["token"]
    [mine] = _seed_calls(stack, caller, 1)
    _seed_calls(stack, busy, limits.CALLS_LIST_SCAN - 1)
    assert [c["call_id"] for c in api("GET", "/v1/calls", caller).body["calls"]] == [mine]
    _seed_calls(stack, busy, 1)
    assert api("GET", "/v1/calls", caller).body["calls"] == []
