"""Issue 24 §1: a narrowed principal never mints a wider one.

Relay code holding its run's credential, a web session and a child connection each carry
exactly their own authority: only a connection's own bearer token creates sign-in links,
connections, webhooks, adapter profiles, Crews, registered workflows and releases, or reads
the webhook key. A child's scopes, bounds and expiry lie within its creator's, and
`ends_with_parent` holds through every generation (revoking an ancestor stops them all,
at once, and listings say so). Refusals read like the rest: nothing changes."""

from __future__ import annotations

import copy
from typing import Any

from agentworks import limits
from agentworks.identity.models import ADMIN, ALL_SCOPES, MESSAGES_READ, MESSAGES_SEND
from tests.integration.crew_support import CONTRACTS
from tests.integration.relay_support import (
    live_credential,
    publish,
    relay_api,
    relay_files,
    start,
    wait_run,
)
from tests.support.aws_calls import CallRecorder

__all__ = ["relay_api"]

CSRF = ("x-agentworks-requested-with", "inbox")
PERSON = [ADMIN, MESSAGES_READ, MESSAGES_SEND]

# The probe's steps, as relay code of an admin's run: ask for a sign-in link, exchange it,
# and use the session; ask for a connection.
MINTS = """
    from agentworks_relay import PlatformError, platform

    def answer(method, path, body=None):
        try:
            return 200, platform.request(method, path, body)
        except PlatformError as error:
            return error.status, None

    async def run(INPUT):
        link, body = answer("POST", "/v1/session/links")
        connection, _ = answer("POST", "/v1/connections", {"name": "escalated"})
        return {"link": link, "code": (body or {}).get("code"), "connection": connection}
"""


def _create(api: Any, token: str, status: int = 201, **body: Any) -> Any:
    reply = api("POST", "/v1/connections", token, {"name": "x", **body})
    assert reply.status == status, reply.body
    return reply.body


def _sign_in(api: Any, token: str) -> tuple[str, str]:
    """The cookie header of a session of `token`'s connection."""
    link = api("POST", "/v1/session/links", token)
    assert link.status == 200, link.body
    exchanged = api("POST", "/v1/session", None, {"code": link.body["code"]}, headers=[CSRF])
    assert exchanged.status == 200, exchanged.body
    cookie = exchanged.headers.get("Set-Cookie") or exchanged.headers.get("set-cookie") or ""
    return ("cookie", cookie.split(";", 1)[0])


def _listed(api: Any, admin: str) -> dict[str, str]:
    connections = api("GET", "/v1/connections", admin).body["connections"]
    return {c["connection_id"]: c["status"] for c in connections}


def test_relay_code_mints_no_session_and_no_connection(
    stack: Any, api: Any, relay_api: str
) -> None:
    publish(api, stack.admin_token, relay_files("minter", MINTS))
    before = _listed(api, stack.admin_token)
    body = {"function": "run", "input": {}, "idempotency_key": "k"}
    run = start(api, stack.admin_token, "minter", body)
    done = wait_run(api, stack.admin_token, "minter", run["run_id"])
    assert done["status"] == "succeeded", done
    result = done["result"]
    if result["code"]:  # what the probe did next: the session carried the admin's authority
        exchanged = api("POST", "/v1/session", None, {"code": result["code"]}, headers=[CSRF])
        assert exchanged.status != 200, "relay code's link signed in as its caller"
    assert (result["link"], result["connection"]) == (403, 403)
    assert _listed(api, stack.admin_token) == before


def test_a_web_session_stores_no_authority_but_keeps_the_inbox(api: Any, stack: Any) -> None:
    admin = stack.admin_token
    cookie = _sign_in(api, admin)

    def as_session(method: str, path: str, body: Any = None) -> Any:
        return api(method, path, None, body, headers=[cookie, CSRF])

    assert as_session("GET", "/v1/whoami").status == 200
    before = {
        path: api("GET", path, admin).body
        for path in ("/v1/connections", "/v1/webhooks", "/v1/adapters", "/v1/crews", "/v1/agents")
    }
    crew = copy.deepcopy(CONTRACTS)
    refused = {
        "link": as_session("POST", "/v1/session/links"),
        "connection": as_session("POST", "/v1/connections", {"name": "from-a-cookie"}),
        "webhook": as_session(
            "POST", "/v1/webhooks", {"url": "https://x.example/h", "events": ["agent_asked"]}
        ),
        "adapter": as_session(
            "POST",
            "/v1/adapters",
            {"name": "p", "type": "scripted", "rules": [{"default": "x"}]},
        ),
        "crew": as_session("POST", "/v1/crews", crew),
        "allow-list": as_session(
            "POST", "/v1/agents", {"agent_name": "a", "allowed_connection_ids": []}
        ),
        "webhook key": as_session("GET", "/v1/workflows/webhook-key"),
    }
    statuses = {what: (r.status, r.body["error"]["code"]) for what, r in refused.items()}
    assert statuses == {what: (403, "forbidden") for what in refused}, statuses
    after = {path: api("GET", path, admin).body for path in before}
    assert after == before
    # What the Inbox pages offer still works with the cookie.
    assert as_session("GET", "/v1/conversations").status == 200


def test_a_childs_scopes_lie_within_its_creators(api: Any, stack: Any) -> None:
    bounded_admin = _create(
        api, stack.admin_token, name="only-admin", scopes=[ADMIN], target_bounds=["crew:a"]
    )
    before = _listed(api, stack.admin_token)
    others = [s for s in ALL_SCOPES if s != ADMIN]
    refused = _create(api, bounded_admin["token"], 400, name="wider", scopes=others)
    assert refused["error"]["field"] == "scopes"
    person = _create(api, stack.admin_token, name="person", scopes=PERSON)
    _create(api, person["token"], 400, name="runner", scopes=[MESSAGES_READ, "workflows:run"])
    # Unasked, a child gets the defaults its creator holds.
    child = _create(api, person["token"], name="child")
    assert sorted(child["scopes"]) == [MESSAGES_READ, MESSAGES_SEND]
    after = _listed(api, stack.admin_token)
    assert set(after) - set(before) == {person["connection_id"], child["connection_id"]}


def test_a_childs_lifetime_lies_within_its_creators(api: Any, stack: Any) -> None:
    short = _create(api, stack.admin_token, name="short", scopes=PERSON, expires_in_seconds=600)
    longer = _create(api, short["token"], 400, name="longer", expires_in_seconds=3600)
    assert longer["error"]["field"] == "expires_in_seconds"
    inherited = _create(api, short["token"], name="inherits")
    assert inherited["expires_at"] == short["expires_at"]
    stack.clock.advance(601)
    assert api("GET", "/v1/whoami", inherited["token"]).status == 401


def test_ends_with_parent_holds_through_every_generation(api: Any, stack: Any) -> None:
    admin = stack.admin_token
    person = _create(api, admin, name="person", scopes=list(ALL_SCOPES))
    child = _create(api, person["token"], name="child", scopes=PERSON, ends_with_parent=True)
    grandchild = _create(
        api, child["token"], name="grandchild", scopes=PERSON, ends_with_parent=True
    )
    # Not asked to, yet bound: a creator that ends with its parent makes only bound ones.
    great = _create(api, grandchild["token"], name="great", scopes=PERSON)
    session = _sign_in(api, great["token"])
    assert api("GET", "/v1/whoami", None, headers=[session]).status == 200
    unknown = api("GET", "/v1/whoami", "aw1.acct_x.conn_x.nothing").body

    # Revoking the admin at the top stops every generation below it at once.
    assert api("DELETE", f"/v1/connections/{person['connection_id']}", admin).status == 200
    for name, made in (("child", child), ("grandchild", grandchild), ("great", great)):
        refused = api("GET", "/v1/whoami", made["token"])
        assert (refused.status, refused.body) == (401, unknown), name
        denied = api("POST", "/v1/connections", made["token"], {"name": "after"})
        assert (denied.status, denied.body) == (401, unknown), name
    assert api("GET", "/v1/whoami", None, headers=[session]).status == 401
    listed = _listed(api, admin)
    assert listed[person["connection_id"]] == "revoked"
    for made in (child, grandchild, great):
        assert listed[made["connection_id"]] == "stopped"
    names = {c["name"] for c in api("GET", "/v1/connections", admin).body["connections"]}
    assert "after" not in names
    assert great["ends_with_parent"] is True


def test_generations_are_bounded(api: Any, stack: Any) -> None:
    token = stack.admin_token
    for generation in range(1, limits.CONNECTION_GENERATIONS_MAX + 1):
        token = _create(api, token, name=f"g{generation}", scopes=PERSON)["token"]
    deeper = _create(api, token, 409, name="deeper", scopes=PERSON)
    assert deeper["error"]["code"] == "limit_reached"


def test_authentication_reads_a_lineage_in_one_batch(api: Any, stack: Any) -> None:
    """DynamoDB requests per authentication: a connection that ends with no one, one
    GetItem; one that ends with its ancestors, one GetItem and one BatchGetItem, however
    many generations."""
    person = _create(api, stack.admin_token, name="person", scopes=PERSON)
    chain = [person]
    for generation in range(3):
        chain.append(
            _create(
                api, chain[-1]["token"], name=f"g{generation}", scopes=PERSON, ends_with_parent=True
            )
        )

    def reads(token: str) -> list[str]:
        recorder = CallRecorder()
        with recorder.recording():
            assert api("GET", "/v1/whoami", token).status == 200
        return sorted(c.operation for c in recorder.calls if c.service == "dynamodb")

    assert reads(person["token"]) == ["GetItem"]
    assert reads(chain[1]["token"]) == ["BatchGetItem", "GetItem"]
    assert reads(chain[-1]["token"]) == ["BatchGetItem", "GetItem"]


def test_a_stopped_childs_relay_run_credential_stops_too(api: Any, stack: Any) -> None:
    """The run credential carries its caller's authority as it is now: lineage included."""

    publish(api, stack.admin_token, relay_files("echo", "async def run(INPUT):\n    return 1\n"))
    person = _create(api, stack.admin_token, name="person", scopes=list(ALL_SCOPES))
    child = _create(
        api, person["token"], name="child", scopes=["relays:run"], ends_with_parent=True
    )
    body = {"function": "run", "input": {}, "idempotency_key": "k"}
    run_id = start(api, child["token"], "echo", body)["run_id"]
    credential = live_credential(stack, run_id)
    assert api("GET", "/v1/whoami", credential).status == 200
    unknown = api("GET", "/v1/whoami", "awr1.acct_x.rrun_x.nothing").body
    assert api("DELETE", f"/v1/connections/{person['connection_id']}", stack.admin_token).status
    refused = api("GET", "/v1/whoami", credential)
    assert (refused.status, refused.body) == (401, unknown)
