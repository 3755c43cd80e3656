"""Push function: the WebSocket API's `$connect`, `$disconnect` and `$default` routes.

`$connect` authenticates a connection's bearer token as the HTTP API does (a relay run's
credential is refused like a bad token: its role reads no relay runs), or the web pages'
session cookie or push ticket (`?ticket=…`, identity.push_tickets) from their own Origin,
and opens a listener for `?agent_name=NAME`, `?inbox_id=ibx_…` or `?console=runs` (the web
pages' runs); a refusal answers with its status and the one error shape, and API Gateway
refuses the upgrade.
`$default` answers a keep-alive ping (API Gateway closes a connection idle for 10 minutes).
"""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.logging import correlation_paths

from agentworks.authentication import authenticate_event
from agentworks.errors import AgentWorksError
from agentworks.observability import observed_handler
from agentworks.runtime import push


def _answer(status: int, body: dict[str, Any]) -> dict[str, Any]:
    return {"statusCode": status, "body": json.dumps(body)}


def _connect(event: dict[str, Any], ws_id: str) -> dict[str, Any]:
    query = event.get("queryStringParameters") or {}
    # Relay code has no push channel, and this role cannot read relay runs: a run's
    # credential is refused here like any token that is not a connection's.
    # A session cookie, or the pages' push ticket where the cookie cannot go (the push API
    # has its own host name), only from the web pages' own origin (any page can start an
    # upgrade).
    principal = authenticate_event(
        event, run_credentials=False, pages_url=push().pages_url, tickets=push().tickets
    )
    push().listening.connect(
        principal, ws_id, query.get("inbox_id"), query.get("agent_name"), query.get("console")
    )
    return _answer(200, {"type": "listening"})


@observed_handler(correlation_paths.API_GATEWAY_REST)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    request = event.get("requestContext") or {}
    route, ws_id = request.get("routeKey"), str(request.get("connectionId") or "")
    try:
        if route == "$connect":
            return _connect(event, ws_id)
        if route == "$disconnect":
            push().listening.disconnect(ws_id)
            return _answer(200, {"type": "closed"})
        return _answer(200, {"type": "pong"})
    except AgentWorksError as error:
        return _answer(error.status, error.to_body())
