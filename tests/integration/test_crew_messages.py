"""Messages to Crews (M1, M7, M8, M10): the messaging switch (off, review, on), a person's
release or decline, the Crew's answer in the sender's own inbox, and the Crew's state.

Runs really execute on Step Functions (moto); their Lambda tasks run the step runner.
"""

from __future__ import annotations

import copy
import json
import time
from typing import Any

import boto3
import pytest

from agentworks import limits
from tests.integration.crew_support import CONTRACTS
from tests.integration.test_write_faults import items

TERMINAL_RUN = {"succeeded", "failed", "interrupted"}


def crew(api: Any, stack: Any, messaging: str = "on", name: str = "contracts") -> dict:
    definition = copy.deepcopy(CONTRACTS)
    definition["name"], definition["messaging"] = name, messaging
    reply = api("POST", "/v1/crews", stack.admin_token, definition)
    assert reply.status == 201, reply.body
    return definition


def switch(api: Any, stack: Any, definition: dict, messaging: str) -> None:
    changed = dict(definition, messaging=messaging)
    reply = api("PUT", f"/v1/crews/{definition['name']}", stack.admin_token, changed)
    assert reply.status == 200, reply.body


def send(api: Any, token: str, message: str, **where: str) -> Any:
    if not where:
        where = {"target": "crew:contracts"}
    return api("POST", "/v1/messages", token, {"message": message, **where})


def wait_for_messages(api: Any, token: str, inbox_id: str, count: int = 1, timeout=30) -> list:
    """Reads the inbox (as a sender would) until `count` messages arrived."""
    deadline = time.monotonic() + timeout
    while True:
        page = api("GET", "/v1/messages", token, query={"inbox_id": inbox_id})
        assert page.status == 200, page.body
        if len(page.body["messages"]) >= count:
            return page.body["messages"]
        assert time.monotonic() < deadline, page.body
        time.sleep(0.05)


def wait_for_state(api: Any, stack: Any, predicate, name: str = "contracts", timeout=30) -> dict:
    """Polls the Crew's state (M8) until `predicate(state)` holds."""
    deadline = time.monotonic() + timeout
    while True:
        state = api("GET", f"/v1/crews/{name}/state", stack.admin_token)
        assert state.status == 200, state.body
        if predicate(state.body):
            return state.body
        assert time.monotonic() < deadline, state.body
        time.sleep(0.05)


def executions(stack: Any) -> list[dict]:
    sfn = boto3.client("stepfunctions", region_name="us-east-1")
    arn = stack.settings.function_call_state_machine_arn
    return sfn.list_executions(stateMachineArn=arn)["executions"]


def record_of(state: dict, message_id: str) -> dict:
    for inbox in state["inboxes"]:
        for record in inbox["delivery_records"]:
            if record["message_id"] == message_id:
                return record
    raise AssertionError(f"no delivery record of {message_id}: {state}")


def test_m10_on_the_crew_answers_in_the_senders_inbox_and_the_receipt_goes_processed(
    api, stack, agents
):
    crew(api, stack, "on")
    caller = agents.connection("caller")["token"]
    sent = send(api, caller, "What does clause 7 say?")
    assert sent.status == 201 and sent.body["receipt"] == "stored", sent.body
    [answer] = wait_for_messages(api, caller, sent.body["inbox_id"])
    assert answer["sender"] == "crew:contracts"
    assert answer["body"] == "Clause 7 covers termination."
    assert answer["reply_address"] == sent.body["inbox_id"]  # the same inbox
    # The receipt moves to processed with the answer; the run's own end is recorded after.
    ended = {"succeeded", "failed", "interrupted", "cancelled"}
    state = wait_for_state(
        api,
        stack,
        lambda s: (
            record_of(s, sent.body["message_id"])["receipt"] == "processed"
            and record_of(s, sent.body["message_id"])["run_state"] in ended
        ),
    )
    record = record_of(state, sent.body["message_id"])
    assert record["run_state"] == "succeeded" and record["run_id"].startswith("run_")
    # The sender sees the receipt of what it sent move to processed (M7).
    mine = api("GET", f"/v1/inboxes/{sent.body['inbox_id']}/state", caller).body
    assert mine["peer"] == "crew:contracts"
    assert [r["receipt"] for r in mine["delivery_records"]] == ["processed"]
    # A reply in the same inbox starts another run there; the answer follows it.
    again = send(api, caller, "And clause 9?", inbox_id=sent.body["inbox_id"])
    assert again.status == 201, again.body
    later = wait_for_messages(api, caller, sent.body["inbox_id"], count=2)
    assert later[-1]["body"] == "Clause 9 covers termination."
    # Runs take no function slot (F5 counts function calls only).
    assert api("GET", "/v1/crews/contracts", caller).body["running"] == 0


def test_m10_off_refuses_new_conversations_and_replies_with_the_reason(api, stack, agents):
    definition = crew(api, stack, "on")
    caller = agents.connection("caller")["token"]
    sent = send(api, caller, "What does clause 1 say?")
    assert sent.status == 201
    wait_for_messages(api, caller, sent.body["inbox_id"])
    switch(api, stack, definition, "off")
    for refused in (
        send(api, caller, "clause 2?", inbox_id=sent.body["inbox_id"]),
        send(api, caller, "clause 3?"),
    ):
        assert refused.status == 409, refused.body
        error = refused.body["error"]
        assert error["code"] == "messaging_off" and error["reason"] == "messaging is off"
        assert "account admin" in error["message"]
        assert "agentworks crews update --file" in error["message"]
    # Turned back on, the same inbox works again at once.
    switch(api, stack, definition, "on")
    assert send(api, caller, "clause 4?", inbox_id=sent.body["inbox_id"]).status == 201
    # An unknown Crew looks like any unknown target (A5).
    assert send(api, caller, "hi", target="crew:nobody").status == 404


def test_m10_review_holds_the_message_until_a_person_releases_it(api, stack, agents):
    crew(api, stack, "review")
    caller = agents.connection("caller")["token"]
    sent = send(api, caller, "What does clause 5 say?")
    assert sent.status == 201, sent.body
    message_id = sent.body["message_id"]
    state = api("GET", "/v1/crews/contracts/state", stack.admin_token).body
    assert record_of(state, message_id)["run_state"] == "pending_review"
    assert record_of(state, message_id)["receipt"] == "stored"
    assert executions(stack) == []  # nothing runs until a person decides
    # Releasing is an admin's decision.
    body = {"message_id": message_id}
    assert api("POST", "/v1/crews/contracts/release", caller, body).status == 403
    released = api("POST", "/v1/crews/contracts/release", stack.admin_token, body)
    assert released.status == 200, released.body
    assert released.body["state"] == "running" and released.body["run_id"].startswith("run_")
    [answer] = wait_for_messages(api, caller, sent.body["inbox_id"])
    assert answer["body"] == "Clause 5 covers termination."
    assert [e["name"] for e in executions(stack)] == [released.body["run_id"]]
    again = api("POST", "/v1/crews/contracts/release", stack.admin_token, body)
    assert again.status == 409 and again.body["error"]["state"] != "pending_review"


def test_m10_decline_records_declined_runs_nothing_and_tells_the_sender(api, stack, agents):
    crew(api, stack, "review")
    caller = agents.connection("caller")["token"]
    sent = send(api, caller, "Please delete clause 3.")
    message_id = sent.body["message_id"]
    declined = api(
        "POST",
        "/v1/crews/contracts/decline",
        stack.admin_token,
        {"message_id": message_id, "reason": "Out of scope."},
    )
    assert declined.status == 200, declined.body
    assert declined.body == {
        "target": "crew:contracts",
        "message_id": message_id,
        "state": "declined",
        "run_id": None,
        "reason": "Out of scope.",
    }
    [notice] = wait_for_messages(api, caller, sent.body["inbox_id"])
    assert notice["sender"] == "crew:contracts"
    assert "declined" in notice["body"] and "Out of scope." in notice["body"]
    state = api("GET", "/v1/crews/contracts/state", stack.admin_token).body
    assert record_of(state, message_id)["run_state"] == "declined"
    assert executions(stack) == []
    late = api("POST", "/v1/crews/contracts/release", stack.admin_token, {"message_id": message_id})
    assert late.status == 409
    # A message id that is not waiting for this Crew names nothing (A5).
    other = api(
        "POST",
        "/v1/crews/contracts/release",
        stack.admin_token,
        {"message_id": message_id[:-1] + "9"},
    )
    assert other.status == 404


def test_m1_nobody_holds_the_crews_side_of_its_conversations(api, stack, agents):
    crew(api, stack, "review")
    caller = agents.connection("caller")["token"]
    sent = send(api, caller, "clause 1?").body
    crews_side = sent["inbox_id"][:-1] + "b"
    for token in (caller, stack.admin_token):
        assert api("GET", "/v1/messages", token, query={"inbox_id": crews_side}).status == 404
        impersonation = send(api, token, "I am the Crew", inbox_id=crews_side)
        assert impersonation.status == 404
        path = f"/v1/messages/{sent['message_id']}/ack"
        ack = api("POST", path, token, {"delivery": "processed"})
        assert ack.status == 404


def test_m8_crew_state_pages_inboxes_without_bodies_and_only_for_owners(api, stack, agents):
    crew(api, stack, "review")
    caller = agents.connection("caller")["token"]
    secret_words = ["clause 11 is confidential", "clause 12 is confidential"]
    sent = [send(api, caller, words).body for words in secret_words]
    wakeup = api(
        "POST", "/v1/wakeups", caller, {"inbox_id": sent[0]["inbox_id"], "delay_seconds": 600}
    )
    assert wakeup.status == 201, wakeup.body
    first = api("GET", "/v1/crews/contracts/state", stack.admin_token, query={"limit": 1})
    assert first.status == 200, first.body
    [newest] = first.body["inboxes"]
    assert newest["inbox_id"] == sent[1]["inbox_id"][:-1] + "b"  # the Crew's side
    assert newest["peer"] == "external" and newest["status"] == "active"
    assert first.body["next_cursor"] == newest["inbox_id"]
    second = api(
        "GET",
        "/v1/crews/contracts/state",
        stack.admin_token,
        query={"limit": 1, "after": first.body["next_cursor"]},
    ).body
    [oldest] = second["inboxes"]
    assert second["next_cursor"] is None
    assert oldest["delivery_records"][0]["message_id"] == sent[0]["message_id"]
    assert oldest["delivery_records"][0]["run_state"] == "pending_review"
    [shown] = oldest["wakeups"]
    assert shown["wakeup_id"] == wakeup.body["wakeup_id"] and shown["state"] == "scheduled"
    everything = json.dumps([first.body, second])
    assert not any(words in everything for words in secret_words)  # never bodies (M8)
    # Owners only: the account admin (scope) within its bounds.
    assert api("GET", "/v1/crews/contracts/state", caller).status == 403
    bounded = api(
        "POST",
        "/v1/connections",
        stack.admin_token,
        {"name": "other-admin", "scopes": ["admin"], "target_bounds": ["crew:other"]},
    ).body["token"]
    assert api("GET", "/v1/crews/contracts/state", bounded).status == 404
    assert api("GET", "/v1/crews/nobody/state", stack.admin_token).status == 404
    bad = api("GET", "/v1/crews/contracts/state", stack.admin_token, query={"after": "x"})
    assert bad.status == 400
    assert (
        api("GET", "/v1/crews/contracts/state", stack.admin_token, query={"limit": 21}).status
        == 400
    )


def test_m8_state_authority_is_checked_again_after_the_read(stack):
    """A connection revoked while its state read runs gets nothing (checked after the read)."""
    from agentworks.errors import Unavailable

    api_admin = stack.principal(stack.admin_token)
    definition = copy.deepcopy(CONTRACTS)
    stack.services.crews.definitions.create(api_admin, definition)
    other = stack.services.identity.create_connection(api_admin, "second-admin", scopes=["admin"])
    principal = stack.principal(other.token)
    assert stack.services.crews.inboxes.state(principal, "contracts").inboxes == []
    stack.services.identity.revoke(api_admin, other.connection.connection_id)
    with pytest.raises(Unavailable):
        stack.services.crews.inboxes.state(principal, "contracts")


def test_m10_a_failed_run_posts_nothing_and_its_delivery_record_shows_the_failure(
    api, stack, agents
):
    definition = copy.deepcopy(CONTRACTS)
    definition["adapter"]["rules"].insert(0, {"when": "explode", "fail": "The model broke."})
    assert api("POST", "/v1/crews", stack.admin_token, definition).status == 201
    caller = agents.connection("caller")["token"]
    sent = send(api, caller, "Please explode.").body
    state = wait_for_state(
        api, stack, lambda s: record_of(s, sent["message_id"])["run_state"] in TERMINAL_RUN
    )
    record = record_of(state, sent["message_id"])
    assert record["run_state"] == "failed" and record["error"] == "The model broke."
    assert state["inboxes"][0]["errors"] == [f"{sent['message_id']}: The model broke."]
    # Done with it (so it never blocks the inbox's history bound), but nothing was answered.
    wait_for_state(api, stack, lambda s: record_of(s, sent["message_id"])["receipt"] == "processed")
    page = api("GET", "/v1/messages", caller, query={"inbox_id": sent["inbox_id"]}).body
    assert page["messages"] == []


def test_m8_crew_state_pages_hold_limit_inboxes_and_each_its_newest_records(api, stack, agents):
    """M8: a page of a Crew's state is STATE_PAGE_MAX inboxes (STATE_PAGE_DEFAULT without a
    limit), the next page the rest; an inbox shows its newest STATE_DELIVERY_RECORDS
    deliveries and WAKEUPS_SHOWN_PER_INBOX wakeups."""
    crew(api, stack, "review")
    caller = agents.connection("caller")["token"]
    sent = []
    for n in range(limits.STATE_PAGE_MAX + 1):
        reply = send(api, caller, f"Clause {n}?")
        assert reply.status == 201, reply.body
        sent.append(reply.body)
    newest_inbox = sent[-1]["inbox_id"]
    for n in range(limits.STATE_DELIVERY_RECORDS):
        more = send(api, caller, f"And {n}?", inbox_id=newest_inbox)
        assert more.status == 201, more.body
    wakeups = []
    for _ in range(limits.WAKEUPS_SHOWN_PER_INBOX + 1):
        stack.clock.advance(0.001)
        made = api("POST", "/v1/wakeups", caller, {"inbox_id": newest_inbox, "delay_seconds": 600})
        assert made.status == 201, made.body
        wakeups.append(made.body["wakeup_id"])

    path, admin = "/v1/crews/contracts/state", stack.admin_token
    full = api("GET", path, admin, query={"limit": limits.STATE_PAGE_MAX}).body
    crew_side = [s["inbox_id"][:-1] + "b" for s in sent]
    assert [i["inbox_id"] for i in full["inboxes"]] == crew_side[::-1][: limits.STATE_PAGE_MAX]
    rest = api("GET", path, admin, query={"after": full["next_cursor"]}).body
    assert [i["inbox_id"] for i in rest["inboxes"]] == [crew_side[0]]
    assert rest["next_cursor"] is None
    default = api("GET", path, admin).body["inboxes"]
    assert len(default) == limits.STATE_PAGE_DEFAULT

    newest = full["inboxes"][0]
    shown = [r["message_id"] for r in newest["delivery_records"]]
    assert len(shown) == limits.STATE_DELIVERY_RECORDS
    assert sent[-1]["message_id"] not in shown  # the oldest of its 21 is no longer shown
    # …and each shown delivery has its run state (review holds them all).
    assert {r["run_state"] for r in newest["delivery_records"]} == {"pending_review"}
    assert {w["wakeup_id"] for w in newest["wakeups"]} == set(wakeups[1:])


def test_m11_a_delivery_record_is_kept_as_long_as_its_message_and_not_after(api, stack, agents):
    """A delivery record lives DELIVERY_RECORD_SECONDS from its message: the Crew's state
    names the run it started until the record's last second, and not after, while a later
    message keeps the inbox alive (DynamoDB may hold the expired item two days more)."""
    definition = crew(api, stack, "on")
    caller = agents.connection("caller")["token"]
    first = send(api, caller, "What does clause 7 say?").body
    state = wait_for_state(
        api, stack, lambda s: record_of(s, first["message_id"])["run_state"] in TERMINAL_RUN
    )
    run_id = record_of(state, first["message_id"])["run_id"]
    switch(api, stack, definition, "review")  # the next message starts no run
    stack.clock.advance(3 * limits.DAY_SECONDS)
    assert send(api, caller, "And clause 9?", inbox_id=first["inbox_id"]).status == 201
    [record] = [
        i
        for i in items(stack, stack.settings.work_table, pk="CREWCONV#", sk="MSG#")
        if i["message_id"] == first["message_id"]
    ]
    last_second = int(record["created_at"]) // 1000 + limits.DELIVERY_RECORD_SECONDS - 1

    def receiving_run() -> str | None:
        body = api("GET", "/v1/crews/contracts/state", stack.admin_token).body
        [inbox] = body["inboxes"]
        assert inbox["status"] == "active"
        return inbox["receiving_run_id"]

    stack.clock.advance(last_second - stack.clock.now())
    assert receiving_run() == run_id
    stack.clock.advance(1)
    assert receiving_run() is None
    assert record in items(stack, stack.settings.work_table, pk="CREWCONV#", sk="MSG#")


def test_c4_a_follow_up_carries_its_conversations_depth_to_the_crew(api, stack, agents):
    """A conversation a Crew's run opened is one level deeper than the run's own (C4): a
    request sent into it later is delivered at that depth, so the Crew's run it starts
    counts toward CONVERSATION_DEPTH_MAX as the first one did."""
    from agentworks.conversations.delivery_items import delivery_key
    from agentworks.dynamo import to_item
    from agentworks.ids import parse_inbox_id
    from agentworks.messaging import keys

    crew(api, stack, "review")  # deliveries wait for a person: nothing runs meanwhile
    caller = agents.connection("caller")["token"]
    first = send(api, caller, "What does clause 5 say?").body
    conversation = parse_inbox_id(first["inbox_id"]).conversation
    stack.client.update_item(  # as if a Crew's run two levels down had opened it
        TableName=stack.settings.messages_table,
        Key=to_item(keys.conversation(conversation)),
        UpdateExpression="SET #depth = :depth",
        ExpressionAttributeNames={"#depth": "depth"},
        ExpressionAttributeValues=to_item({":depth": limits.CONVERSATION_DEPTH_MAX}),
    )
    again = send(api, caller, "And clause 6?", inbox_id=first["inbox_id"], kind="request")
    assert again.status == 201, again.body
    stored = stack.client.get_item(
        TableName=stack.settings.work_table, Key=to_item(delivery_key(conversation, 2))
    )["Item"]
    assert stored["depth"] == {"N": str(limits.CONVERSATION_DEPTH_MAX)}


def test_m2_a_first_contact_to_a_crew_replays_by_its_submission_id(api, stack, agents):
    """The same submission_id sent again to a Crew answers as the first send did: the same
    conversation and message, replayed, and the Crew is told of it once."""
    crew(api, stack, "review")
    caller = agents.connection("caller")["token"]
    body = {"target": "crew:contracts", "message": "What does clause 5 say?"}
    first = api("POST", "/v1/messages", caller, {**body, "submission_id": "ask-1"})
    again = api("POST", "/v1/messages", caller, {**body, "submission_id": "ask-1"})
    assert (first.status, again.status) == (201, 200) and again.body["replayed"] is True
    assert again.body["message_id"] == first.body["message_id"]
    state = api("GET", "/v1/crews/contracts/state", stack.admin_token).body
    assert [len(i["delivery_records"]) for i in state["inboxes"]] == [1]


def test_m1_a_send_names_exactly_one_of_target_and_inbox(api, agents):
    worker = agents.named("worker")
    sent = api("POST", "/v1/messages", worker, {"target": "agent:worker", "message": "hi"})
    both = {"target": "agent:worker", "inbox_id": sent.body["inbox_id"], "message": "x"}
    for body in (both, {"message": "x"}):
        refused = api("POST", "/v1/messages", worker, body)
        assert (refused.status, refused.body["error"]) == (
            400,
            {
                "code": "invalid_request",
                "message": "Give exactly one of target (agent:NAME or crew:NAME, to start a "
                "conversation) or inbox_id (to continue one).",
                "field": "target",
            },
        )
