"""The headers of attached MCP servers in Secrets Manager: one secret per server, named
`<stack prefix><account>/<server>/<id>` (the functions' IAM grants only that prefix).

A secret's value is read only to send it to its server; no read of the product returns it
and no log line carries it. Each `add` creates a secret with a fresh id, so a server removed
and added again never meets its predecessor's secret (deleted without recovery window).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any


class SecretMissing(Exception):
    """The server's secret is gone (deleted outside AgentWorks)."""


class McpSecretStore:
    def __init__(self, client: Callable[[], Any], prefix: str) -> None:
        # Made on first use: a function that never touches a server pays nothing for it.
        self._client = client
        self._prefix = prefix  # the stack's: "<stack>/mcp-servers/"

    @property
    def _sm(self) -> Any:
        return self._client()

    def secret_id(self, account_id: str, name: str, unique: str) -> str:
        return f"{self._prefix}{account_id}/{name}/{unique}"

    def create(self, secret_id: str, headers: dict[str, str]) -> None:
        self._sm.create_secret(
            Name=secret_id,
            SecretString=_encoded(headers),
            Description="Headers AgentWorks sends to an attached MCP server",
        )

    def rotate(self, secret_id: str, headers: dict[str, str]) -> None:
        """The new headers become the secret's current value (update); a secret deleted
        outside AgentWorks is created again."""
        try:
            self._sm.put_secret_value(SecretId=secret_id, SecretString=_encoded(headers))
        except self._sm.exceptions.ResourceNotFoundException:
            self.create(secret_id, headers)

    def read(self, secret_id: str) -> dict[str, str]:
        try:
            value = self._sm.get_secret_value(SecretId=secret_id)["SecretString"]
        except self._sm.exceptions.ResourceNotFoundException:
            raise SecretMissing() from None
        headers = json.loads(value)
        return {str(k): str(v) for k, v in headers.items()}

    def delete(self, secret_id: str) -> None:
        """Deleted now (no recovery window), and already-gone counts as deleted."""
        with contextlib.suppress(self._sm.exceptions.ResourceNotFoundException):
            self._sm.delete_secret(SecretId=secret_id, ForceDeleteWithoutRecovery=True)


def _encoded(headers: dict[str, str]) -> str:
    return json.dumps(headers, sort_keys=True, separators=(",", ":"))
