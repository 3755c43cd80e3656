"""Tamper-proof opaque tokens (cursors today, request state later).

The HMAC key comes from a Secrets Manager secret that CloudFormation generates, read once
per cold start. A forged or foreign token is an `InvalidInput` (400), never a 500.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from functools import lru_cache
from typing import Any

from agentworks.errors import InvalidInput

_MAC_BYTES = 16


class Signer:
    def __init__(self, key: bytes) -> None:
        if len(key) < 16:
            raise ValueError("signing key must be at least 16 bytes")
        self._key = key

    def _mac(self, purpose: str, payload: bytes) -> bytes:
        return hmac.new(self._key, purpose.encode() + b"\0" + payload, hashlib.sha256).digest()[
            :_MAC_BYTES
        ]

    def derived_key(self, purpose: str, subject: str) -> str:
        """A key of its own for one purpose and subject (e.g. an account's webhook key):
        shown to its owner, it reveals nothing of the signing key or of other subjects'."""
        return hmac.new(
            self._key, f"derive:{purpose}".encode() + b"\0" + subject.encode(), hashlib.sha256
        ).hexdigest()

    def seal(self, purpose: str, data: dict[str, Any]) -> str:
        payload = json.dumps(data, separators=(",", ":"), sort_keys=True).encode()
        token = payload + self._mac(purpose, payload)
        return base64.urlsafe_b64encode(token).rstrip(b"=").decode()

    def open(self, purpose: str, token: str, *, what: str = "token") -> dict[str, Any]:
        invalid = InvalidInput(f"{what} is invalid or was not issued for this use.", field=what)
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        except (ValueError, TypeError):
            raise invalid from None
        payload, mac = raw[:-_MAC_BYTES], raw[-_MAC_BYTES:]
        if len(raw) <= _MAC_BYTES or not hmac.compare_digest(mac, self._mac(purpose, payload)):
            raise invalid
        try:
            data = json.loads(payload)
        except ValueError:
            raise invalid from None
        if not isinstance(data, dict):
            raise invalid
        return data


@lru_cache(maxsize=1)
def signer_from_secret(secret_arn: str) -> Signer:
    """The deployment's signer; the secret is fetched once per process."""
    from agentworks.aws_clients import secretsmanager

    value = secretsmanager().get_secret_value(SecretId=secret_arn)["SecretString"]
    return Signer(value.encode())
