"""The client side of the push channel (docs/push.md), shared by `agentworks listen` and
the bridge's listeners: connect with the bearer token, then yield notices, pinging inside
API Gateway's 10-minute idle timeout."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

PING_EVERY_SECONDS = 240.0
BACKOFF_MAX_SECONDS = 30.0  # reconnect pauses double up to this


def open_channel(url: str, token: str) -> Any:
    """A connected socket; websockets' InvalidStatus when the upgrade is refused."""
    from websockets.sync.client import connect

    return connect(url, additional_headers={"Authorization": f"Bearer {token}"}, open_timeout=10)


def notices(socket: Any) -> Iterator[dict[str, Any]]:
    """Each `messages` notice until the socket closes (pongs are passed over)."""
    while True:
        try:
            frame = socket.recv(timeout=PING_EVERY_SECONDS)
        except TimeoutError:
            socket.send(json.dumps({"action": "ping"}))
            continue
        notice = json.loads(frame)
        if notice.get("type") == "messages":
            yield notice
