"""Bearer authentication inside the functions (A3): the one middleware of the api and mcp
functions.

An HTTP API Lambda authorizer cannot give its denial a body of ours (clients would get
API Gateway's `{"message": "Forbidden"}`), and costs a second Lambda invocation per request.
So each function resolves the token itself: one GetItem of the connection, no caching,
so a revocation counts on the very next request.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from agentworks.errors import Unauthenticated
from agentworks.identity.models import Principal
from agentworks.observability import count, logger

# The web sign-in exchange (C5): the one-time code in the body is its credential.
PUBLIC_PATHS = frozenset({"/v1/openapi.json", "/v1/session", "/v1/session/logout"})
# Webhook triggers (W11): the sender signs the body with the trigger's secret instead.
PUBLIC_PREFIXES = ("/v1/hooks/",)


def bearer_token(headers: Mapping[str, Any] | None) -> str:
    """The token of an `Authorization: Bearer <token>` header ("" when there is none).

    API Gateway lower-cases header names in payload 2.0; any case is accepted anyway."""
    for name, value in (headers or {}).items():
        if str(name).lower() == "authorization" and isinstance(value, str):
            scheme, _, token = value.strip().partition(" ")
            return token.strip() if scheme.lower() == "bearer" else ""
    return ""


def session_cookie(event: Mapping[str, Any]) -> str:
    """The web session id of the event's cookies ("" when there is none): payload 2.0 has
    them in `cookies`, other callers in a Cookie header."""
    from agentworks.identity.web_sessions import SESSION_COOKIE

    cookies = [str(c) for c in event.get("cookies") or []]
    for name, value in (event.get("headers") or {}).items():
        if str(name).lower() == "cookie" and isinstance(value, str):
            cookies += value.split(";")
    for cookie in cookies:
        name, _, value = cookie.strip().partition("=")
        if name == SESSION_COOKIE:
            return value.strip()
    return ""


class CsrfRefused(Unauthenticated):
    status = 403
    code = "forbidden"


def require_csrf_header(event: Mapping[str, Any]) -> None:
    """A cookie-authenticated request that may change something carries the Inbox's header
    (a cross-site form can't send one; SameSite=Strict keeps the cookie off the rest)."""
    from agentworks.identity.web_sessions import CSRF_HEADER

    method = str(((event.get("requestContext") or {}).get("http") or {}).get("method", "GET"))
    if method.upper() in ("GET", "HEAD", "OPTIONS"):
        return
    headers = {str(k).lower(): v for k, v in (event.get("headers") or {}).items()}
    if not headers.get(CSRF_HEADER):
        raise CsrfRefused(f"Requests signed in by cookie must send the {CSRF_HEADER} header.")


def authenticate_event(
    event: Mapping[str, Any],
    run_credentials: bool = True,
    pages_url: Callable[[], str] | None = None,
) -> Principal:
    """The principal of an API Gateway v2 event, or `Unauthenticated` (one message for a
    missing, malformed, unknown, expired or revoked token: which one is not told).

    `run_credentials=False` for a surface whose role cannot read relay runs (push): a
    relay run's credential is then one more token that is not a connection's, refused
    like any other without reading anything. `pages_url` for a WebSocket upgrade (push):
    a session cookie counts only with the web pages' own `Origin` (identity.web_origin)."""
    from agentworks import runtime
    from agentworks.relays.credentials import is_run_credential

    token = bearer_token(event.get("headers"))
    session = "" if token else session_cookie(event)
    try:
        if session:  # the web Inbox (C5): a session cookie, re-checked like a token
            if pages_url is not None:
                from agentworks.identity.web_origin import require_pages_origin

                require_pages_origin(event, pages_url)
            require_csrf_header(event)
            principal = runtime.identity_only().web.authenticate(session)
        elif run_credentials and is_run_credential(token):  # relay code, as its run's caller
            principal = runtime.run_credentials().authenticate(token)
        else:
            principal = runtime.identity_only().authenticate(token)
    except Unauthenticated:
        count("AuthenticationRefused")
        raise
    logger.append_keys(account_id=principal.account_id, connection_id=principal.connection_id)
    return principal
