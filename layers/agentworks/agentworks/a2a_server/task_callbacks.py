"""An external A2A agent's push notification about a task a call or workflow step waits for
(`POST /a2a-callbacks/<account>/<owner>`; the a2a adapter registered that URL and a token
with the agent: external_tasks.waits).

The notice's body is never read: a notice only says "look now", and the task is read from
the agent as the tick would read it (its GetTask, with the adapter's headers). Its
`X-A2A-Notification-Token` must be the wait's. A wrong token, an unknown or settled wait
and a malformed path all get the same 404, so a caller learns nothing about which waits
exist.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

from agentworks.external_tasks.waits import CALLBACK_PATH
from agentworks.runtime import services

TOKEN_HEADER = "x-a2a-notification-token"  # API Gateway's HTTP API lowercases names
SEGMENT_MAX_CHARS = 128  # an account id or an owner (call:… / step:…) is far shorter

NOT_FOUND = {
    "statusCode": 404,
    "headers": {"Content-Type": "application/json"},
    "body": json.dumps({"error": {"code": "not_found", "message": "No such task wait."}}),
}


def is_callback(event: dict[str, Any]) -> bool:
    return str(event.get("rawPath") or "").startswith(CALLBACK_PATH + "/")


def handle_callback(event: dict[str, Any]) -> dict[str, Any]:
    method = str(event.get("requestContext", {}).get("http", {}).get("method", ""))
    path = str(event.get("rawPath") or "").removeprefix(CALLBACK_PATH + "/")
    segments = [unquote(s) for s in path.split("/")]
    token = str((event.get("headers") or {}).get(TOKEN_HEADER) or "")
    if (
        method != "POST"
        or len(segments) != 2
        or not all(0 < len(s) <= SEGMENT_MAX_CHARS for s in segments)
        or not token
    ):
        return dict(NOT_FOUND)
    account_id, owner = segments
    if not services().external_tasks.follow_now(account_id, owner, token):
        return dict(NOT_FOUND)
    return {"statusCode": 204, "headers": {}, "body": ""}
