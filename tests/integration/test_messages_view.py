"""C5 the Messages view (`GET /v1/agents/conversations`): the account's conversations with a
named agent, newest first. Listed to a connection that may see one of its names (M4's
directory: its account, its bounds); its newest message and an inbox id only to a
connection that acts as one of its names, that very identity (M5). Another account, or a
name outside the bounds, sees nothing."""

from __future__ import annotations

import json
from typing import Any

from agentworks import limits

WORKER_SAYS, REVIEWER_SAYS = "Ready for review", "Review received\nsecond line"


def _listed(api: Any, token: str, **query: Any) -> dict:
    reply = api(
        "GET", "/v1/agents/conversations", token, query={k: str(v) for k, v in query.items()}
    )
    assert reply.status == 200, reply.body
    return reply.body


def _readme_flow(api: Any, agents: Any) -> tuple[str, str, dict, dict]:
    """The README's first flow: worker asks reviewer, reviewer answers in the same inbox."""
    reviewer = agents.named("reviewer")
    worker = agents.named("worker")
    sent = api(
        "POST",
        "/v1/messages",
        worker,
        {"agent_name": "worker", "target": "agent:reviewer", "message": WORKER_SAYS},
    ).body
    [first] = api("GET", "/v1/messages", reviewer, query={"agent_name": "reviewer"}).body[
        "messages"
    ]
    answered = api(
        "POST",
        "/v1/messages",
        reviewer,
        {"agent_name": "reviewer", "inbox_id": first["reply_address"], "message": REVIEWER_SAYS},
    )
    assert answered.status in (200, 201), answered.body
    return worker, reviewer, sent, answered.body


def test_c5_the_readme_flow_shows_bodies_only_to_its_names(api, stack, agents):
    worker, reviewer, sent, answered = _readme_flow(api, agents)
    # The admin sees who talks with whom, not what they say, nor an inbox to read it with.
    [row] = _listed(api, stack.admin_token)["conversations"]
    assert row["conversation_id"] == sent["conversation_id"]
    assert [(a["side"], a["address"], a["you_act_as"]) for a in row["agents"]] == [
        ("a", "agent:worker", False),
        ("b", "agent:reviewer", False),
    ]
    assert (row["status"], row["readable"], row["inbox_id"], row["latest"]) == (
        "active",
        False,
        None,
        None,
    )
    assert WORKER_SAYS not in json.dumps(row) and "Review received" not in json.dumps(row)
    assert sent["inbox_id"] not in json.dumps(row) and answered["inbox_id"] not in json.dumps(row)
    # Each name's own connection reads it: the newest message's first line, its own inbox.
    [mine] = _listed(api, worker)["conversations"]
    assert (mine["readable"], mine["inbox_id"]) == (True, sent["inbox_id"])
    assert [a["you_act_as"] for a in mine["agents"]] == [True, False]
    assert mine["latest"]["first_line"] == "Review received"
    assert mine["latest"]["sender"] == "agent:reviewer"
    [theirs] = _listed(api, reviewer)["conversations"]
    assert (theirs["readable"], theirs["inbox_id"]) == (True, answered["inbox_id"])
    # Another account: nothing.
    stranger = stack.services.identity.bootstrap("elsewhere").token
    assert _listed(api, stranger) == {"conversations": [], "next_before": None}


def test_c5_target_bounds_keep_the_names_they_cover(api, stack, agents):
    from agentworks.identity.models import ALL_SCOPES

    _readme_flow(api, agents)

    def bounded(name: str, bounds: list[str]) -> str:
        body = {"name": name, "scopes": sorted(ALL_SCOPES), "target_bounds": bounds}
        return api("POST", "/v1/connections", stack.admin_token, body).body["token"]

    [row] = _listed(api, bounded("sees-reviewer", ["agent:reviewer"]))["conversations"]
    assert row["readable"] is False and row["latest"] is None
    assert _listed(api, bounded("sees-other", ["agent:someone"]))["conversations"] == []


def test_c5_a_name_created_again_reads_none_of_the_old_ones(api, stack, agents):
    """Re-creating a name gives a new identity (M4): its connection, still on the new
    allow-list, no longer reads the old identity's conversation."""
    worker, _, _, _ = _readme_flow(api, agents)
    assert api("DELETE", "/v1/agents/worker", worker).status == 200
    assert api("POST", "/v1/agents", worker, {"agent_name": "worker"}).status == 200
    [row] = _listed(api, worker)["conversations"]
    assert (row["readable"], row["inbox_id"], row["latest"]) == (False, None, None)


def test_c5_an_external_client_to_a_name_is_listed_and_read_by_the_name(api, stack, agents):
    reviewer = agents.named("reviewer")
    sent = api(
        "POST", "/v1/messages", stack.admin_token, {"target": "agent:reviewer", "message": "hi"}
    ).body
    [row] = _listed(api, stack.admin_token)["conversations"]
    assert [a["address"] for a in row["agents"]] == ["external", "agent:reviewer"]
    assert (row["readable"], row["inbox_id"]) == (False, None)  # the admin is not reviewer
    [theirs] = _listed(api, reviewer)["conversations"]
    assert theirs["readable"] is True and theirs["latest"]["first_line"] == "hi"
    assert theirs["inbox_id"] == sent["inbox_id"][:-1] + "b"


def test_c5_pages_of_named_conversations_from_the_newest(api, stack, agents):
    """A page holds `limit` conversations: at exactly `limit` nothing follows; one more and
    next_before asks for it. The limit is 1–NAMED_CONVERSATIONS_PAGE_MAX."""
    agents.named("reviewer")
    made = []
    for n in range(3):
        body = {"target": "agent:reviewer", "message": f"m{n}"}
        made.append(api("POST", "/v1/messages", stack.admin_token, body).body["conversation_id"])
        stack.clock.advance(1)
    newest = made[::-1]

    def ids(page: dict) -> list[str]:
        return [c["conversation_id"] for c in page["conversations"]]

    whole = _listed(api, stack.admin_token, limit=3)
    assert (ids(whole), whole["next_before"]) == (newest, None)
    first = _listed(api, stack.admin_token, limit=2)
    assert ids(first) == newest[:2] and first["next_before"] == newest[1]
    rest = _listed(api, stack.admin_token, limit=2, before=first["next_before"])
    assert (ids(rest), rest["next_before"]) == ([made[0]], None)
    assert ids(_listed(api, stack.admin_token, limit=limits.NAMED_CONVERSATIONS_PAGE_MAX)) == newest
    for wrong in (0, limits.NAMED_CONVERSATIONS_PAGE_MAX + 1):
        refused = api(
            "GET", "/v1/agents/conversations", stack.admin_token, query={"limit": str(wrong)}
        )
        assert refused.status == 400, wrong
    forged = api("GET", "/v1/agents/conversations", stack.admin_token, query={"before": "x"})
    assert (forged.status, forged.body["error"]["field"]) == (400, "conversation_id")


def test_c5_an_idle_conversation_shows_expired_then_leaves_the_list(api, stack, agents):
    """Idle INBOX_IDLE_SECONDS: expired, no body for anyone; once its metadata's TTL has
    passed it is gone from the list, even before DynamoDB deletes it."""
    worker, _, _, _ = _readme_flow(api, agents)
    stack.clock.advance(limits.INBOX_IDLE_SECONDS - 5)
    [row] = _listed(api, worker)["conversations"]
    assert (row["status"], row["readable"]) == ("active", True)
    stack.clock.advance(5)
    [row] = _listed(api, worker)["conversations"]
    assert (row["status"], row["readable"], row["latest"]) == ("expired", False, None)
    stack.clock.advance(limits.EXPIRED_LOOKUP_SECONDS)
    assert _listed(api, worker)["conversations"] == []


def test_c5_a_page_without_limit_holds_the_default(api, stack, agents, monkeypatch):
    agents.named("reviewer")
    for n in range(3):
        body = {"target": "agent:reviewer", "message": f"m{n}"}
        assert api("POST", "/v1/messages", stack.admin_token, body).status == 201
    monkeypatch.setattr(limits, "NAMED_CONVERSATIONS_PAGE_DEFAULT", 3)
    at = _listed(api, stack.admin_token)
    assert len(at["conversations"]) == 3 and at["next_before"] is None
    monkeypatch.setattr(limits, "NAMED_CONVERSATIONS_PAGE_DEFAULT", 2)
    past = _listed(api, stack.admin_token)
    assert len(past["conversations"]) == 2 and past["next_before"] is not None
