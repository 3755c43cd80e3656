"""Posting to WebSocket connections through API Gateway's management API.

The local stack serves the same `POST/DELETE /@connections/{id}` endpoints over its own
WebSocket server, so this client is the one code path in both places.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Any, Protocol


class PushChannel(Protocol):
    def post(self, ws_id: str, data: bytes) -> bool:
        """Sends `data` to the connection; False when the connection is gone."""
        ...

    def close(self, ws_id: str) -> None: ...


def _gone(error: Exception) -> bool:
    response = getattr(error, "response", None) or {}
    return response.get("Error", {}).get("Code") == "GoneException"


class ManagementApiChannel:
    """`apigatewaymanagementapi` at the WebSocket stage's endpoint (https://…/{stage}),
    created on the first post (`$connect` and `$disconnect` never need it)."""

    def __init__(self, client_factory: Callable[[], Any]) -> None:
        self._client_factory = client_factory

    @cached_property
    def _client(self) -> Any:
        return self._client_factory()

    def post(self, ws_id: str, data: bytes) -> bool:
        from botocore.exceptions import ClientError

        try:
            self._client.post_to_connection(ConnectionId=ws_id, Data=data)
        except ClientError as error:
            if _gone(error):
                return False
            raise
        return True

    def close(self, ws_id: str) -> None:
        from botocore.exceptions import ClientError

        try:
            self._client.delete_connection(ConnectionId=ws_id)
        except ClientError as error:
            if not _gone(error):
                raise
