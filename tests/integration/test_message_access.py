"""A3–A5, M5: another account, a revoked connection, a connection not on a name's allow-list
and a connection without the scope are all refused on the first account's names, inboxes and
messages — and a refusal reads exactly like an unknown id."""

from __future__ import annotations

from typing import Any

import pytest

from agentworks.ids import InboxRef, MessageRef

UNKNOWN_CONV = "01ARZ3NDEKTSV4RRFFQ69G5FAV"


@pytest.fixture
def world(api, agents, stack) -> dict[str, Any]:
    worker, reviewer = agents.named("worker"), agents.named("reviewer")
    sent = api(
        "POST",
        "/v1/messages",
        worker,
        {"agent_name": "worker", "target": "agent:reviewer", "message": "secret plan"},
    ).body
    first = api("GET", "/v1/messages", reviewer, query={"agent_name": "reviewer"}).body["messages"][
        0
    ]
    return {"worker": worker, "reviewer": reviewer, "sent": sent, "first": first}


def _operations(world: dict[str, Any], inbox: str, reply_to: str, message_id: str) -> dict:
    return {
        "read-inbox": ("GET", "/v1/messages", None, {"inbox_id": reply_to}),
        "read-sender-inbox": ("GET", "/v1/messages", None, {"inbox_id": inbox}),
        "read-mailbox": ("GET", "/v1/messages", None, {"agent_name": "reviewer"}),
        "send-into": ("POST", "/v1/messages", {"inbox_id": reply_to, "message": "x"}, None),
        "send-as": (
            "POST",
            "/v1/messages",
            {"agent_name": "reviewer", "target": "agent:worker", "message": "x"},
            None,
        ),
        "ack": ("POST", f"/v1/messages/{message_id}/ack", {"delivery": "processed"}, None),
        "state": ("GET", f"/v1/inboxes/{reply_to}/state", None, None),
        "unregister": ("DELETE", "/v1/agents/reviewer", None, None),
    }


def _unknown_ids() -> tuple[str, str, str]:
    return (
        InboxRef(UNKNOWN_CONV, "a").inbox_id,
        InboxRef(UNKNOWN_CONV, "b").inbox_id,
        MessageRef(UNKNOWN_CONV, "b", 1).message_id,
    )


def _attempt(api, token, op) -> Any:
    method, path, body, query = op
    return api(method, path, token, body, query)


def _assert_nothing_changed(api, world) -> None:
    reviewer, first = world["reviewer"], world["first"]
    page = api("GET", "/v1/messages", reviewer, query={"inbox_id": first["reply_address"]}).body
    assert [(m["body"], m["receipt"]) for m in page["messages"]] == [("secret plan", "stored")]
    listed = api("GET", "/v1/agents", reviewer).body["agents"]
    assert sorted(a["agent_name"] for a in listed) == ["reviewer", "worker"]


@pytest.mark.parametrize(
    "op_name",
    [
        "read-inbox",
        "read-sender-inbox",
        "read-mailbox",
        "send-into",
        "send-as",
        "ack",
        "state",
        "unregister",
    ],
)
def test_a1_a5_another_account_sees_only_unavailable(api, stack, world, op_name):
    other = stack.services.identity.bootstrap("intruder").token
    real = _operations(
        world,
        world["sent"]["inbox_id"],
        world["first"]["reply_address"],
        world["first"]["message_id"],
    )[op_name]
    # The intruder registers its own "reviewer": a separate identity in its own account.
    api("POST", "/v1/agents", other, {"agent_name": "reviewer"})
    unknown = _operations(world, *_unknown_ids())[op_name]
    got, baseline = _attempt(api, other, real), _attempt(api, other, unknown)
    if op_name in {"read-mailbox", "send-as", "unregister"}:
        # Names are per account: these act on the intruder's own "reviewer", never ours.
        assert "secret plan" not in str(got.body)
    else:
        assert got.status == 404 and got.body == {
            "error": {
                "code": "unavailable",
                "message": "Not found or not available to this connection.",
            }
        }
        assert (got.status, got.body) == (baseline.status, baseline.body)
    _assert_nothing_changed(api, world)


@pytest.mark.parametrize(
    "op_name", ["read-inbox", "read-mailbox", "send-into", "send-as", "ack", "state", "unregister"]
)
def test_m5_connection_not_on_allow_list_is_refused_like_unknown(api, agents, world, op_name):
    outsider = agents.connection("outsider")["token"]
    real = _operations(
        world,
        world["sent"]["inbox_id"],
        world["first"]["reply_address"],
        world["first"]["message_id"],
    )[op_name]
    got = _attempt(api, outsider, real)
    assert got.status == 404 and got.body["error"]["code"] == "unavailable"
    if op_name != "read-mailbox" and op_name != "send-as" and op_name != "unregister":
        baseline = _attempt(api, outsider, _operations(world, *_unknown_ids())[op_name])
        assert (got.status, got.body) == (baseline.status, baseline.body)
    _assert_nothing_changed(api, world)


def test_m5_a_send_into_an_inbox_as_another_of_the_callers_names_looks_unknown(api, world):
    """The reviewer's connection holds a second name too; naming it on a send into the
    reviewer's inbox is refused exactly as an unknown inbox is, and stores nothing."""
    reviewer = world["reviewer"]
    assert api("POST", "/v1/agents", reviewer, {"agent_name": "helper"}).status == 200
    reply_to = world["first"]["reply_address"]
    as_helper = {"inbox_id": reply_to, "agent_name": "helper", "message": "x"}
    got = api("POST", "/v1/messages", reviewer, as_helper)
    unknown = {**as_helper, "inbox_id": _unknown_ids()[1]}
    baseline = api("POST", "/v1/messages", reviewer, unknown)
    assert got.status == 404 and (got.status, got.body) == (baseline.status, baseline.body)
    worker_page = {"inbox_id": world["sent"]["inbox_id"]}
    assert api("GET", "/v1/messages", world["worker"], query=worker_page).body["messages"] == []
    # As the name holding that side, the same send is stored.
    as_reviewer = {**as_helper, "agent_name": "reviewer"}
    assert api("POST", "/v1/messages", reviewer, as_reviewer).status == 201
    delivered = api("GET", "/v1/messages", world["worker"], query=worker_page).body["messages"]
    assert [m["body"] for m in delivered] == ["x"]


def test_m5_a_re_created_sender_name_holds_none_of_its_first_contacts(api, world):
    """The worker's first contact stored the worker's identity on its side: once the name
    is unregistered and registered again (a new identity), that inbox answers the new one
    as an unknown inbox."""
    worker = world["worker"]
    assert api("DELETE", "/v1/agents/worker", worker).status == 200
    assert api("POST", "/v1/agents", worker, {"agent_name": "worker"}).status == 200
    inbox = world["sent"]["inbox_id"]
    as_worker = {"inbox_id": inbox, "agent_name": "worker", "message": "x"}
    got = api("POST", "/v1/messages", worker, as_worker)
    baseline = api("POST", "/v1/messages", worker, {**as_worker, "inbox_id": _unknown_ids()[0]})
    assert got.status == 404 and (got.status, got.body) == (baseline.status, baseline.body)
    read = api("GET", "/v1/messages", worker, query={"inbox_id": inbox})
    assert (read.status, read.body) == (baseline.status, baseline.body)


def test_m5_register_over_someone_elses_name_is_refused(api, agents, world):
    outsider = agents.connection("outsider")["token"]
    before = api("GET", "/v1/agents", world["reviewer"]).body["agents"]
    got = api(
        "POST", "/v1/agents", outsider, {"agent_name": "reviewer", "allowed_connection_ids": []}
    )
    assert got.status == 409
    assert api("GET", "/v1/agents", world["reviewer"]).body["agents"] == before


@pytest.mark.parametrize(
    "op_name", ["read-inbox", "read-mailbox", "send-into", "send-as", "ack", "state", "unregister"]
)
def test_a3_revoked_connection_is_refused_on_the_next_request(api, agents, stack, world, op_name):
    helper = agents.connection("helper")
    api(
        "POST",
        "/v1/agents",
        world["reviewer"],
        {"agent_name": "reviewer", "allowed_connection_ids": [helper["connection_id"]]},
    )
    real = _operations(
        world,
        world["sent"]["inbox_id"],
        world["first"]["reply_address"],
        world["first"]["message_id"],
    )[op_name]
    assert api("GET", "/v1/whoami", helper["token"]).status == 200
    assert (
        api("DELETE", f"/v1/connections/{helper['connection_id']}", stack.admin_token).status == 200
    )
    got = _attempt(api, helper["token"], real)
    assert got.status == 401 and got.body["error"]["code"] == "unauthenticated"
    _assert_nothing_changed(api, world)


@pytest.mark.parametrize(
    ("op_name", "scope"),
    [
        ("read-inbox", "messages:read"),
        ("read-mailbox", "messages:read"),
        ("send-into", "messages:send"),
        ("send-as", "messages:send"),
        ("ack", "messages:read"),
        ("state", "messages:read"),
        ("unregister", "messages:send"),
    ],
)
def test_a2_connection_without_the_scope_is_refused(api, agents, stack, world, op_name, scope):
    others = [s for s in ("messages:read", "messages:send", "functions:call") if s != scope]
    narrow = agents.connection("narrow", scopes=others)
    api(
        "POST",
        "/v1/agents",
        world["reviewer"],
        {"agent_name": "reviewer", "allowed_connection_ids": [narrow["connection_id"]]},
    )
    real = _operations(
        world,
        world["sent"]["inbox_id"],
        world["first"]["reply_address"],
        world["first"]["message_id"],
    )[op_name]
    got = _attempt(api, narrow["token"], real)
    assert got.status == 403 and got.body["error"]["code"] == "forbidden"
    assert scope in got.body["error"]["message"]
    assert "secret" not in str(got.body)
    _assert_nothing_changed(api, world)


def test_a2_only_admin_manages_connections(api, agents):
    plain = agents.connection("plain")["token"]
    assert api("POST", "/v1/connections", plain, {"name": "x"}).status == 403
    assert api("GET", "/v1/connections", plain).status == 403


def test_a2_expired_connection_is_refused(api, stack):
    created = api(
        "POST", "/v1/connections", stack.admin_token, {"name": "short", "expires_in_seconds": 60}
    ).body
    assert api("GET", "/v1/whoami", created["token"]).status == 200
    stack.clock.advance(60)
    assert api("GET", "/v1/whoami", created["token"]).status == 401
    listed = api("GET", "/v1/connections", stack.admin_token).body["connections"]
    assert [c["status"] for c in listed if c["name"] == "short"] == ["expired"]


def test_a2_token_is_stored_only_as_a_hash(api, stack):
    created = api("POST", "/v1/connections", stack.admin_token, {"name": "hashed"}).body
    items = stack.client.scan(TableName=stack.settings.identity_table)["Items"]
    secret = created["token"].split(".")[-1]
    assert secret not in str(items)
    listed = api("GET", "/v1/connections", stack.admin_token).body["connections"]
    assert "token" not in str(listed) and "secret_hash" not in str(listed)


def test_a3_tampered_token_refused(api, stack):
    """A3: a tampered token, garbage and no token get one and the same 401 body."""
    token = stack.admin_token
    tampered = token[:-2] + ("AA" if token[-2:] != "AA" else "BB")
    refusals = [api("GET", "/v1/whoami", bad) for bad in (tampered, "garbage", None)]
    assert {r.status for r in refusals} == {401}
    assert all(r.body == refusals[0].body for r in refusals)
    assert refusals[0].body["error"]["code"] == "unauthenticated"
