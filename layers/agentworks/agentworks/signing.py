"""Tamper-proof opaque tokens (cursors today, request state later).

The HMAC key comes from a Secrets Manager secret that CloudFormation generates, read once
per cold start. A forged or foreign token is an `InvalidInput` (400), never a 500.

Rotation without breaking tokens in flight: the secret is either the key itself or
`{"current": "<key>", "previous": ["<key>", ...]}`. Tokens are sealed with the current key
and opened with any of them, so cursors and request state made before a rotation keep
working until the previous key is dropped (docs/operations.md).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from agentworks.errors import InvalidInput

_MAC_BYTES = 16


class Signer:
    def __init__(self, key: bytes, previous: Sequence[bytes] = ()) -> None:
        if any(len(k) < 16 for k in (key, *previous)):
            raise ValueError("signing key must be at least 16 bytes")
        self._key = key
        self._keys = (key, *previous)  # opening tries the current key first

    @staticmethod
    def _mac_with(key: bytes, purpose: str, payload: bytes) -> bytes:
        return hmac.new(key, purpose.encode() + b"\0" + payload, hashlib.sha256).digest()[
            :_MAC_BYTES
        ]

    def _mac(self, purpose: str, payload: bytes) -> bytes:
        return self._mac_with(self._key, purpose, payload)

    def derived_key(self, purpose: str, subject: str) -> str:
        """A key of its own for one purpose and subject (e.g. an account's webhook key):
        shown to its owner, it reveals nothing of the signing key or of other subjects'."""
        return self.derived_keys(purpose, subject)[0]

    def derived_keys(self, purpose: str, subject: str) -> list[str]:
        """The derived key under the current signing key, then under each previous one: a
        webhook is signed with each while a rotation is under way, so receivers holding
        the old key keep verifying until they fetch the new one."""
        return [
            hmac.new(
                key, f"derive:{purpose}".encode() + b"\0" + subject.encode(), hashlib.sha256
            ).hexdigest()
            for key in self._keys
        ]

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
        if len(raw) <= _MAC_BYTES or not any(
            hmac.compare_digest(mac, self._mac_with(key, purpose, payload)) for key in self._keys
        ):
            raise invalid
        try:
            data = json.loads(payload)
        except ValueError:
            raise invalid from None
        if not isinstance(data, dict):
            raise invalid
        return data


def secret_keys(value: str) -> list[bytes]:
    """The secret's keys, current first: the value is the key itself, or
    `{"current": "<key>", "previous": ["<key>", ...]}` while a rotation is under way."""
    if not value.lstrip().startswith("{"):
        return [value.encode()]
    keys = json.loads(value)
    previous = keys.get("previous", [])
    if not isinstance(keys.get("current"), str) or not isinstance(previous, list):
        raise ValueError('the signing secret is {"current": "<key>", "previous": [...]}')
    return [keys["current"].encode(), *(str(k).encode() for k in previous)]


def signer_from_value(value: str) -> Signer:
    current, *previous = secret_keys(value)
    return Signer(current, previous)


@lru_cache(maxsize=1)
def signer_from_secret(secret_arn: str) -> Signer:
    """The deployment's signer; the secret is fetched once per process."""
    from agentworks.aws_clients import secretsmanager

    return signer_from_value(secretsmanager().get_secret_value(SecretId=secret_arn)["SecretString"])
