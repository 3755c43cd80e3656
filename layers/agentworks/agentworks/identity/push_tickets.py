"""Push tickets (C5): how the web pages sign in a WebSocket upgrade to the push channel
when their session cookie cannot reach it (deployed, the push API has its own host name).

A page asks the API for a ticket with its cookie (and the CSRF header), then opens the
socket with `?ticket=…`. The ticket is signed with the deployment's keys (a rotation
keeps tickets in flight good, as cursors), lives `PUSH_TICKET_SECONDS`, and names the
session by the digest its item is keyed by, plus its account: a query string lands in
logs, so it never carries the session's secret. Redeeming one re-reads that session now
(signed out, expired or its connection revoked: refused) and gives the session's
principal, its end included, so a listener it opens ends with the session. Only a web
session mints one: a token's holder sends its token on the upgrade. Its purpose is its
own, so no other use of the signing keys opens it, and nothing but the upgrade reads it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.errors import InvalidInput, MissingScope, Unauthenticated
from agentworks.identity.models import Principal
from agentworks.identity.web_sessions import session_digest

if TYPE_CHECKING:
    from agentworks.identity.web_sessions import WebSessions
    from agentworks.signing import Signer

PURPOSE = "push-ticket/v1"
_TICKET_MAX_CHARS = 512


@dataclass(frozen=True)
class PushTicket:
    ticket: str
    expires_at: int  # epoch seconds


def _refused() -> Unauthenticated:
    """Exactly a bad bearer token's refusal: which part of a ticket failed is not told."""
    return Unauthenticated(
        "Missing, invalid, expired or revoked token. Send 'Authorization: Bearer <token>'."
    )


class PushTickets:
    def __init__(
        self,
        signer: Callable[[], Signer],
        sessions: Callable[[], WebSessions],
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        # Both read on first use: the push function loads the signing secret only when an
        # upgrade presents a ticket.
        self._signer = signer
        self._sessions = sessions
        self._clock = clock

    def issue(self, principal: Principal, session_id: str) -> PushTicket:
        """A ticket for the web session `session_id`, which `principal` authenticated."""
        if principal.credential != "session" or not session_id:
            raise MissingScope(
                "A push ticket is for the web pages' session only: a client holding a token "
                "sends it on the upgrade (Authorization: Bearer).",
                scope="session",
            )
        expires_at = int(self._clock.now()) + limits.PUSH_TICKET_SECONDS
        data = {"s": session_digest(session_id), "a": principal.account_id, "e": expires_at}
        return PushTicket(self._signer().seal(PURPOSE, data), expires_at)

    def redeem(self, ticket: str) -> Principal:
        """The principal of the session the ticket names, re-checked now; else the one
        refusal of a bad token (forged, expired, another purpose's, a session ended)."""
        if not ticket or len(ticket) > _TICKET_MAX_CHARS:
            raise _refused()
        try:
            data = self._signer().open(PURPOSE, ticket, what="ticket")
        except InvalidInput:
            raise _refused() from None
        digest, account, expires_at = data.get("s"), data.get("a"), data.get("e")
        if not (isinstance(digest, str) and isinstance(account, str)):
            raise _refused()
        if not isinstance(expires_at, int) or int(self._clock.now()) > expires_at:
            raise _refused()
        principal = self._sessions().authenticate_digest(digest)
        if principal.account_id != account:
            raise _refused()
        return principal
