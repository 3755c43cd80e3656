"""Bearer authentication inside the functions (A3): the one middleware of the api, mcp and
push functions.

An HTTP API Lambda authorizer cannot give its denial a body of ours (clients would get
API Gateway's `{"message": "Forbidden"}`), and costs a second Lambda invocation per request.
So each function resolves the token itself: one GetItem of the connection, no caching,
so a revocation counts on the very next request.

It reads the process's services (`runtime`), so it sits with the surfaces, above identity
and relays (whose credentials it tells apart).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from agentworks.errors import Unauthenticated
from agentworks.identity.bearer import bearer_token, require_csrf_header, session_cookie
from agentworks.identity.models import Principal
from agentworks.observability import count, logger

if TYPE_CHECKING:
    from agentworks.identity.push_tickets import PushTickets


def authenticate_event(
    event: Mapping[str, Any],
    run_credentials: bool = True,
    pages_url: Callable[[], str] | None = None,
    tickets: PushTickets | None = None,
) -> Principal:
    """The principal of an API Gateway v2 event, or `Unauthenticated` (one message for a
    missing, malformed, unknown, expired or revoked token: which one is not told).

    `run_credentials=False` for a surface whose role cannot read relay runs (push): a
    relay run's credential is then one more token that is not a connection's, refused
    like any other without reading anything. `pages_url` for a WebSocket upgrade (push):
    a session cookie counts only with the web pages' own `Origin` (identity.web_origin).
    `tickets` for that upgrade too: a `?ticket=…` the pages got for their session
    (identity.push_tickets), from their own `Origin` as well; no other surface reads one."""
    # On the first request, not at init: the api function's cold start loads neither
    # (tests/unit/test_import_denylist.py).
    from agentworks import runtime
    from agentworks.mcp_servers.call_tokens import is_call_token
    from agentworks.relays.credentials import is_run_credential

    token = bearer_token(event.get("headers"))
    ticket = "" if token or tickets is None else _query(event, "ticket")
    session = "" if token or ticket else session_cookie(event)
    try:
        if ticket and tickets is not None:  # the web pages where their cookie cannot go
            from agentworks.identity.web_origin import require_pages_origin

            require_pages_origin(event, pages_url or (lambda: ""))
            principal = tickets.redeem(ticket)
        elif session:  # the web Inbox (C5): a session cookie, re-checked like a token
            if pages_url is not None:
                # A WebSocket upgrade carries no header a page could add: its Origin, which
                # a page cannot forge, is what stops another site.
                from agentworks.identity.web_origin import require_pages_origin

                require_pages_origin(event, pages_url)
            else:
                require_csrf_header(event)
            principal = runtime.identity_only().web.authenticate(session)
        elif is_call_token(token):  # a lambda adapter's agent, its turn's MCP tools only
            if not _is_tool_call(event):
                raise Unauthenticated(
                    "Missing, invalid, expired or revoked token. Send 'Authorization: Bearer "
                    "<token>'."
                )
            principal = runtime.services().mcp_token_calls.authenticate(token)
        elif run_credentials and is_run_credential(token):  # relay code, as its run's caller
            principal = runtime.run_credentials().authenticate(token)
        else:
            principal = runtime.identity_only().authenticate(token)
    except Unauthenticated:
        count("AuthenticationRefused")
        raise
    logger.append_keys(account_id=principal.account_id, connection_id=principal.connection_id)
    return principal


def _query(event: Mapping[str, Any], name: str) -> str:
    return str((event.get("queryStringParameters") or {}).get(name) or "")


_TOOL_CALL = re.compile(r"^/v1/mcp-servers/[^/]+/tools/[^/]+:call$")


def _is_tool_call(event: Mapping[str, Any]) -> bool:
    """Whether the request is `POST /v1/mcp-servers/{name}/tools/{tool}:call`, the one
    route a call token opens."""
    http = (event.get("requestContext") or {}).get("http") or {}
    path = event.get("rawPath") or http.get("path")
    # API Gateway names the method in capitals.
    return http.get("method") == "POST" and bool(_TOOL_CALL.match(str(path)))
