"""What a request carries to authenticate (A3, C5): its bearer token, its web session
cookie, and the CSRF header a cookie needs. `agentworks.authentication` resolves them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentworks.errors import Unauthenticated

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


class CsrfRefused(Unauthenticated, status=403, code="forbidden"):
    pass


def require_csrf_header(event: Mapping[str, Any]) -> None:
    """A cookie-authenticated request that may change something carries the Inbox's header
    (a cross-site form can't send one; SameSite=Strict keeps the cookie off the rest)."""
    from agentworks.identity.web_sessions import CSRF_HEADER

    # An event that names no method is not taken for a read: it carries the header too.
    method = str(((event.get("requestContext") or {}).get("http") or {}).get("method") or "")
    if method.upper() in ("GET", "HEAD", "OPTIONS"):
        return
    headers = {str(k).lower(): v for k, v in (event.get("headers") or {}).items()}
    if not headers.get(CSRF_HEADER):
        raise CsrfRefused(f"Requests signed in by cookie must send the {CSRF_HEADER} header.")
