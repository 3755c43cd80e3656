"""A2, A3b, A4, A5, M4, M5: what a connection limited by target bounds may administer and
touch, registration that does not reveal names, and the live-connection limit."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from agentworks import limits
from agentworks.dynamo import from_item
from agentworks.identity.models import ADMIN, ALL_SCOPES, MESSAGES_READ

UNAVAILABLE = {
    "error": {"code": "unavailable", "message": "Not found or not available to this connection."}
}


def _create(api: Any, token: str, **body: Any) -> Any:
    return api("POST", "/v1/connections", token, body)


@pytest.fixture
def bounded_admin(api: Any, stack: Any) -> dict[str, Any]:
    reply = _create(
        api,
        stack.admin_token,
        name="team-admin",
        scopes=list(ALL_SCOPES),
        target_bounds=["agent:worker", "crew:contracts"],
    )
    assert reply.status == 201, reply.body
    return reply.body


# ---------------------------------------------------------------- A3b: bounded admin


def test_a3b_bounded_admin_lists_and_revokes_only_what_its_bounds_cover(
    api: Any, stack: Any, bounded_admin: dict[str, Any]
) -> None:
    token = bounded_admin["token"]
    inside = _create(api, token, name="inside", target_bounds=["agent:worker"]).body
    outside = _create(api, stack.admin_token, name="outside", target_bounds=["agent:other"]).body
    unbounded = _create(api, stack.admin_token, name="plain").body
    root = stack.principal(stack.admin_token).connection_id

    listed = api("GET", "/v1/connections", token).body["connections"]
    assert sorted(c["name"] for c in listed) == ["inside", "team-admin"]

    for foreign in (outside["connection_id"], unbounded["connection_id"], root):
        got = api("DELETE", f"/v1/connections/{foreign}", token)
        unknown = api("DELETE", "/v1/connections/conn_00000000000000000000000000", token)
        assert (got.status, got.body) == (404, UNAVAILABLE) == (unknown.status, unknown.body)
    assert api("GET", "/v1/whoami", unbounded["token"]).status == 200
    assert api("GET", "/v1/whoami", stack.admin_token).status == 200

    revoked = api("DELETE", f"/v1/connections/{inside['connection_id']}", token)
    assert revoked.status == 200 and revoked.body["status"] == "revoked"
    assert api("GET", "/v1/whoami", inside["token"]).status == 401


def test_a3b_scheduler_needs_an_unbounded_admin(
    api: Any, stack: Any, bounded_admin: dict[str, Any]
) -> None:
    token = bounded_admin["token"]
    for method, body in (("GET", None), ("POST", {"paused": True})):
        got = api(method, "/v1/scheduler", token, body)
        assert got.status == 403 and got.body["error"]["code"] == "forbidden"
        assert "without target bounds" in got.body["error"]["message"]
    assert api("GET", "/v1/scheduler", stack.admin_token).body == {"paused": False}


def test_a4_bounds_outside_your_own_are_a_400_not_a_narrowed_connection(
    api: Any, bounded_admin: dict[str, Any]
) -> None:
    token = bounded_admin["token"]
    before = api("GET", "/v1/connections", token).body["connections"]
    got = _create(api, token, name="wider", target_bounds=["agent:worker", "crew:payroll"])
    assert got.status == 400 and got.body["error"]["field"] == "target_bounds"
    assert "crew:payroll" in got.body["error"]["message"]
    assert api("GET", "/v1/connections", token).body["connections"] == before
    # Without bounds a bounded creator's connection inherits its bounds; a subset is fine.
    inherited = _create(api, token, name="inherit").body
    assert inherited["target_bounds"] == ["agent:worker", "crew:contracts"]
    narrower = _create(api, token, name="narrow", target_bounds=["crew:contracts"]).body
    assert narrower["target_bounds"] == ["crew:contracts"]


# ---------------------------------------------------------------- A4: bounds on names


def test_a4_bounds_apply_to_mailbox_read_send_as_and_unregister(
    api: Any, agents: Any, stack: Any
) -> None:
    reviewer = agents.named("reviewer")
    worker = agents.named("worker")
    api("POST", "/v1/messages", worker, {"target": "agent:reviewer", "message": "hi"})
    # On reviewer's allow-list, but bounded to another name.
    helper = _create(api, stack.admin_token, name="helper", target_bounds=["agent:worker"]).body
    listed = api(
        "POST",
        "/v1/agents",
        reviewer,
        {"agent_name": "reviewer", "allowed_connection_ids": [helper["connection_id"]]},
    )
    assert listed.status == 200, listed.body
    attempts = {
        "mailbox": ("GET", "/v1/messages", None, {"agent_name": "reviewer"}),
        "send-as": (
            "POST",
            "/v1/messages",
            {"agent_name": "reviewer", "target": "agent:worker", "message": "x"},
            None,
        ),
        "unregister": ("DELETE", "/v1/agents/reviewer", None, None),
    }
    unknown = {
        "mailbox": ("GET", "/v1/messages", None, {"agent_name": "nobody"}),
        "send-as": (
            "POST",
            "/v1/messages",
            {"agent_name": "nobody", "target": "agent:worker", "message": "x"},
            None,
        ),
        "unregister": ("DELETE", "/v1/agents/nobody", None, None),
    }
    for op, (method, path, body, query) in attempts.items():
        got = api(method, path, helper["token"], body, query)
        u_method, u_path, u_body, u_query = unknown[op]
        baseline = api(u_method, u_path, helper["token"], u_body, u_query)
        assert (got.status, got.body) == (404, UNAVAILABLE), op
        assert (got.status, got.body) == (baseline.status, baseline.body), op
    names = [a["agent_name"] for a in api("GET", "/v1/agents", reviewer).body["agents"]]
    assert names == ["reviewer", "worker"]


def test_a3b_an_account_inbox_is_refused_when_its_peer_is_outside_the_bounds(
    api: Any, agents: Any, stack: Any
) -> None:
    """The external inbox belongs to the account (any client holding its id may use it),
    but only within the client's bounds: a peer outside them answers like an unknown id."""
    agents.named("reviewer")
    account = agents.connection("account-client")["token"]
    sent = api("POST", "/v1/messages", account, {"target": "agent:reviewer", "message": "q"}).body
    inbox = sent["inbox_id"]
    # Another client of the account, unbounded, holds the same inbox (A3b) ...
    sibling = agents.connection("sibling")["token"]
    assert api("GET", "/v1/messages", sibling, query={"inbox_id": inbox}).status == 200
    # ... but one bounded to another peer may neither read nor send into it.
    bounded = _create(api, stack.admin_token, name="b", target_bounds=["agent:worker"]).body
    for method, body, query in (
        ("GET", None, {"inbox_id": inbox}),
        ("POST", {"inbox_id": inbox, "message": "x"}, None),
    ):
        got = api(method, "/v1/messages", bounded["token"], body, query)
        assert (got.status, got.body) == (404, UNAVAILABLE)
    state = api("GET", f"/v1/inboxes/{inbox}/state", bounded["token"])
    assert (state.status, state.body) == (404, UNAVAILABLE)
    inside = _create(api, stack.admin_token, name="in", target_bounds=["agent:reviewer"]).body
    assert api("GET", "/v1/messages", inside["token"], query={"inbox_id": inbox}).status == 200


# ---------------------------------------------------------------- M4/A5: registration


def test_a5_register_a_taken_name_without_messages_read_reveals_nothing(
    api: Any, agents: Any, stack: Any
) -> None:
    agents.named("reviewer")
    no_read = [s for s in ALL_SCOPES if s not in (MESSAGES_READ, ADMIN)]
    blind = agents.connection("blind", scopes=no_read)["token"]
    taken = api("POST", "/v1/agents", blind, {"agent_name": "reviewer"})
    # The same answer as for a name it may not take, and as for an unknown name's removal.
    bounded_blind = _create(
        api, stack.admin_token, name="bb", scopes=no_read, target_bounds=["agent:x"]
    ).body["token"]
    not_yours = api("POST", "/v1/agents", bounded_blind, {"agent_name": "elsewhere"})
    unknown = api("DELETE", "/v1/agents/nobody-at-all", blind)
    assert (taken.status, taken.body) == (404, UNAVAILABLE)
    assert (taken.status, taken.body) == (not_yours.status, not_yours.body)
    assert (taken.status, taken.body) == (unknown.status, unknown.body)
    # A connection that may list the directory learns nothing new from a conflict.
    reader = agents.connection("reader")["token"]
    assert api("POST", "/v1/agents", reader, {"agent_name": "reviewer"}).status == 409


# ---------------------------------------------------------------- A2: connection limit


def _live_count(stack: Any, account_id: str) -> int:
    item = stack.client.get_item(
        TableName=stack.settings.identity_table,
        Key={"pk": {"S": f"ACCOUNT#{account_id}"}, "sk": {"S": "ACCOUNT"}},
        ConsistentRead=True,
    )["Item"]
    return int((from_item(item) or {})["live_connections"])


def _fill_to(stack: Any, live: int) -> list[str]:
    """Creates connections (in-process, for speed) until the account holds `live`."""
    admin = stack.principal(stack.admin_token)
    missing = live - _live_count(stack, admin.account_id)
    identity = stack.services.identity
    return [
        identity.create_connection(admin, f"fill-{i}").connection.connection_id
        for i in range(missing)
    ]


def test_a2_limit_counts_live_connections_and_revoking_frees_a_place(api: Any, stack: Any) -> None:
    account_id = stack.principal(stack.admin_token).account_id
    filled = _fill_to(stack, limits.CONNECTIONS_PER_ACCOUNT)
    assert _live_count(stack, account_id) == limits.CONNECTIONS_PER_ACCOUNT
    past = _create(api, stack.admin_token, name="one-too-many")
    assert past.status == 409 and past.body["error"]["code"] == "limit_reached"
    assert past.body["error"]["message"] == (  # what counts, and what to do
        f"An account holds at most {limits.CONNECTIONS_PER_ACCOUNT} connections that are not "
        "revoked (expired ones count until revoked); revoke unused ones first: agentworks "
        "connections revoke CONNECTION_ID"
    )
    # Revoking frees exactly one place; revoking again frees nothing more.
    assert api("DELETE", f"/v1/connections/{filled[0]}", stack.admin_token).status == 200
    assert api("DELETE", f"/v1/connections/{filled[0]}", stack.admin_token).status == 200
    assert _live_count(stack, account_id) == limits.CONNECTIONS_PER_ACCOUNT - 1
    assert _create(api, stack.admin_token, name="takes-the-place").status == 201
    assert _create(api, stack.admin_token, name="again-too-many").status == 409


def test_a2_expired_connections_count_until_revoked(api: Any, stack: Any) -> None:
    account_id = stack.principal(stack.admin_token).account_id
    _fill_to(stack, limits.CONNECTIONS_PER_ACCOUNT - 1)
    short = _create(api, stack.admin_token, name="short", expires_in_seconds=60).body
    stack.clock.advance(61)
    assert _create(api, stack.admin_token, name="full").status == 409
    assert (
        api("DELETE", f"/v1/connections/{short['connection_id']}", stack.admin_token).status == 200
    )
    assert _live_count(stack, account_id) == limits.CONNECTIONS_PER_ACCOUNT - 1
    assert _create(api, stack.admin_token, name="now-fits").status == 201


def test_a2_concurrent_creates_never_pass_the_limit(api: Any, stack: Any) -> None:
    account_id = stack.principal(stack.admin_token).account_id
    _fill_to(stack, limits.CONNECTIONS_PER_ACCOUNT - 3)
    with ThreadPoolExecutor(max_workers=12) as pool:
        replies = list(
            pool.map(lambda i: _create(api, stack.admin_token, name=f"race-{i}"), range(12))
        )
    # Successes are told by their body: the shared resolver is not thread-safe about which
    # route's status code it applies, which is the test harness's, not the product's.
    created = [r for r in replies if "token" in (r.body or {})]
    refused = [r for r in replies if r.status == 409]
    assert (len(created), len(refused)) == (3, 9)
    assert {r.body["error"]["code"] for r in refused} == {"limit_reached"}
    listed = stack.services.identity.list_connections(stack.principal(stack.admin_token))
    assert len(listed) == limits.CONNECTIONS_PER_ACCOUNT
    assert _live_count(stack, account_id) == limits.CONNECTIONS_PER_ACCOUNT


def test_a2_concurrent_revokes_of_one_connection_free_one_place(api: Any, stack: Any) -> None:
    account_id = stack.principal(stack.admin_token).account_id
    victim = _create(api, stack.admin_token, name="victim").body["connection_id"]
    before = _live_count(stack, account_id)
    with ThreadPoolExecutor(max_workers=8) as pool:
        replies = list(
            pool.map(
                lambda _: api("DELETE", f"/v1/connections/{victim}", stack.admin_token), range(8)
            )
        )
    assert [r.body["status"] for r in replies] == ["revoked"] * 8
    assert _live_count(stack, account_id) == before - 1


def test_a2_an_account_from_before_the_count_starts_counting_and_still_revokes(
    api: Any, stack: Any
) -> None:
    account_id = stack.principal(stack.admin_token).account_id
    old = [_create(api, stack.admin_token, name=f"old-{i}").body for i in range(3)]
    first = api("DELETE", f"/v1/connections/{old[0]['connection_id']}", stack.admin_token)
    assert first.status == 200
    key = {"pk": {"S": f"ACCOUNT#{account_id}"}, "sk": {"S": "ACCOUNT"}}
    stack.client.update_item(
        TableName=stack.settings.identity_table, Key=key, UpdateExpression="REMOVE live_connections"
    )
    # Revocation never waits on a count that is not there ...
    gone = api("DELETE", f"/v1/connections/{old[1]['connection_id']}", stack.admin_token)
    assert gone.status == 200 and gone.body["status"] == "revoked"
    assert api("GET", "/v1/whoami", old[1]["token"]).status == 401
    # ... and the next create counts the live ones (the root admin and old-2) first.
    assert _create(api, stack.admin_token, name="new").status == 201
    assert _live_count(stack, account_id) == 3
