"""Stepping in (issue 11 item 5, C5): a person who can edit a Crew answers for it in its
conversations — a reply that answers a request, a note, a request — marked as written by
that person; releases and declines follow the same rule; and everyone else gets what an
unknown conversation gets, with nothing changed."""

from __future__ import annotations

import copy
from typing import Any

from agentworks.identity.models import ALL_SCOPES
from agentworks.ids import parse_inbox_id
from agentworks.messaging import delivery_text
from tests.integration.crew_support import CONTRACTS
from tests.integration.test_conversation_requests import ask, request_state
from tests.integration.test_crew_messages import crew, wait_for_messages
from tests.integration.test_crew_owners import private_crew


def answer(api: Any, token: str, inbox_id: str, **body: Any) -> Any:
    return api("POST", f"/v1/conversations/{inbox_id}/answer", token, {"crew": "contracts", **body})


def crew_inbox(asker_inbox: str) -> str:
    """The Crew's side of the conversation the asker's inbox belongs to."""
    return parse_inbox_id(asker_inbox).peer.inbox_id


def test_the_owner_answers_a_waiting_request_for_the_crew(api, stack, agents):
    crew(api, stack, "review")  # waits for a person: no run races the answer
    caller = agents.connection("caller")["token"]
    sent = ask(api, caller, "Clause 9?").body
    owner = stack.principal(stack.admin_token).connection_id
    answered = answer(
        api, stack.admin_token, sent["inbox_id"], kind="reply", message="Clause 9: notice.",
        in_reply_to=sent["message_id"],
    )  # fmt: skip
    assert answered.status == 201, answered.body
    found = request_state(api, caller, sent)
    assert (found["state"], found["label"]) == ("answered", "Answered")
    [reply] = wait_for_messages(api, caller, sent["inbox_id"])
    assert (reply["kind"], reply["in_reply_to"]) == ("reply", sent["message_id"])
    assert reply["body"] == "Clause 9: notice." and reply["written_by"] == owner
    assert reply["sender"] == "crew:contracts"
    assert f"written for it by a person ({owner})" in reply["delivered_text"]
    assert delivery_text.body_of(reply["delivered_text"]) == "Clause 9: notice."
    # The same request cannot be answered twice.
    again = answer(
        api, stack.admin_token, sent["inbox_id"], kind="reply", message="Again.",
        in_reply_to=sent["message_id"],
    )  # fmt: skip
    assert again.status == 409 and again.body["error"]["state"] == "answered"


def test_a_note_and_a_request_written_for_the_crew(api, stack, agents):
    crew(api, stack, "review")
    caller = agents.connection("caller")["token"]
    sent = ask(api, caller, "Clause 1?").body
    for kind in ("note", "request"):
        done = answer(api, stack.admin_token, crew_inbox(sent["inbox_id"]), kind=kind,
                      message=f"A {kind} from the person.")  # fmt: skip
        assert done.status == 201, done.body
    got = wait_for_messages(api, caller, sent["inbox_id"], count=2)
    assert [(m["kind"], m["written_by"] is not None) for m in got] == [
        ("note", True),
        ("request", True),
    ]
    assert got[1]["deadline_at"] is not None  # a request written for the agent has one too
    assert request_state(api, caller, sent)["state"] == "waiting_for_review"  # untouched


def test_no_one_else_can_answer_for_it_and_nothing_changes(api, stack, agents):
    crew(api, stack, "review")
    caller = agents.connection("caller")["token"]
    sent = ask(api, caller, "Clause 2?").body
    narrowed = api(
        "POST",
        "/v1/connections",
        stack.admin_token,
        {"name": "other-bounds", "scopes": ["admin", "messages:send"], "target_bounds": ["crew:x"]},
    )
    assert narrowed.status == 201, narrowed.body
    unknown_inbox = "ibx_" + "0" * 26 + "b"
    unknown = answer(api, stack.admin_token, unknown_inbox, kind="note", message="hi")
    assert unknown.status == 404
    reply = {"kind": "reply", "message": "Forged.", "in_reply_to": sent["message_id"]}
    for token in (caller, narrowed.body["token"]):
        refused = answer(api, token, sent["inbox_id"], **reply)
        assert refused.status in (403, 404), refused.body
        if refused.status == 404:
            assert refused.body == unknown.body
    intruder = stack.services.identity.bootstrap("intruder").token  # another account's admin
    foreign = answer(api, intruder, sent["inbox_id"], **reply)
    assert (foreign.status, foreign.body) == (unknown.status, unknown.body)
    assert request_state(api, caller, sent)["state"] == "waiting_for_review"
    assert wait_for_messages(api, caller, sent["inbox_id"], count=0) == []


def test_a_private_crew_is_answered_for_and_released_by_its_owner_only(api, stack, agents):
    owner = agents.connection("owner", scopes=sorted(ALL_SCOPES))
    private_crew(api, owner["token"])
    sent = ask(api, owner["token"], "Clause 4?", target="crew:secret-counsel").body
    body = {"crew": "secret-counsel", "kind": "note", "message": "From the owner."}
    where = f"/v1/conversations/{sent['inbox_id']}/answer"
    admin_try = api("POST", where, stack.admin_token, body)
    unknown = api("POST", "/v1/conversations/ibx_" + "0" * 26 + "b/answer", stack.admin_token, body)
    assert (admin_try.status, admin_try.body) == (unknown.status, unknown.body)
    assert api("POST", where, owner["token"], body).status == 201
    # Release follows the same rule: the owner may, the account's other admin may not.
    release = {"message_id": sent["message_id"]}
    refused = api("POST", "/v1/crews/secret-counsel/release", stack.admin_token, release)
    assert refused.status == 404
    released = api("POST", "/v1/crews/secret-counsel/release", owner["token"], release)
    assert released.status == 200, released.body


def test_a_closed_conversation_takes_no_answer(api, stack, agents):
    crew(api, stack, "review")
    caller = agents.connection("caller")["token"]
    sent = ask(api, caller, "Clause 5?").body
    closed = api("POST", f"/v1/conversations/{sent['inbox_id']}/close", caller, {})
    assert closed.status == 200, closed.body
    late = answer(api, stack.admin_token, sent["inbox_id"], kind="note", message="Too late.")
    assert late.status == 409, late.body


def test_a_request_it_received_is_declined_and_no_run_takes_it(api, stack, agents):
    """C5 "Decline on one it received": not only one waiting for review — here one held
    by a paused conversation (Received). Declined with the reason; resuming starts no run."""
    crew(api, stack, "on")
    caller = agents.connection("caller")["token"]
    first = ask(api, caller, "Clause 6?").body
    inbox = first["inbox_id"]
    assert api("POST", f"/v1/conversations/{inbox}/pause", caller, {}).status == 200
    held = ask(api, caller, "Clause 8?", inbox_id=inbox).body
    assert request_state(api, caller, held)["state"] == "received"
    body = {"message_id": held["message_id"], "reason": "Out of scope."}
    declined = api("POST", "/v1/crews/contracts/decline", stack.admin_token, body)
    assert declined.status == 200, declined.body
    found = request_state(api, caller, held)
    assert (found["state"], found["reason"]) == ("declined", "Out of scope.")
    again = api("POST", "/v1/crews/contracts/decline", stack.admin_token, body)
    assert again.status == 409 and again.body["error"]["state"] == "declined"
    assert api("POST", f"/v1/conversations/{inbox}/resume", caller, {}).status == 200
    assert request_state(api, caller, held)["state"] == "declined"  # resuming started none


def test_an_answer_with_a_submission_id_is_stored_once_and_only_for_that_content(
    api, stack, agents
):
    """A person's retried answer (the same submission_id and words, to the same inbox) is
    the same message; other words, or another conversation, under that id are refused; the
    same id in another account is that account's own."""
    crew(api, stack, "review")
    first_caller = agents.connection("first")["token"]
    first = ask(api, first_caller, "Clause 3?").body
    second = ask(api, agents.connection("second")["token"], "Clause 4?").body
    mine, other = crew_inbox(first["inbox_id"]), crew_inbox(second["inbox_id"])
    note = {"kind": "note", "message": "Read clause 3 first.", "submission_id": "note-1"}

    sent = answer(api, stack.admin_token, mine, **note)
    assert sent.status == 201, sent.body
    again = answer(api, stack.admin_token, mine, **note)
    assert again.status in (200, 201), again.body
    assert again.body["message_id"] == sent.body["message_id"]
    changed = answer(api, stack.admin_token, mine, **dict(note, message="Other words."))
    assert (changed.status, changed.body["error"]) == (
        409,
        {
            "code": "conflict",
            "message": "submission_id was already used for a different message; use a new "
            "submission_id for new content.",
            "field": "submission_id",
        },
    )
    elsewhere = answer(api, stack.admin_token, other, **note)
    assert elsewhere.status == 409, elsewhere.body
    assert [m["body"] for m in wait_for_messages(api, first_caller, first["inbox_id"])] == [
        "Read clause 3 first."
    ]  # once

    # Another account: its own Crew of the same name, the same submission_id, its own note.
    intruder = stack.services.identity.bootstrap("elsewhere").token
    definition = dict(copy.deepcopy(CONTRACTS), name="contracts", messaging="review")
    assert api("POST", "/v1/crews", intruder, definition).status == 201
    asker = agents.connection("asker", token=intruder)["token"]
    theirs = ask(api, asker, "Clause 3?").body
    stored = answer(api, intruder, crew_inbox(theirs["inbox_id"]), **note)
    assert stored.status == 201, stored.body
    assert stored.body["message_id"] != sent.body["message_id"]
    [got] = wait_for_messages(api, asker, theirs["inbox_id"])
    assert got["message_id"] == stored.body["message_id"]
    assert got["body"] == "Read clause 3 first."


def test_a_submission_id_is_each_crews_own(api, stack, agents):
    """Submission ids are scoped to their sender (M2): a person writing for two Crews with
    the same submission_id stores one message for each."""
    crew(api, stack, "review")
    crew(api, stack, "review", name="other")
    caller = agents.connection("caller")["token"]
    to_contracts = ask(api, caller, "Clause 5?").body
    to_other = ask(api, caller, "Clause 6?", target="crew:other").body
    note = {"kind": "note", "message": "Noted.", "submission_id": "same-id"}
    first = answer(api, stack.admin_token, crew_inbox(to_contracts["inbox_id"]), **note)
    second = api(
        "POST",
        f"/v1/conversations/{crew_inbox(to_other['inbox_id'])}/answer",
        stack.admin_token,
        {"crew": "other", **note},
    )
    assert (first.status, second.status) == (201, 201), (first.body, second.body)
    assert first.body["message_id"] != second.body["message_id"]
