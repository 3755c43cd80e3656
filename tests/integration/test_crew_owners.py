"""Crews gain an owner and a visibility (C4): a private Crew counts for its owner only —
account admins and the account's other connections get what an unknown Crew gets — and
deleting a Crew closes its conversations."""

from __future__ import annotations

import copy
from typing import Any

from agentworks.identity.models import ALL_SCOPES
from tests.integration.crew_support import CONTRACTS
from tests.integration.test_conversation_requests import ask, requests_of


def private_crew(api: Any, owner: str) -> dict:
    definition = copy.deepcopy(CONTRACTS)
    definition.update(name="secret-counsel", visibility="private", messaging="review")
    made = api("POST", "/v1/crews", owner, definition)
    assert made.status == 201, made.body
    return made.body


def test_c4_a_crew_records_its_owner(api, stack, agents):
    made = api("POST", "/v1/crews", stack.admin_token, CONTRACTS)
    assert made.status == 201
    assert made.body["owner_connection_id"] == stack.principal(stack.admin_token).connection_id
    assert made.body["visibility"] == "account"


def test_c4_a_private_crew_is_its_owners_only(api, stack, agents):
    owner = agents.connection("owner", scopes=sorted(ALL_SCOPES))  # an admin too
    other_admin = stack.admin_token
    caller = agents.connection("caller")["token"]
    made = private_crew(api, owner["token"])
    assert made["owner_connection_id"] == owner["connection_id"]
    unknown = api("GET", "/v1/crews/nobody-here", other_admin)
    for token in (other_admin, caller):
        seen = api("GET", "/v1/crews/secret-counsel", token)
        assert (seen.status, seen.body) == (unknown.status, unknown.body)
        sent = api(
            "POST",
            "/v1/messages",
            token,
            {"message": "hi", "target": "crew:secret-counsel", "kind": "request"},
        )
        nobody = api("POST", "/v1/messages", token, {"message": "hi", "target": "crew:nobody-here"})
        assert (sent.status, sent.body) == (nobody.status, nobody.body)
    listed = api("GET", "/v1/crews", other_admin).body["crews"]
    assert "crew:secret-counsel" not in {c["target"] for c in listed}
    # The owner uses it like any Crew.
    asked = ask(api, owner["token"], "Clause 3?", target="crew:secret-counsel")
    assert asked.status == 201, asked.body


def test_c4_deleting_a_crew_closes_its_conversations(api, stack, agents):
    definition = dict(CONTRACTS, messaging="review")
    assert api("POST", "/v1/crews", stack.admin_token, definition).status == 201
    caller = agents.connection("caller")["token"]
    sent = ask(api, caller, "Clause 1?").body
    assert api("DELETE", "/v1/crews/contracts", stack.admin_token).status == 200
    [request] = requests_of(api, caller, sent["inbox_id"])
    assert (request["state"], request["reason"]) == ("cancelled", "The conversation was closed.")
    again = api("POST", "/v1/messages", caller, {"message": "x", "inbox_id": sent["inbox_id"]})
    assert again.status in (404, 409), again.body
