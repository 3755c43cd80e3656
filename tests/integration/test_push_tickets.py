"""C5 push tickets (issue 29 §1 "Live"): deployed, the push API has its own host name, so
the web pages' host-only session cookie never reaches its upgrade. A page asks
`POST /v1/session/push-tickets` with its cookie and the CSRF header, and opens the socket
with `?ticket=…` from its own Origin.

The oracle is the documented rule, computed here: the ticket is base64url of its JSON
payload and the first 16 bytes of HMAC-SHA256(key, "push-ticket/v1" NUL payload); the
payload names the session by sha256(session secret) hex — the identity table's key — its
account and its end (60 s). Every refusal at `$connect` reads exactly as a bad token's.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import uuid
from datetime import datetime
from typing import Any

import pytest

from agentworks import limits
from agentworks.identity.push_tickets import PushTickets
from agentworks.signing import Signer
from tests.integration.test_push_listeners import _listener_items, _push, _ws_event
from tests.integration.test_web_inbox import CSRF, call, cookie_header, sign_in

KEY = b"test-signing-key-0123456789"  # the stack's signer (tests/conftest.py)
PAGES = "https://pages.example.com"


def seal(payload: dict[str, Any], key: bytes = KEY, purpose: str = "push-ticket/v1") -> str:
    """A ticket by the documented rule, not by the product's code."""
    raw = json.dumps(payload, separators=(",", ":"), sort_keys=True).encode()
    mac = hmac.new(key, purpose.encode() + b"\0" + raw, hashlib.sha256).digest()[:16]
    return base64.urlsafe_b64encode(raw + mac).rstrip(b"=").decode()


def opened(ticket: str) -> dict[str, Any]:
    raw = base64.urlsafe_b64decode(ticket + "=" * (-len(ticket) % 4))
    payload, mac = raw[:-16], raw[-16:]
    expected = hmac.new(KEY, b"push-ticket/v1\0" + payload, hashlib.sha256).digest()[:16]
    assert hmac.compare_digest(mac, expected), "not sealed with the deployment's key"
    return dict(json.loads(payload))


def tampered(ticket: str, **changes: Any) -> str:
    """The ticket's payload changed, its MAC kept."""
    raw = base64.urlsafe_b64decode(ticket + "=" * (-len(ticket) % 4))
    payload = json.loads(raw[:-16]) | changes
    edited = json.dumps(payload, separators=(",", ":"), sort_keys=True).encode() + raw[-16:]
    return base64.urlsafe_b64encode(edited).rstrip(b"=").decode()


def session_of(set_cookie: str) -> str:
    return set_cookie.split(";", 1)[0].partition("=")[2]


def mint(cookie: tuple[str, str], *headers: tuple[str, str]) -> tuple[int, Any]:
    status, body, _ = call("POST", "/v1/session/push-tickets", None, [cookie, *headers])
    return status, body


def upgrade(ticket: str | None, origin: str | None = PAGES, cookie: str | None = None) -> Any:
    query = {"console": "runs"} | ({"ticket": ticket} if ticket is not None else {})
    event = _ws_event("$connect", f"ws{uuid.uuid4().hex[:14]}", None, **query)
    if origin is not None:
        event["headers"]["origin"] = origin
    if cookie is not None:
        event["headers"]["cookie"] = cookie
    return _push(event)


@pytest.fixture
def pages(stack: Any, monkeypatch: Any) -> None:
    monkeypatch.setattr(stack.services.push, "pages_url", lambda: f"{PAGES}/")


def test_c5_a_session_gets_a_signed_ticket_that_names_it_without_its_secret(api, agents, stack):
    worker = agents.named("worker")
    set_cookie = sign_in(api, worker)
    session = session_of(set_cookie)
    status, body = mint(cookie_header(set_cookie), CSRF)
    assert status == 200, body
    payload = opened(body["ticket"])
    now = int(stack.clock.now())
    assert payload == {
        "s": hashlib.sha256(session.encode()).hexdigest(),
        "a": api("GET", "/v1/whoami", worker).body["account_id"],
        "e": now + limits.PUSH_TICKET_SECONDS,
    }
    assert session not in body["ticket"] and session not in json.dumps(payload)
    expires = datetime.fromisoformat(body["expires_at"].replace("Z", "+00:00"))
    assert int(expires.timestamp()) == now + limits.PUSH_TICKET_SECONDS


def test_c5_only_a_web_session_with_the_pages_header_mints_one(api, agents, stack):
    worker = agents.named("worker")
    cookie = cookie_header(sign_in(api, worker))
    # The cookie without the CSRF header: a cross-site form's request.
    status, body = mint(cookie)
    assert (status, body["error"]["code"]) == (403, "forbidden")
    # A connection's own token is refused (a relay run's credential and a child's too: the
    # authorization matrix's row for this route).
    minted = api("POST", "/v1/session/push-tickets", worker)
    assert (minted.status, minted.body["error"]["code"]) == (403, "forbidden")
    assert "ticket" not in minted.body
    nobody = api("POST", "/v1/session/push-tickets", None)
    assert nobody.status == 401


def test_c5_a_good_ticket_opens_the_pages_listener_until_the_session_ends(
    api, agents, stack, pages
):
    worker = agents.named("worker")
    _, body = mint(cookie_header(sign_in(api, worker)), CSRF)
    assert upgrade(body["ticket"]) == (200, {"type": "listening"})
    account = api("GET", "/v1/whoami", worker).body["account_id"]
    # Its two items (by subject, by socket) end with the session, as a cookie-signed
    # listener's do, well before the socket's own two hours.
    session_end = int(stack.clock.now()) + limits.WEB_SESSION_SECONDS
    items = _listener_items(stack)
    assert len(items) == 2
    assert {(i["partition"], int(i["expires_ttl"])) for i in items} == {
        (f"console:{account}", session_end)
    }


def test_c5_push_ticket_at_and_past_its_lifetime(api, agents, stack, pages):
    cookie = cookie_header(sign_in(api, agents.named("worker")))
    bad_token = _push(_ws_event("$connect", "wsbad", "awc_garbage", console="runs"))
    _, first = mint(cookie, CSRF)
    _, second = mint(cookie, CSRF)
    stack.clock.advance(limits.PUSH_TICKET_SECONDS)
    assert upgrade(first["ticket"]) == (200, {"type": "listening"})
    stack.clock.advance(1)
    assert upgrade(second["ticket"]) == bad_token


def test_c5_every_bad_ticket_is_refused_like_a_bad_token(api, agents, stack, pages):
    """Forged, expired, another purpose's, a signed-out session's, a bearer token's, another
    account's session, from a foreign Origin or none: one answer, no listener."""
    worker = agents.named("worker")
    bad_token = _push(_ws_event("$connect", "wsbad", "awc_garbage", console="runs"))
    assert bad_token[0] == 401
    set_cookie = sign_in(api, worker)
    cookie = cookie_header(set_cookie)
    _, good = mint(cookie, CSRF)
    payload = opened(good["ticket"])
    now = int(stack.clock.now())

    # Another account: its admin's session, and a ticket naming it with the worker's account.
    other_admin = stack.services.identity.bootstrap("other").token
    other_session = session_of(sign_in(api, other_admin))
    other_digest = hashlib.sha256(other_session.encode()).hexdigest()
    # Signed out: a second session of the worker's, ended by its own sign-out.
    out_cookie = sign_in(api, worker)
    _, out_body = mint(cookie_header(out_cookie), CSRF)
    status, _, _ = call("POST", "/v1/session/logout", None, [cookie_header(out_cookie), CSRF])
    assert status == 200

    refused = {
        "forged (another key)": seal(payload, key=b"not-the-deployment-key-000"),
        "forged (a longer life, the old MAC)": tampered(good["ticket"], e=now + 3600),
        "expired": seal(payload | {"e": now - 1}),
        "another purpose's": seal(payload, purpose="audit-cursor/v1"),
        "a signed-out session's": out_body["ticket"],
        # A bearer token never mints one; a ticket that names a token's digest finds no session.
        "a bearer token's": seal(payload | {"s": hashlib.sha256(worker.encode()).hexdigest()}),
        "another account's session": seal(payload | {"s": other_digest}),
        "garbage": "not-a-ticket",
        "too long": "A" * 4096,
    }
    for why, ticket in refused.items():
        assert upgrade(ticket) == bad_token, why
    for origin in ("https://evil.example", "null", None):
        assert upgrade(good["ticket"], origin=origin) == bad_token, origin
    # The ticket is the upgrade's, and the pages' only: no other surface reads it.
    assert api("GET", "/v1/whoami", good["ticket"]).status == 401
    assert api("GET", "/v1/whoami", None, query={"ticket": good["ticket"]}).status == 401
    assert _listener_items(stack) == []
    # The same upgrade with the good ticket is accepted: each refusal above is the ticket's.
    assert upgrade(good["ticket"]) == (200, {"type": "listening"})


def test_c5_a_ticket_signed_before_a_key_rotation_still_opens(
    api, agents, stack, pages, monkeypatch
):
    cookie = cookie_header(sign_in(api, agents.named("worker")))
    _, before = mint(cookie, CSRF)
    rotated = Signer(b"the-next-signing-key-0123456", [KEY])
    tickets = PushTickets(lambda: rotated, lambda: stack.services.identity.web, stack.clock)
    monkeypatch.setattr(stack.services.push, "tickets", tickets)
    assert upgrade(before["ticket"]) == (200, {"type": "listening"})
    _, after = mint(cookie, CSRF)
    with pytest.raises(AssertionError):  # sealed with the new key now
        opened(after["ticket"])
    assert upgrade(after["ticket"]) == (200, {"type": "listening"})


def test_c5_a_bearer_token_is_what_authenticates_whatever_the_query_says(api, agents, stack, pages):
    """A ticket is read only when no token came: an upgrade with both is the token's."""
    from tests.integration.test_push_listeners import _connect

    worker = agents.named("worker")
    _, body = mint(cookie_header(sign_in(api, worker)), CSRF)
    admin_listens = _connect(stack.admin_token, console="runs", ticket=body["ticket"])
    assert admin_listens[1:] == (200, {"type": "listening"})
