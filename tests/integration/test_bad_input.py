"""Bad input gets a 4xx with the one error shape — never a 500 — and writes nothing (M3, M4)."""

from __future__ import annotations

import base64
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentworks.messaging.names import is_valid_agent_name


def _item_count(stack) -> int:
    return sum(
        stack.client.scan(TableName=t, Select="COUNT")["Count"]
        for t in (stack.settings.messages_table, stack.settings.identity_table)
    )


def _is_error(reply, status: int | None = None) -> bool:
    ok_shape = set(reply.body) == {"error"} and {"code", "message"} <= set(reply.body["error"])
    return ok_shape and 400 <= reply.status < 500 and (status is None or reply.status == status)


def _conversation(api, agents):
    worker, reviewer = agents.named("worker"), agents.named("reviewer")
    sent = api("POST", "/v1/messages", worker, {"target": "agent:reviewer", "message": "m"}).body
    page = api("GET", "/v1/messages", reviewer, query={"agent_name": "reviewer"}).body
    return worker, reviewer, sent, page


def test_m3_tampered_and_cross_type_cursors_are_400(api, agents, stack):
    worker, reviewer, sent, mailbox_page = _conversation(api, agents)
    inbox_page = api("GET", "/v1/messages", worker, query={"inbox_id": sent["inbox_id"]}).body
    good = inbox_page["next_cursor"]
    raw = bytearray(base64.urlsafe_b64decode(good + "=" * (-len(good) % 4)))
    raw[5] ^= 1
    tampered = base64.urlsafe_b64encode(bytes(raw)).decode().rstrip("=")
    forged = base64.urlsafe_b64encode(json.dumps({"k": "inbox", "q": 0}).encode()).decode()
    for cursor in (tampered, forged, "not-a-cursor", "%%%", "A" * 600, good[:-3]):
        reply = api(
            "GET", "/v1/messages", worker, query={"inbox_id": sent["inbox_id"], "after": cursor}
        )
        assert _is_error(reply, 400), (cursor, reply)
    # A mailbox cursor on an inbox read, and the other way round.
    mailbox_cursor = mailbox_page["next_cursor"]
    mixed = api(
        "GET",
        "/v1/messages",
        reviewer,
        query={"inbox_id": mailbox_page["messages"][0]["reply_address"], "after": mailbox_cursor},
    )
    assert _is_error(mixed, 400) and "mailbox cursor" in mixed.body["error"]["message"]
    assert _is_error(
        api("GET", "/v1/messages", reviewer, query={"agent_name": "reviewer", "after": good}), 400
    )
    # A cursor of another inbox is refused too.
    other = api("POST", "/v1/messages", worker, {"target": "agent:reviewer", "message": "2"}).body
    assert _is_error(
        api("GET", "/v1/messages", worker, query={"inbox_id": other["inbox_id"], "after": good}),
        400,
    )


@settings(
    max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None
)
@given(
    name=st.one_of(
        st.text(min_size=0, max_size=80),
        st.from_regex(r"[._-][A-Za-z0-9._-]{0,10}", fullmatch=True),
        st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{64,70}", fullmatch=True),
    )
)
def test_m4_invalid_names_refused_without_writes(api, agents, stack, name):
    token = agents.stack.admin_token
    if is_valid_agent_name(name):
        return
    before = _item_count(stack)
    for reply in (
        api("POST", "/v1/agents", token, {"agent_name": name}),
        api("POST", "/v1/messages", token, {"target": f"agent:{name}", "message": "x"}),
        api("GET", "/v1/messages", token, query={"agent_name": name}),
    ):
        assert reply.status < 500 and _is_error(reply), (name, reply)
    assert _item_count(stack) == before


@settings(
    max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None
)
@given(name=st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", fullmatch=True))
def test_m4_valid_names_accepted_case_insensitively(api, stack, name):
    token = stack.admin_token
    reply = api("POST", "/v1/agents", token, {"agent_name": name})
    assert reply.status == 200, reply.body
    again = api("POST", "/v1/agents", token, {"agent_name": name.swapcase()})
    assert again.body["agent_id"] == reply.body["agent_id"]
    assert api("DELETE", f"/v1/agents/{name}", token).status == 200


def test_missing_fields_wrong_types_and_unknown_fields(api, agents, stack):
    worker, _, sent, _ = _conversation(api, agents)
    before = _item_count(stack)
    cases = [
        {},
        {"target": "agent:reviewer"},
        {"message": "no destination"},
        {"message": "both", "target": "agent:reviewer", "inbox_id": sent["inbox_id"]},
        {"message": 42, "target": "agent:reviewer"},
        {"message": ["x"], "inbox_id": sent["inbox_id"]},
        {"message": "x", "target": "agent:reviewer", "surprise": True},
        {"message": "x", "target": "crew:nope"},
        {"message": "x", "target": "reviewer"},
        {"message": "x", "inbox_id": "ibx_nope"},
        {"message": "x", "inbox_id": 7},
        {"message": "x", "target": "agent:reviewer", "submission_id": ""},
        {"message": "x", "target": "agent:reviewer", "submission_id": "s" * 129},
    ]
    for body in cases:
        reply = api("POST", "/v1/messages", worker, body)
        assert _is_error(reply), (body, reply)
    for raw in ("{not json", "[]", "null", '"text"'):
        reply = api("POST", "/v1/messages", worker, raw_body=raw)
        assert _is_error(reply), (raw, reply)
    for query in ({"limit": "ten"}, {"wait_seconds": "soon"}, {"limit": -1}, {}):
        reply = api("GET", "/v1/messages", worker, query=query)
        assert _is_error(reply), (query, reply)
    assert _is_error(
        api("POST", f"/v1/messages/{sent['message_id']}/ack", worker, {"delivery": "stored"})
    )
    assert _is_error(api("POST", "/v1/messages/msg_bogus/ack", worker, {"delivery": "processed"}))
    assert _is_error(
        api("POST", "/v1/connections", stack.admin_token, {"name": "x", "scopes": ["root"]}), 400
    )
    assert _is_error(
        api(
            "POST",
            "/v1/connections",
            stack.admin_token,
            {"name": "x", "target_bounds": ["database:prod"]},
        ),
        400,
    )
    assert _is_error(api("GET", "/v1/nowhere", worker), 404)
    assert _item_count(stack) == before


def test_oversized_body_is_413_and_writes_nothing(api, agents, stack):
    worker, _, sent, _ = _conversation(api, agents)
    before = _item_count(stack)
    huge = json.dumps({"inbox_id": sent["inbox_id"], "message": "x" * (600 * 1024)})
    reply = api("POST", "/v1/messages", worker, raw_body=huge)
    assert reply.status == 413 and reply.body["error"]["code"] == "payload_too_large"
    assert _item_count(stack) == before
