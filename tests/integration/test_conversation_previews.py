"""The Inbox's list shows each conversation's newest message (issue 29): its first line, cut
at MESSAGE_PREVIEW_MAX_CHARS, who sent it and what kind it is — so rows that name the same
two sides still read apart."""

from __future__ import annotations

import copy
from typing import Any

from agentworks import limits
from tests.integration.crew_support import CONTRACTS


def _listed(api: Any, token: str) -> dict[str, Any]:
    listed = api("GET", "/v1/conversations", token)
    assert listed.status == 200, listed.body
    return {c["conversation_id"]: c for c in listed.body["conversations"]}


def test_a_rows_preview_is_the_newest_messages_first_line_cut_at_its_bound(
    api, stack, agents
) -> None:
    crew = copy.deepcopy(CONTRACTS)
    crew["messaging"] = "review"  # nothing answers: the sender's message stays the newest
    assert api("POST", "/v1/crews", stack.admin_token, crew).status == 201
    sender = agents.connection("sender")["token"]
    bound = limits.MESSAGE_PREVIEW_MAX_CHARS
    sent = {}
    for first_line in ("a" * bound, "b" * (bound + 1)):
        body = {"target": "crew:contracts", "message": f"{first_line}\nthe rest of it"}
        reply = api("POST", "/v1/messages", sender, body)
        assert reply.status == 201, reply.body
        sent[first_line] = reply.body["inbox_id"]
    rows = _listed(api, stack.admin_token)
    previews = sorted(row["latest"]["first_line"] for row in rows.values())
    assert previews == ["a" * bound, "b" * bound]  # at the bound kept, past it cut
    for row in rows.values():
        assert row["latest"]["kind"] == "message" and row["latest"]["created_at"]
        assert "the rest of it" not in row["latest"]["first_line"]
