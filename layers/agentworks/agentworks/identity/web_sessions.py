"""Web sign-in for the Inbox (C5): a one-time link that exchanges for a session cookie.

`agentworks inbox` asks for a link (an authenticated POST /v1/session/links): a random code
whose SHA-256 is stored for 5 minutes, pointing at the caller's connection. The page posts
the code to POST /v1/session; the link is taken with one conditional DeleteItem (it must
exist and be unexpired), so a second use finds nothing. The answer sets a cookie holding a
random session id (its SHA-256 stored for an hour, pointing at the same connection).

A request carrying the cookie authenticates as that connection, re-checked on every request
exactly like a bearer token (revoked or expired: refused). Unknown, expired and revoked
sessions all look like a bad token. Items carry `expires_ttl`; reads ignore expired ones.

Keys (identity table): `WEBLINK#<sha256 of code>` / `WEBLINK` and `WEBSESSION#<sha256 of
session id>` / `WEBSESSION`, attributes account_id, connection_id, expires_at (s).
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.dynamo import condition_failed, from_item, to_item
from agentworks.errors import Unauthenticated
from agentworks.identity.models import Principal

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# The live principal of (account id, connection id), or Unauthenticated (IdentityService's).
PrincipalOfConnection = Callable[[str, str], Principal]

SESSION_COOKIE = "aw_session"
# Cookie-authenticated requests that change something must carry this header (CSRF): a
# cross-site form can't set it, and a cross-site fetch with it needs a CORS preflight the
# API never grants.
CSRF_HEADER = "x-agentworks-requested-with"
_SECRET_MAX_CHARS = 128


def session_digest(secret: str) -> str:
    """What a link's or a session's item is keyed by (its secret is never stored)."""
    return hashlib.sha256(secret.encode()).hexdigest()


def _refused() -> Unauthenticated:
    """Exactly a bad bearer token's refusal: which part failed is not told (the page says
    how to get a new link)."""
    return Unauthenticated(
        "Missing, invalid, expired or revoked token. Send 'Authorization: Bearer <token>'."
    )


@dataclass(frozen=True)
class WebLink:
    code: str
    expires_at: int  # epoch seconds


@dataclass(frozen=True)
class WebSession:
    session_id: str
    max_age: int  # seconds


class WebSessionStore:
    """Data access for links and sessions (identity table)."""

    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._db = client
        self._table = table

    @staticmethod
    def _key(kind: str, digest: str) -> dict[str, str]:
        return {"pk": f"{kind}#{digest}", "sk": kind}

    def put(self, kind: str, digest: str, principal: Principal, expires_at: int) -> None:
        item = {
            **self._key(kind, digest),
            "account_id": principal.account_id,
            "connection_id": principal.connection_id,
            "expires_at": expires_at,
            "expires_ttl": expires_at,
        }
        self._db.put_item(
            TableName=self._table,
            Item=to_item(item),
            ConditionExpression="attribute_not_exists(pk)",
        )

    def take(self, kind: str, digest: str, now: int) -> dict[str, Any] | None:
        """Deletes the live item and returns it, or None (unknown, expired, or taken by a
        concurrent request first)."""
        try:
            response = self._db.delete_item(
                TableName=self._table,
                Key=to_item(self._key(kind, digest)),
                ConditionExpression="attribute_exists(pk) AND expires_at > :now",
                ExpressionAttributeValues=to_item({":now": now}),
                ReturnValues="ALL_OLD",
            )
        except ClientError as error:
            if condition_failed(error):
                return None
            raise
        return from_item(response.get("Attributes"))

    def get(self, kind: str, digest: str, now: int) -> dict[str, Any] | None:
        response = self._db.get_item(
            TableName=self._table, Key=to_item(self._key(kind, digest)), ConsistentRead=True
        )
        data = from_item(response.get("Item"))
        if not data or int(data.get("expires_at", 0)) <= now:
            return None
        return data

    def delete(self, kind: str, digest: str) -> None:
        self._db.delete_item(TableName=self._table, Key=to_item(self._key(kind, digest)))


class WebSessions:
    def __init__(
        self,
        store: WebSessionStore,
        principal_of_connection: PrincipalOfConnection,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._store = store
        # A session is as good as its connection, re-read on every request.
        self._principal_of_connection = principal_of_connection
        self._clock = clock

    def _now(self) -> int:
        return int(self._clock.now())

    def create_link(self, principal: Principal) -> WebLink:
        """A one-time code for `principal`'s connection, valid `WEB_LINK_SECONDS`. Only the
        connection's own token asks: a session or a relay run's credential would otherwise
        mint a session of the whole connection that outlives it."""
        principal.require_own_token()
        code = secrets.token_urlsafe(32)
        expires_at = self._now() + limits.WEB_LINK_SECONDS
        self._store.put("WEBLINK", session_digest(code), principal, expires_at)
        return WebLink(code=code, expires_at=expires_at)

    def exchange(self, code: str) -> WebSession:
        """The code (once) for a new session of its connection, if that is still live."""
        if not code or len(code) > _SECRET_MAX_CHARS:
            raise _refused()
        taken = self._store.take("WEBLINK", session_digest(code), self._now())
        if taken is None:
            raise _refused()
        principal = self._principal(taken)  # a link of a revoked connection gives nothing
        session_id = secrets.token_urlsafe(32)
        expires_at = self._now() + limits.WEB_SESSION_SECONDS
        self._store.put("WEBSESSION", session_digest(session_id), principal, expires_at)
        return WebSession(session_id=session_id, max_age=limits.WEB_SESSION_SECONDS)

    def authenticate(self, session_id: str) -> Principal:
        """The session's connection as a principal, re-checked now; else `Unauthenticated`."""
        if not session_id or len(session_id) > _SECRET_MAX_CHARS:
            raise _refused()
        found = self._store.get("WEBSESSION", session_digest(session_id), self._now())
        if found is None:
            raise _refused()
        return self._principal(found)

    def authenticate_digest(self, digest: str) -> Principal:
        """The session keyed by `digest` (a push ticket names it, never its secret), as
        `authenticate` would answer for the session itself."""
        if len(digest) != 64:
            raise _refused()
        found = self._store.get("WEBSESSION", digest, self._now())
        if found is None:
            raise _refused()
        return self._principal(found)

    def logout(self, session_id: str) -> None:
        if session_id and len(session_id) <= _SECRET_MAX_CHARS:
            self._store.delete("WEBSESSION", session_digest(session_id))

    def _principal(self, item: dict[str, Any]) -> Principal:
        try:
            principal = self._principal_of_connection(
                str(item["account_id"]), str(item["connection_id"])
            )
        except Unauthenticated:
            raise _refused() from None
        return replace(principal, credential="session", session_expires_at=int(item["expires_at"]))
