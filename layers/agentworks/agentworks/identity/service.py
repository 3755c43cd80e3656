"""Identity rules: bootstrap, issue, list and revoke connections; authenticate tokens."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.errors import InvalidInput, LimitReached, Unauthenticated, Unavailable
from agentworks.identity import tokens
from agentworks.identity.connection_store import ConnectionGone, ConnectionLimit, ConnectionStore
from agentworks.identity.models import (
    ADMIN,
    ALL_SCOPES,
    DEFAULT_SCOPES,
    Connection,
    IssuedConnection,
    Principal,
)
from agentworks.ids import new_id

if TYPE_CHECKING:
    from agentworks.identity.web_sessions import WebSessions

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_TARGET_RE = re.compile(r"^(crew|workflow|relay|agent):[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def _check_name(name: str) -> str:
    name = name.strip()
    if not (1 <= len(name) <= limits.CONNECTION_NAME_MAX_CHARS) or not _NAME_RE.match(name):
        raise InvalidInput(
            f"Connection name must be 1–{limits.CONNECTION_NAME_MAX_CHARS} ASCII letters, "
            "digits, '.', '_' or '-'.",
            field="name",
        )
    return name


def _check_scopes(scopes: Iterable[str] | None, held: frozenset[str]) -> tuple[str, ...]:
    if scopes is None:  # the defaults the creator holds
        return tuple(s for s in DEFAULT_SCOPES if s in held) or DEFAULT_SCOPES
    chosen = tuple(dict.fromkeys(s.strip() for s in scopes if s.strip()))
    unknown = [s for s in chosen if s not in ALL_SCOPES]
    if unknown or not chosen:
        raise InvalidInput(
            f"Unknown or empty scopes {unknown}; choose from {', '.join(ALL_SCOPES)}.",
            field="scopes",
        )
    return chosen


def _within_scopes(chosen: tuple[str, ...], creator: Principal) -> tuple[str, ...]:
    beyond = [s for s in chosen if s not in creator.scopes]
    if beyond:
        raise InvalidInput(
            f"scopes {beyond} are not this connection's own {sorted(creator.scopes)}; a "
            "connection grants only scopes it holds.",
            field="scopes",
        )
    return chosen


def _check_bounds(bounds: Iterable[str] | None) -> tuple[str, ...] | None:
    if bounds is None:
        return None
    chosen = tuple(dict.fromkeys(b.strip() for b in bounds))
    bad = [b for b in chosen if not _TARGET_RE.match(b)]
    if bad:
        raise InvalidInput(
            f"Target bounds must look like crew:NAME, workflow:NAME, relay:NAME or agent:NAME; "
            f"got {bad}.",
            field="target_bounds",
        )
    return chosen


def _manages(admin: Principal, connection: Connection) -> bool:
    """A3b: a bounded admin administers only connections whose bounds lie within its own
    (never an unbounded one); an unbounded admin administers them all."""
    if admin.target_bounds is None:
        return True
    return connection.target_bounds is not None and set(connection.target_bounds) <= set(
        admin.target_bounds
    )


class IdentityService:
    def __init__(self, store: ConnectionStore, clock: Clock = SYSTEM_CLOCK) -> None:
        self._store = store
        self._clock = clock

    def bootstrap(self, account_name: str = "local") -> IssuedConnection:
        """A6: a new account and its first admin connection."""
        now = int(self._clock.now())
        account_id = new_id("acct", self._clock)
        self._store.put_account(account_id, _check_name(account_name), now)
        return self._issue(account_id, "admin", ALL_SCOPES, None, None, created_by=None)

    def create_connection(
        self,
        principal: Principal,
        name: str,
        scopes: Iterable[str] | None = None,
        target_bounds: Iterable[str] | None = None,
        expires_in_seconds: int | None = None,
        ends_with_parent: bool = False,
    ) -> IssuedConnection:
        """A connection never grants more than its creator holds (A4): its scopes within
        the creator's, its bounds within the creator's, its expiry no later, and if the
        creator ends with its parent, it ends with the creator. Asking for more is refused,
        not narrowed; what is not asked for is inherited."""
        principal.require(ADMIN)
        principal.require_own_token()
        creator = self._store.get_live_connection(
            principal.account_id, principal.connection_id, self._clock.now()
        )
        if creator is None:  # revoked between authentication and now
            raise Unauthenticated("Missing, invalid, expired or revoked token.")
        chosen_scopes = _within_scopes(_check_scopes(scopes, principal.scopes), principal)
        if ADMIN in chosen_scopes and principal.target_bounds is not None:
            raise InvalidInput("A bounded connection cannot create an admin connection.")
        bounds = _check_bounds(target_bounds)
        if principal.target_bounds is not None:
            if bounds is None:
                bounds = principal.target_bounds
            outside = [b for b in bounds if b not in principal.target_bounds]
            if outside:
                raise InvalidInput(
                    f"target_bounds {outside} lie outside this connection's own bounds "
                    f"{list(principal.target_bounds)}; ask within them, or ask an admin "
                    "connection without target bounds.",
                    field="target_bounds",
                )
        expires_at = creator.expires_at
        if expires_in_seconds is not None:
            if not (60 <= expires_in_seconds <= 400 * limits.DAY_SECONDS):
                raise InvalidInput("expires_in_seconds must be between 60 and 34,560,000.")
            expires_at = int(self._clock.now()) + expires_in_seconds
            if creator.expires_at is not None and expires_at > creator.expires_at:
                raise InvalidInput(
                    "expires_in_seconds reaches beyond this connection's own expiry; ask "
                    f"at most {creator.expires_at - int(self._clock.now())} seconds.",
                    field="expires_in_seconds",
                )
        if creator.generation + 1 > limits.CONNECTION_GENERATIONS_MAX:
            raise LimitReached(
                f"Connections nest at most {limits.CONNECTION_GENERATIONS_MAX} generations "
                "deep; create this one from a connection nearer the account's first admin."
            )
        # A creator that ends with its parent makes only connections that end with it, so
        # revoking any ancestor stops every generation below it.
        ends_with_parent = ends_with_parent or bool(creator.bound_to)
        return self._issue(
            principal.account_id,
            _check_name(name),
            chosen_scopes,
            bounds,
            expires_at,
            created_by=principal.connection_id,
            ends_with_parent=ends_with_parent,
            bound_to=(creator.connection_id, *creator.bound_to) if ends_with_parent else (),
            generation=creator.generation + 1,
        )

    def _issue(
        self,
        account_id: str,
        name: str,
        scopes: tuple[str, ...],
        bounds: tuple[str, ...] | None,
        expires_at: int | None,
        created_by: str | None,
        ends_with_parent: bool = False,
        bound_to: tuple[str, ...] = (),
        generation: int = 0,
    ) -> IssuedConnection:
        secret = tokens.new_secret()
        connection = Connection(
            account_id=account_id,
            connection_id=new_id("conn", self._clock),
            name=name,
            scopes=scopes,
            secret_hash=tokens.hash_secret(secret),
            created_at=int(self._clock.now()),
            target_bounds=bounds,
            expires_at=expires_at,
            created_by=created_by,
            ends_with_parent=ends_with_parent,
            bound_to=bound_to,
            generation=generation,
        )
        try:
            self._store.put_connection(connection, limits.CONNECTIONS_PER_ACCOUNT)
        except ConnectionLimit:
            raise LimitReached(
                f"An account holds at most {limits.CONNECTIONS_PER_ACCOUNT} connections that "
                "are not revoked (expired ones count until revoked); revoke unused ones first: "
                "agentworks connections revoke CONNECTION_ID"
            ) from None
        token = tokens.format_token(account_id, connection.connection_id, secret)
        return IssuedConnection(connection, token)

    def view(self, connection: Connection, stopped: bool = False) -> dict[str, Any]:
        """Public metadata of a connection, its status as of this service's clock."""
        return connection.public(self._clock.now(), stopped)

    def list_connections(self, principal: Principal) -> list[dict[str, Any]]:
        """A3b: every connection for an unbounded admin; for a bounded one, only those its
        bounds cover — each one's view, `stopped` when an ancestor it ends with is not live."""
        principal.require(ADMIN)
        listed = self._store.list_connections(principal.account_id)
        now = self._clock.now()
        live = {c.connection_id for c in listed if c.is_live(now)}
        return [
            self.view(c, stopped=any(a not in live for a in c.bound_to))
            for c in sorted(listed, key=lambda c: c.connection_id)
            if _manages(principal, c)
        ]

    def revoke(self, principal: Principal, connection_id: str) -> Connection:
        principal.require(ADMIN)
        connection = self._store.get_connection(principal.account_id, connection_id)
        # A connection outside a bounded admin's bounds answers like an unknown one (A5).
        if connection is None or not _manages(principal, connection):
            raise Unavailable()
        if connection.revoked_at is not None:
            return connection  # revoking again changes nothing
        at = int(self._clock.now())
        try:
            self._store.revoke(principal.account_id, connection_id, at)
        except ConnectionGone:
            raise Unavailable() from None
        return replace(connection, revoked_at=at)

    def is_live_connection(self, account_id: str, connection_id: str) -> bool:
        now = self._clock.now()
        return self._store.get_live_connection(account_id, connection_id, now) is not None

    def authenticate(self, token: str) -> Principal:
        """Token → principal, or `Unauthenticated` with one message for every failure."""
        failure = Unauthenticated(
            "Missing, invalid, expired or revoked token. Send 'Authorization: Bearer <token>'."
        )
        parsed = tokens.parse_token(token)
        if parsed is None:
            raise failure
        connection = self._store.get_live_connection(
            parsed.account_id, parsed.connection_id, self._clock.now()
        )
        if connection is None or not tokens.secret_matches(parsed.secret, connection.secret_hash):
            raise failure
        return connection.principal()

    def live_principal(self, account_id: str, connection_id: str) -> Principal | None:
        """The connection's principal while it is live (a run's starter, C3), else None."""
        try:
            return self.principal_of_connection(account_id, connection_id)
        except Unauthenticated:
            return None

    def principal_of_connection(self, account_id: str, connection_id: str) -> Principal:
        """A connection's principal without its token (a web session points at it, C5):
        refused exactly like a bad token when it is unknown, expired or revoked."""
        connection = self._store.get_live_connection(account_id, connection_id, self._clock.now())
        if connection is None:
            raise Unauthenticated("Missing, invalid, expired or revoked token.")
        return connection.principal()

    @cached_property
    def web(self) -> WebSessions:
        """Web sign-in (one-time links, session cookies) for the Inbox (C5)."""
        from agentworks.identity.web_sessions import WebSessions, WebSessionStore

        # The same table and client as the connections (one identity store, one module each).
        store = WebSessionStore(self._store._db, self._store._table)
        return WebSessions(store, self.principal_of_connection, self._clock)
