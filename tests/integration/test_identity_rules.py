"""Identity rules found unheld by `make mutate` (docs/benchmarks.md): where a web session's
cookie is read from, and that a connection's principal — looked up without its token, for a
web session or a run's starter — is refused once the connection expires, on the clock."""

from __future__ import annotations

import pytest

from agentworks.errors import Unauthenticated
from agentworks.identity.bearer import (
    CsrfRefused,
    bearer_token,
    require_csrf_header,
    session_cookie,
)
from agentworks.identity.web_sessions import SESSION_COOKIE


@pytest.mark.parametrize(
    "event",
    [
        {"cookies": ["theme=dark", f"{SESSION_COOKIE}=ws_1"]},
        {"headers": {"cookie": f"theme=dark; {SESSION_COOKIE}=ws_1"}},
        {"headers": {"Cookie": f"{SESSION_COOKIE}=ws_1;theme=dark"}},
        {"cookies": ["theme=dark"], "headers": {"COOKIE": f" {SESSION_COOKIE}=ws_1 "}},
        # The cookies list and a Cookie header together: both are read.
        {"cookies": [f"{SESSION_COOKIE}=ws_1"], "headers": {"cookie": "theme=dark"}},
    ],
)
def test_the_session_cookie_is_read_from_cookies_or_any_cookie_header(event):
    assert session_cookie(event) == "ws_1"


def test_a_session_value_keeps_its_equals_signs_and_other_headers_are_not_cookies():
    assert session_cookie({"headers": {"cookie": f"{SESSION_COOKIE}=a=b"}}) == "a=b"
    assert session_cookie({"headers": {"x-cookie": f"{SESSION_COOKIE}=ws_1"}}) == ""
    assert session_cookie({"headers": {"cookie": ["not", "text"]}}) == ""
    assert session_cookie({"headers": None, "cookies": None}) == ""
    assert session_cookie({}) == ""


@pytest.mark.parametrize(
    ("value", "token"),
    [
        ("Bearer aw_1", "aw_1"),
        ("bearer aw_1", "aw_1"),  # the scheme in any case (RFC 9110 §11.1)
        ("  Bearer   aw_1  ", "aw_1"),  # one or more spaces after it (RFC 6750 §2.1)
        ("Bearer", ""),
        # Another scheme carries no bearer token, whatever follows it: no token at all, so
        # a session cookie beside it is read instead.
        ("Basic aw_1", ""),
        ("Token aw_1", ""),
        ("aw_1", ""),
    ],
)
def test_the_bearer_token_is_read_from_the_authorization_header_only(value, token):
    assert bearer_token({"Authorization": value}) == token
    assert bearer_token({"authorization": value, "x-token": "aw_2"}) == token


def test_a_connection_principal_ends_when_the_connection_expires(api, stack):
    created = api(
        "POST",
        "/v1/connections",
        stack.admin_token,
        {"name": "short", "expires_in_seconds": 60},
    ).body
    principal = stack.principal(created["token"])
    identity = stack.services.identity
    account, connection = principal.account_id, principal.connection_id
    assert identity.principal_of_connection(account, connection).connection_id == connection
    assert identity.live_principal(account, connection).connection_id == connection
    assert identity.live_principal("acct_other", connection) is None
    stack.clock.advance(61)
    with pytest.raises(Unauthenticated) as refused:
        identity.principal_of_connection(account, connection)
    assert refused.value.message == "Missing, invalid, expired or revoked token."
    assert identity.live_principal(account, connection) is None


def _event(method: str | None, **headers: str) -> dict:
    context = {} if method is None else {"requestContext": {"http": {"method": method}}}
    return {**context, "headers": headers}


@pytest.mark.parametrize("method", ["GET", "head", "OPTIONS"])
def test_a_cookie_read_needs_no_csrf_header(method):
    require_csrf_header(_event(method))  # nothing raised


@pytest.mark.parametrize("method", ["POST", "put", "DELETE", "PATCH"])
def test_a_cookie_change_needs_the_csrf_header_in_any_case(method):
    with pytest.raises(CsrfRefused) as refused:
        require_csrf_header(_event(method))
    assert refused.value.status == 403
    assert str(refused.value.message) == (
        "Requests signed in by cookie must send the x-agentworks-requested-with header."
    )
    require_csrf_header(_event(method, **{"X-AgentWorks-Requested-With": "inbox"}))
    with pytest.raises(CsrfRefused):
        require_csrf_header(_event(method, **{"x-agentworks-requested-with": ""}))


@pytest.mark.parametrize("event", [_event(None), {"requestContext": {"http": None}}])
def test_an_event_that_names_no_method_needs_the_header_too(event):
    with pytest.raises(CsrfRefused):
        require_csrf_header(event)
    require_csrf_header({**event, "headers": {"x-agentworks-requested-with": "inbox"}})
