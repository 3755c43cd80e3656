"""Bearer tokens: `aw1.<account_id>.<connection_id>.<secret>`.

Only a SHA-256 of the secret is stored. The secret is 256 random bits, so a fast hash
is the right tool (a password KDF only helps low-entropy secrets).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

_PREFIX = "aw1"


@dataclass(frozen=True)
class ParsedToken:
    account_id: str
    connection_id: str
    secret: str


def new_secret() -> str:
    return secrets.token_urlsafe(32)


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def format_token(account_id: str, connection_id: str, secret: str) -> str:
    return f"{_PREFIX}.{account_id}.{connection_id}.{secret}"


def parse_token(token: str) -> ParsedToken | None:
    parts = token.strip().split(".")
    if len(parts) != 4 or parts[0] != _PREFIX or not all(parts[1:]) or len(token) > 256:
        return None
    return ParsedToken(parts[1], parts[2], parts[3])


def secret_matches(secret: str, stored_hash: str) -> bool:
    return hmac.compare_digest(hash_secret(secret), stored_hash)
