"""Bad input gets a 4xx with the one error shape — never a 500 — and writes nothing (M3, M4)."""

from __future__ import annotations

import base64
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentworks import limits
from agentworks.messaging.names import is_valid_agent_name
from agentworks_local.gateway import lambda_response
from tests.support.handlers import Reply, http_event, invoke_function


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
        {
            "message": "x",
            "target": "agent:reviewer",
            "submission_id": "s" * (limits.SUBMISSION_ID_MAX_CHARS + 1),
        },
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


# -- bodies that are not strict JSON, methods, nesting and encoded paths ----------------


def _raw(method: str, path: str, token: str, body: bytes) -> Any:
    """A request whose body bytes are sent as they are (HTTP API base64-encodes them when
    they are not UTF-8 text)."""
    event = http_event(method, path, token=token)
    event["body"], event["isBase64Encoded"] = base64.b64encode(body).decode(), True
    response = lambda_response(invoke_function("ApiFunction", event))
    return Reply(response.status, json.loads(response.body or b"null"), dict(response.headers))


def _deep(levels: int) -> str:
    return "[" * levels + "]" * levels


NOT_STRICT_JSON = {
    "duplicate key": '{"target":"agent:reviewer","message":"a","message":"b"}',
    "NaN": '{"target":"agent:reviewer","message":"a","submission_id":NaN}',
    "Infinity": '{"target":"agent:reviewer","message":"a","x":Infinity}',
    "-Infinity": '{"target":"agent:reviewer","message":"a","x":-Infinity}',
    "1e999": '{"target":"agent:reviewer","message":"a","x":1e999}',
    "5000 digits": '{"target":"agent:reviewer","message":"a","x":' + "7" * 5000 + "}",
    "lone surrogate": '{"target":"agent:reviewer","message":"\\udc00 x"}',
    "lone surrogate key": '{"target":"agent:reviewer","message":"x","\\ud800":1}',
    "10000 deep": '{"target":"agent:reviewer","message":"a","x":' + _deep(10_000) + "}",
    "depth past the limit": '{"target":"agent:reviewer","message":"a","x":'
    + _deep(limits.JSON_MAX_DEPTH)
    + "}",
    "number past the limit": '{"target":"agent:reviewer","message":"a","x":'
    + "1" * (limits.JSON_NUMBER_MAX_CHARS + 1)
    + "}",
}


def test_bodies_that_are_not_strict_json_are_400_and_write_nothing(api, agents, stack):
    worker, _, _, _ = _conversation(api, agents)
    before = _item_count(stack)
    for case, raw in NOT_STRICT_JSON.items():
        reply = api("POST", "/v1/messages", worker, raw_body=raw)
        assert _is_error(reply, 400) and reply.body["error"]["code"] == "invalid_request", (
            case,
            reply,
        )
    invalid_utf8 = b'{"target":"agent:reviewer","message":"\xff\xfe"}'
    reply = _raw("POST", "/v1/messages", worker, invalid_utf8)
    assert _is_error(reply, 400) and "UTF-8" in reply.body["error"]["message"]
    assert _item_count(stack) == before


def test_nesting_and_numbers_at_their_limits_are_parsed(api, agents):
    """One level and one digit short of the bound, the body reaches validation (which then
    names the unknown field): the limit refuses exactly what is past it."""
    worker, _, _, _ = _conversation(api, agents)
    at_depth = (
        '{"target":"agent:reviewer","message":"a","x":' + _deep(limits.JSON_MAX_DEPTH - 1) + "}"
    )
    at_digits = (
        '{"target":"agent:reviewer","message":"a","x":' + "1" * (limits.JSON_NUMBER_MAX_CHARS) + "}"
    )
    for raw in (at_depth, at_digits):
        reply = api("POST", "/v1/messages", worker, raw_body=raw)
        assert _is_error(reply, 400) and "x" in reply.body["error"]["message"], reply
        assert "nests deeper" not in reply.body["error"]["message"]
        assert "Numbers are limited" not in reply.body["error"]["message"]
    emoji = api("POST", "/v1/messages", worker, raw_body='{"target":"agent:reviewer",'
                '"message":"\\ud83d\\ude00 paired surrogates are fine"}')  # fmt: skip
    assert emoji.status in (201, 202), emoji.body


def test_methods_a_path_does_not_serve_are_405_with_allow(api, stack):
    token = stack.admin_token
    for method, path, allowed in (
        ("TRACE", "/v1/messages", "GET, POST"),
        ("PUT", "/v1/messages", "GET, POST"),
        ("HEAD", "/v1/crews", "GET, POST"),
        ("OPTIONS", "/v1/connections", "GET, POST"),
        ("PATCH", "/v1/crews/contracts", "DELETE, GET, PUT"),
        ("CONNECT", "/v1/whoami", "GET"),
    ):
        reply = api(method, path, token)
        assert _is_error(reply, 405), (method, path, reply)
        assert reply.body["error"]["code"] == "method_not_allowed"
        assert reply.headers["Allow"] == allowed, (method, path, reply.headers)
    assert _is_error(api("TRACE", "/v1/nowhere", token), 404)


def test_f3_args_nested_past_the_limit_are_400(api, stack):
    from tests.integration.crew_support import CONTRACTS

    assert api("POST", "/v1/crews", stack.admin_token, CONTRACTS).status == 201

    def nested(levels: int) -> dict:
        args: dict = {"text": "t"}
        for _ in range(levels - 1):
            args = {"text": "t", "more": args}
        return args

    call = {"target": "crew:contracts", "function": "summarize"}
    at_limit = nested(limits.ARGS_MAX_DEPTH)
    ok = api("POST", "/v1/calls", stack.admin_token, {**call, "args": at_limit})
    assert ok.status == 202, ok.body
    past = api(
        "POST", "/v1/calls", stack.admin_token, {**call, "args": nested(limits.ARGS_MAX_DEPTH + 1)}
    )
    assert _is_error(past, 400) and past.body["error"]["field"] == "args"
    assert f"{limits.ARGS_MAX_DEPTH} levels" in past.body["error"]["message"]


def test_percent_encoded_path_segments_are_decoded(api, agents, stack):
    admin = stack.admin_token
    created = api("POST", "/v1/connections", admin, {"name": "encoded"}).body
    connection_id = created["connection_id"]
    encoded = connection_id.replace("_", "%5F", 1)
    assert encoded != connection_id
    revoked = api("DELETE", f"/v1/connections/{encoded}", admin)
    assert revoked.status == 200 and revoked.body["connection_id"] == connection_id
    assert api("POST", "/v1/agents", admin, {"agent_name": "a.b"}).status == 200
    removed = api("DELETE", "/v1/agents/a%2Eb", admin)
    assert removed.status == 200, removed.body
    # An encoded "/" stays inside its segment: no route is reached by smuggling one.
    assert _is_error(api("DELETE", "/v1/agents/a%2Fb", admin))


@settings(
    max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None
)
@given(body=st.binary(min_size=1, max_size=200) | st.text(min_size=1, max_size=200).map(str.encode))
def test_arbitrary_body_bytes_never_get_a_5xx(api, stack, body):
    reply = _raw("POST", "/v1/messages", stack.admin_token, body)
    assert reply.status < 500 and _is_error(reply), (body, reply)
