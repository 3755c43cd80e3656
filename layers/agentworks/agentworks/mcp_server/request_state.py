"""Sealing of MCP `requestState` (protocol 2026-07-28) under one key for every worker.

A question asked in one response may be answered through any Lambda worker, so the SDK's
default per-process key would refuse most answers. The key is derived from the
deployment's signing secret, fetched on first use (never at import or init: no network
there) and bound to the connection that was asked.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import RequestStateSecurity
from mcp.server.request_state import AESGCMRequestStateCodec

from agentworks.mcp_server.principal import acting_principal
from agentworks.signing import secret_keys

# Domain separation: the same secret also signs cursors.
_KEY_LABEL = b"agentworks/mcp-request-state/v1"
# How long a question's state stays answerable (the SDK's default, stated).
TTL_SECONDS = 600.0


def deployment_secret() -> bytes:
    """The signing secret of this deployment (Secrets Manager, the SIGNING_SECRET_ARN)."""
    from agentworks.aws_clients import secretsmanager
    from agentworks.settings import get_settings

    arn = get_settings().signing_secret_arn
    return str(secretsmanager().get_secret_value(SecretId=arn)["SecretString"]).encode()


def derive_key(secret: bytes) -> bytes:
    """32 bytes for request state only, from the deployment secret."""
    return hmac.new(secret, _KEY_LABEL, hashlib.sha256).digest()


class SharedKeyCodec:
    """The SDK's AES-256-GCM codec under the derived key, built on first use.

    A failure to fetch the secret is not cached: the next request tries again.
    """

    def __init__(self, secret: Callable[[], bytes] = deployment_secret) -> None:
        self._secret = secret
        self._codec: AESGCMRequestStateCodec | None = None
        self._lock = threading.Lock()

    def _ready(self) -> AESGCMRequestStateCodec:
        with self._lock:
            if self._codec is None:
                # Sealed under the current key, opened under any (a rotation, signing.py).
                keys = secret_keys(self._secret().decode())
                self._codec = AESGCMRequestStateCodec([derive_key(k) for k in keys])
            return self._codec

    def seal(self, payload: bytes) -> str:
        return self._ready().seal(payload)

    def unseal(self, token: str) -> bytes:
        return self._ready().unseal(token)


def bound_connection(_ctx: Any) -> str | None:
    """The principal a question is bound to: only the asked connection may answer it."""
    principal = acting_principal()
    return None if principal is None else f"{principal.account_id}/{principal.connection_id}"


def security(secret: Callable[[], bytes] = deployment_secret) -> RequestStateSecurity:
    return RequestStateSecurity(
        codec=SharedKeyCodec(secret), ttl=TTL_SECONDS, bind_principal=bound_connection
    )
