"""Short-lived call tokens (issue 28 item 3, `lambda` adapter): what a user's agent function
sends to `POST /v1/mcp-servers/{name}/tools/{tool}:call` to call the tools its turn admits.

A token is signed (signing.Signer, its own purpose) and names the account, the connection
the run acts for, the scope that connection must still hold, the admitted (server, tool)
pairs, the turn whose record its calls go on and the run whose end cancels them
(token_calls), and an expiry no later than the
turn's remaining time (at most `MCP_CALL_TOKEN_MAX_SECONDS`). It authenticates only that
route: the connection is read again (revoked or without the scope: refused like a bad
token), the principal it gives holds no scope at all, and a server or tool the token does
not name answers like an unknown name.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.errors import AgentWorksError, Unauthenticated
from agentworks.identity.models import McpGrant

if TYPE_CHECKING:
    from agentworks.identity.models import Principal
    from agentworks.signing import Signer

PREFIX = "awm1"
_PURPOSE = "mcp-call-token"

LivePrincipal = Callable[[str, str], "Principal | None"]


def is_call_token(token: str) -> bool:
    return token.strip().startswith(PREFIX + ".")


class McpCallTokens:
    def __init__(
        self, signer: Signer, live_principal: LivePrincipal, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self._signer = signer
        self._live = live_principal
        self._clock = clock

    def mint(
        self,
        principal: Principal,
        scope: str,
        tools: Sequence[tuple[str, str]],
        seconds: float,
        turn: str,
        run: str = "",
    ) -> str:
        """A token for `tools` acting as `principal` (who must keep `scope`) in `turn` of
        `run`, valid for `seconds` (at most MCP_CALL_TOKEN_MAX_SECONDS)."""
        lasts = max(0.0, min(seconds, limits.MCP_CALL_TOKEN_MAX_SECONDS))
        data = {
            "a": principal.account_id,
            "c": principal.connection_id,
            "s": scope,
            "t": [[server, tool] for server, tool in tools],
            "k": turn,
            "r": run,
            "x": int(self._clock.now() + lasts),
        }
        return f"{PREFIX}.{self._signer.seal(_PURPOSE, data)}"

    def authenticate(self, token: str) -> Principal:
        """The token's principal — the run's connection, read again, with no scope and only
        the token's tools — or `Unauthenticated` (one message for every failure)."""
        failure = Unauthenticated(
            "Missing, invalid, expired or revoked token. Send 'Authorization: Bearer <token>'."
        )
        head, _, sealed = token.strip().partition(".")
        if head != PREFIX or not sealed:
            raise failure
        try:
            data: dict[str, Any] = self._signer.open(_PURPOSE, sealed)
            account, connection, scope = str(data["a"]), str(data["c"]), str(data["s"])
            tools = tuple((str(s), str(t)) for s, t in data["t"])
            turn, run, expires = str(data["k"]), str(data["r"]), float(data["x"])
        except (AgentWorksError, KeyError, TypeError, ValueError):
            raise failure from None
        if expires <= self._clock.now():
            raise failure
        principal = self._live(account, connection)
        if principal is None or scope not in principal.scopes:
            raise failure
        grant = McpGrant(tools, turn, expires, run)
        return dataclasses.replace(
            principal, scopes=frozenset(), credential="mcp_call", mcp_grant=grant
        )
