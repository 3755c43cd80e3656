"""Push delivery on the in-memory stack (issue 10): `$connect` opens a listener as a read
would be checked, the messages table's real stream records feed the notifier, and the
notice lands on the connection through API Gateway's management API (moto records it).
The local stack's WebSocket server and its gone answers are in tests/e2e/test_push_channel.py.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from agentworks import limits
from agentworks.dynamo import from_item
from agentworks.push.notifier import delivered_messages
from tests.support.handlers import LambdaContext, load_handler
from tests.support.streams import StreamReader


def _ws_event(route: str, ws_id: str, token: str | None = None, **query: str) -> dict:
    headers = {"host": "push.local"} | ({"authorization": f"Bearer {token}"} if token else {})
    return {
        "headers": headers,
        "queryStringParameters": query or None,
        "requestContext": {
            "routeKey": route,
            "connectionId": ws_id,
            "eventType": {"$connect": "CONNECT", "$disconnect": "DISCONNECT"}.get(route, "MESSAGE"),
            "requestId": uuid.uuid4().hex,
            "stage": "v1",
        },
    }


def _push(event: dict) -> tuple[int, dict]:
    answer = load_handler("push").handler(event, LambdaContext())
    return answer["statusCode"], json.loads(answer["body"])


def _connect(token: str | None, **query: str) -> tuple[str, int, dict]:
    # Real ids end in "=" (base64); moto keeps a posted id percent-encoded, so none here.
    ws_id = f"ws{uuid.uuid4().hex[:14]}"
    status, body = _push(_ws_event("$connect", ws_id, token, **query))
    return ws_id, status, body


class Stream(StreamReader):
    """The messages table's stream, delivered to the notifier on demand."""

    def __init__(self, stack: Any) -> None:
        super().__init__(stack.client, stack.settings.messages_table)

    def deliver(self) -> dict:
        """One notifier invocation with every record since the last."""
        return load_handler("notifier").handler({"Records": self.records()}, LambdaContext())


def _posted() -> dict[str, bytes]:
    from moto.apigatewaymanagementapi.models import apigatewaymanagementapi_backends

    found: dict[str, bytes] = {}
    for account in apigatewaymanagementapi_backends.values():
        for backend in account.values():
            found |= {ws: c.data for ws, c in backend.connections.items() if c.data}
    return found


def _notices(ws_id: str) -> list[dict]:
    raw = _posted().get(ws_id, b"")
    decoder, found, at = json.JSONDecoder(), [], 0
    text = raw.decode()
    while at < len(text):
        value, at = decoder.raw_decode(text, at)
        found.append(value)
    return found


def _listener_items(stack: Any) -> list[dict]:
    table = stack.settings.listeners_table
    return [from_item(i) or {} for i in stack.client.scan(TableName=table)["Items"]]


@pytest.fixture
def stream(stack: Any) -> Stream:
    return Stream(stack)


def test_a_name_listener_hears_first_contacts_and_replies_once_per_batch(
    api, agents, stack, stream
):
    worker, reviewer = agents.named("worker"), agents.named("reviewer")
    ws_id, status, body = _connect(reviewer, agent_name="reviewer")
    assert (status, body) == (200, {"type": "listening"})
    sent = api("POST", "/v1/messages", worker, {"target": "agent:reviewer", "message": "hi"})
    report = stream.deliver()
    assert report == {"inboxes": 1, "posted": 1, "dropped": 0}
    [first] = _notices(ws_id)
    mailbox = api("GET", "/v1/messages", reviewer, query={"agent_name": "reviewer"}).body
    reply_to = mailbox["messages"][0]["reply_address"]
    assert first == {
        "type": "messages",
        "inbox_id": reply_to,
        "conversation_id": sent.body["conversation_id"],
        "message_id": mailbox["messages"][0]["message_id"],
    }
    # Three more to the reviewer, one the other way: one notice for the reviewer's inbox.
    for n in range(3):
        api("POST", "/v1/messages", worker, {"inbox_id": sent.body["inbox_id"], "message": f"{n}"})
    api("POST", "/v1/messages", reviewer, {"inbox_id": reply_to, "message": "back"})
    assert stream.deliver()["posted"] == 1
    latest = _notices(ws_id)[-1]
    assert latest["inbox_id"] == reply_to and latest["message_id"].endswith("0000000004")


def test_an_inbox_listener_hears_its_side_only(api, agents, stack, stream):
    reviewer = agents.named("reviewer")
    external = agents.connection("ext")["token"]
    sent = api("POST", "/v1/messages", external, {"target": "agent:reviewer", "message": "q"})
    ws_id, status, _ = _connect(external, inbox_id=sent.body["inbox_id"])
    assert status == 200
    stream.records()  # the first contact went before the listener
    api("POST", "/v1/messages", external, {"inbox_id": sent.body["inbox_id"], "message": "more"})
    assert stream.deliver()["posted"] == 0  # to the reviewer's side, not the listener's
    mailbox = api("GET", "/v1/messages", reviewer, query={"agent_name": "reviewer"}).body
    api(
        "POST",
        "/v1/messages",
        reviewer,
        {"inbox_id": mailbox["messages"][0]["reply_address"], "message": "a"},
    )
    assert stream.deliver()["posted"] == 1
    assert _notices(ws_id)[-1]["inbox_id"] == sent.body["inbox_id"]


def test_connect_refusals_share_one_shape_and_leave_nothing(api, agents, stack):
    worker = agents.named("worker")
    reader = agents.connection("sender-only", scopes=["messages:send"])["token"]
    sent = api("POST", "/v1/messages", worker, {"target": "agent:worker", "message": "self"})
    unknown_inbox = "ibx_" + "0" * 26 + "a"
    _, status, unknown = _connect(worker, inbox_id=unknown_inbox)
    assert status == 404
    # Another name's mailbox, and an inbox of the other side, look like an unknown inbox.
    for query in ({"agent_name": "nobody"}, {"agent_name": "worker"}):
        token = (
            agents.connection("stranger")["token"] if query["agent_name"] == "worker" else worker
        )
        _, status, body = _connect(token, **query)
        assert (status, body) == (404, unknown)
    assert _connect(None, agent_name="worker")[1] == 401
    assert _connect("awc_garbage", agent_name="worker")[1] == 401
    _, status, body = _connect(reader, inbox_id=sent.body["inbox_id"])
    assert status == 403 and body["error"]["code"] == "forbidden"
    _, status, body = _connect(worker)
    assert status == 400 and body["error"]["field"] == "agent_name"
    assert _listener_items(stack) == []


def test_a_revoked_connection_hears_nothing_more_and_its_socket_is_closed(
    api, agents, stack, stream
):
    worker = agents.named("worker")
    watcher = agents.connection("watcher")
    reviewer_token = watcher["token"]
    assert api("POST", "/v1/agents", reviewer_token, {"agent_name": "reviewer"}).status == 200
    ws_id, status, _ = _connect(reviewer_token, agent_name="reviewer")
    assert status == 200
    revoked = api("DELETE", f"/v1/connections/{watcher['connection_id']}", stack.admin_token)
    assert revoked.status == 200
    api("POST", "/v1/messages", worker, {"target": "agent:reviewer", "message": "secret?"})
    assert stream.deliver() == {"inboxes": 1, "posted": 0, "dropped": 1}
    assert ws_id not in _posted() and _listener_items(stack) == []


def test_a_child_whose_ancestor_is_revoked_hears_nothing_more(api, agents, stack, stream):
    """Issue 24: `ends_with_parent` through every generation, for a listener already open."""
    worker = agents.named("worker")
    person = agents.connection("person", scopes=["admin", "messages:read", "messages:send"])
    child = api(
        "POST",
        "/v1/connections",
        person["token"],
        {"name": "child", "scopes": ["admin", "messages:read", "messages:send"]},
    ).body
    body = {"name": "grandchild", "scopes": ["messages:read", "messages:send"]}
    grandchild = api(
        "POST", "/v1/connections", child["token"], {**body, "ends_with_parent": True}
    ).body
    token = grandchild["token"]
    assert api("POST", "/v1/agents", token, {"agent_name": "reviewer"}).status == 200
    ws_id, status, _ = _connect(token, agent_name="reviewer")
    assert status == 200
    revoked = api("DELETE", f"/v1/connections/{child['connection_id']}", stack.admin_token)
    assert revoked.status == 200
    api("POST", "/v1/messages", worker, {"target": "agent:reviewer", "message": "secret?"})
    assert stream.deliver() == {"inboxes": 1, "posted": 0, "dropped": 1}
    assert ws_id not in _posted() and _listener_items(stack) == []


def test_listeners_per_subject_at_and_past_the_limit(api, agents, stack):
    reviewer = agents.named("reviewer")
    for _ in range(limits.PUSH_LISTENERS_PER_SUBJECT):
        assert _connect(reviewer, agent_name="reviewer")[1] == 200
    _, status, body = _connect(reviewer, agent_name="reviewer")
    assert status == 409 and body["error"]["limit"] == limits.PUSH_LISTENERS_PER_SUBJECT
    assert len(_listener_items(stack)) == 2 * limits.PUSH_LISTENERS_PER_SUBJECT


def test_disconnect_removes_the_listener_and_a_ping_is_answered(api, agents, stack):
    reviewer = agents.named("reviewer")
    ws_id, _, _ = _connect(reviewer, agent_name="reviewer")
    assert len(_listener_items(stack)) == 2
    assert _push(_ws_event("$default", ws_id)) == (200, {"type": "pong"})
    assert _push(_ws_event("$disconnect", ws_id))[0] == 200
    assert _listener_items(stack) == []
    assert _connect(reviewer, agent_name="reviewer")[1] == 200  # a place again


def test_a_listener_expires_with_its_connection(api, agents, stack, stream):
    worker, reviewer = agents.named("worker"), agents.named("reviewer")
    ws_id, status, _ = _connect(reviewer, agent_name="reviewer")
    assert status == 200
    sent = {"target": "agent:reviewer", "message": "in time"}
    assert api("POST", "/v1/messages", worker, sent).status == 201
    assert stream.deliver() == {"inboxes": 1, "posted": 1, "dropped": 0}  # the path works
    stack.clock.advance(limits.PUSH_CONNECTION_SECONDS + limits.PUSH_LISTENER_TTL_MARGIN_SECONDS)
    late = api("POST", "/v1/messages", worker, {"target": "agent:reviewer", "message": "late"})
    assert late.status == 201
    # The notifier saw the message's inbox and found no live listener for it: the listener
    # item is still there (TTL deletes it later), but expired, so nothing is posted.
    assert stream.deliver() == {"inboxes": 1, "posted": 0, "dropped": 0}
    assert {i["pk"].split("#", 1)[0] for i in _listener_items(stack)} == {"SUB", "WS"}
    assert len(_notices(ws_id)) == 1  # only the notice of the message sent in time


def test_only_new_messages_wake_anyone():
    def record(event: str, pk: str, sk: str, side: str | None = "b") -> dict:
        image = {"pk": {"S": pk}, "sk": {"S": sk}} | ({"to_side": {"S": side}} if side else {})
        return {
            "eventName": event,
            "dynamodb": {"Keys": {"pk": image["pk"], "sk": image["sk"]}, "NewImage": image},
        }

    conv = "01JZ0000000000000000000000"
    records = [
        record("INSERT", f"CONV#{conv}", "M#0000000002"),
        record("MODIFY", f"CONV#{conv}", "M#0000000001"),  # a receipt
        record("INSERT", f"CONV#{conv}", "META", None),
        record("INSERT", "MBX#agt_1", "0000000001", None),
        record("REMOVE", f"CONV#{conv}", "M#0000000001"),
    ]
    [only] = delivered_messages(records)
    assert (only.message.conversation, only.message.side, only.message.seq) == (conv, "b", 2)
    assert only.to_agent is None


def test_the_directory_says_which_names_have_a_listener_connected(api, agents, stack):
    """Issue 10 item 5: `agents --all` (GET /v1/agents?listening=true) shows whether a
    listener of each name is connected; a plain listing reads no listener."""
    reader = agents.named("reader")
    agents.named("quiet")
    ws_id, status, _ = _connect(reader, agent_name="reader")
    assert status == 200
    listed = api("GET", "/v1/agents", reader, query={"listening": "true"}).body["agents"]
    assert {a["agent_name"]: a["listening"] for a in listed} == {"quiet": False, "reader": True}
    plain = api("GET", "/v1/agents", reader).body["agents"]
    assert {a["listening"] for a in plain} == {None}
    assert _push(_ws_event("$disconnect", ws_id, None))[0] == 200
    listed = api("GET", "/v1/agents", reader, query={"listening": "true"}).body["agents"]
    assert {a["agent_name"]: a["listening"] for a in listed} == {"quiet": False, "reader": False}


def test_a_relay_run_credential_is_refused_like_a_bad_token_within_the_push_role(agents, stack):
    """Issue 23, an attacker's steps: `$connect` with a relay run's credential (`awr1.`),
    well-formed for a real account or not, answers the very bytes a random bad token gets,
    and reads nothing the Push role may not read (before: a GetItem of the work table,
    AccessDenied on AWS, an unhandled error anyone could fire)."""
    from agentworks.ids import new_id
    from tests.support.aws_calls import CallRecorder
    from tests.support.iam_guard import denials

    agents.named("worker")
    account = stack.principal(stack.admin_token).account_id
    attempts = {
        "random": "awc_" + uuid.uuid4().hex,
        # A connection token's shape for no connection: the one read, of the identity table.
        "unknown connection": f"aw1.{account}.conn_{uuid.uuid4().hex[:26]}.{uuid.uuid4().hex}",
        "well-formed": f"awr1.{account}.{new_id('rrun', stack.clock)}.{uuid.uuid4().hex}",
        "other account": f"awr1.acct_{uuid.uuid4().hex[:26]}.rrun_x.{uuid.uuid4().hex}",
        "malformed": "awr1.",
        "too many parts": f"awr1.{account}.rrun_x.s.extra",
    }
    recorder = CallRecorder()
    answers = {}
    with recorder.recording():
        for label, token in attempts.items():
            event = _ws_event("$connect", f"ws{uuid.uuid4().hex[:14]}", token, agent_name="worker")
            answers[label] = load_handler("push").handler(event, LambdaContext())
    assert answers["random"]["statusCode"] == 401
    assert all(answer == answers["random"] for answer in answers.values()), answers
    assert denials(recorder.calls, stack.resources) == []
    # The one read of all five: the unknown connection's, in the identity table. A relay
    # credential reads nothing (before: a GetItem of the work table).
    assert [str(c) for c in recorder.calls] == ["PushFunction: dynamodb.GetItem"]
    assert recorder.calls[0].params["TableName"] == stack.settings.identity_table
    assert _listener_items(stack) == []


def test_a_cookie_signed_upgrade_needs_the_pages_own_origin(api, agents, stack, monkeypatch):
    """Issue 24: any page can start a WebSocket upgrade, and the browser sends the Inbox's
    session cookie with it (no CORS preflight; on the local stack every port of the host
    shares the cookie). Signed in by the cookie, `$connect` is accepted only with the
    pages' own Origin (the HTTP API's URL) and refused from any other, or none, exactly as
    a bad token is; a bearer token keeps working whatever Origin it carries (or none)."""
    from tests.integration.test_web_inbox import cookie_header, sign_in

    worker = agents.named("worker")
    cookie = cookie_header(sign_in(api, worker))
    monkeypatch.setattr(stack.services.push, "pages_url", lambda: "https://api.example.com/")
    bad_token = _push(_ws_event("$connect", "wsbad", "awc_garbage", agent_name="worker"))

    def upgrade(origin: str | None, token: str | None = None) -> tuple[int, dict]:
        event = _ws_event("$connect", f"ws{uuid.uuid4().hex[:14]}", token, agent_name="worker")
        if token is None:
            event["headers"]["cookie"] = cookie[1]
        if origin is not None:
            event["headers"]["origin"] = origin
        return _push(event)

    for foreign in (
        "https://evil.example",
        "http://api.example.com",  # another scheme
        "https://api.example.com:8443",  # another port
        "https://api.example.com.evil.example",
        "null",
        None,
    ):
        assert upgrade(foreign) == bad_token, foreign
    assert _listener_items(stack) == []
    assert upgrade("https://API.example.com") == (200, {"type": "listening"})
    assert upgrade("https://api.example.com:443") == (200, {"type": "listening"})
    for origin in (None, "https://evil.example"):  # the CLI and the bridge send none
        assert upgrade(origin, token=worker) == (200, {"type": "listening"})
    # No known pages URL: no cookie-signed upgrade at all.
    monkeypatch.setattr(stack.services.push, "pages_url", lambda: "")
    assert upgrade("https://api.example.com") == bad_token
