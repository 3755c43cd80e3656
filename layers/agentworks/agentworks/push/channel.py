"""Posting to WebSocket connections through API Gateway's management API.

The local stack serves the same `POST/DELETE /@connections/{id}` endpoints over its own
WebSocket server, so this client is the one code path in both places.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from functools import cached_property
from typing import Any, Protocol


class PushChannel(Protocol):
    def post(self, ws_id: str, data: bytes) -> bool:
        """Sends `data` to the connection; False when the connection is gone."""
        ...

    def close(self, ws_id: str) -> None: ...


class ManagementApiChannel:
    """`apigatewaymanagementapi` at the WebSocket stage's endpoint (https://…/{stage}),
    created on the first post (`$connect` and `$disconnect` never need it)."""

    def __init__(self, client_factory: Callable[[], Any]) -> None:
        self._client_factory = client_factory

    @cached_property
    def _client(self) -> Any:
        return self._client_factory()

    def post(self, ws_id: str, data: bytes) -> bool:
        try:
            self._client.post_to_connection(ConnectionId=ws_id, Data=data)
        except self._client.exceptions.GoneException:
            return False
        return True

    def close(self, ws_id: str) -> None:
        with contextlib.suppress(self._client.exceptions.GoneException):
            self._client.delete_connection(ConnectionId=ws_id)
