"""The web pages' own origin, for upgrades signed in by the session cookie (C5, push).

A browser sends the Inbox's session cookie with a WebSocket upgrade that any page starts
(a CORS preflight never happens for WebSockets, and on the local stack every port of the
host shares the cookie), so the push channel accepts a cookie only with an `Origin` that
is the pages' own: the HTTP API's URL, which serves them. Bearer-token clients (the CLI,
the bridge) send no Origin and are not affected.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from agentworks.errors import Unauthenticated


def origin_of(url: str) -> str:
    """`scheme://host[:port]` of a URL, lower-cased, without a default port ("" if none)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return ""
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    if scheme not in ("http", "https") or not host:
        return ""
    if ":" in host:
        host = f"[{host}]"
    default = {"http": 80, "https": 443}[scheme]
    return f"{scheme}://{host}" + (f":{port}" if port and port != default else "")


def require_pages_origin(event: Mapping[str, Any], pages_url: Callable[[], str]) -> None:
    """Refuses, exactly as a bad token is refused, a request whose `Origin` is not the
    pages' (`pages_url()`, read only when a cookie is presented); a missing Origin, or no
    known pages URL, is refused too."""
    given = ""
    for name, value in (event.get("headers") or {}).items():
        if str(name).lower() == "origin" and isinstance(value, str):
            given = value
    expected = origin_of(pages_url())
    if not expected or origin_of(given) != expected or given.strip().lower() == "null":
        raise Unauthenticated(
            "Missing, invalid, expired or revoked token. Send 'Authorization: Bearer <token>'."
        )
