"""Identity models: scopes, connections and the authenticated principal."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from agentworks.errors import MissingScope

MESSAGES_READ = "messages:read"
MESSAGES_SEND = "messages:send"
FUNCTIONS_CALL = "functions:call"
FUNCTIONS_READ = "functions:read"
WORKFLOWS_RUN = "workflows:run"
RELAYS_RUN = "relays:run"
# Claim and finish the account's `cli` workflow steps as a local runner (issue 10 item 6):
# a runner reads those steps' prompts, whoever started the run.
WORKFLOWS_RUNNER = "workflows:runner"
# Call tools of the account's attached MCP servers (issue 28): requests leave for servers
# outside, with the account's credentials for them.
MCP_SERVERS_CALL = "mcp-servers:call"
ADMIN = "admin"

ALL_SCOPES: tuple[str, ...] = (
    MESSAGES_READ,
    MESSAGES_SEND,
    FUNCTIONS_CALL,
    FUNCTIONS_READ,
    WORKFLOWS_RUN,
    RELAYS_RUN,
    WORKFLOWS_RUNNER,
    MCP_SERVERS_CALL,
    ADMIN,
)
# A new connection gets every scope but admin, runner and MCP calls unless told otherwise:
# they reach beyond what the connection itself starts.
DEFAULT_SCOPES: tuple[str, ...] = tuple(
    s for s in ALL_SCOPES if s not in (ADMIN, WORKFLOWS_RUNNER, MCP_SERVERS_CALL)
)


@dataclass(frozen=True)
class Consent:
    """M5: this connection is on the allow-list of a registered name (one identity of it).

    Kept on the connection item, in the same transaction that changes the name's
    allow-list, so authentication's single read carries it to every request."""

    agent_id: str
    display_name: str
    seen_at: int | None = None  # ms; when a read as this name last refreshed presence

    @classmethod
    def from_map(cls, data: dict[str, Any], name: str) -> Consent:
        seen = data.get("seen")
        return cls(
            agent_id=str(data["id"]),
            display_name=str(data.get("display") or name),
            seen_at=int(seen) if seen is not None else None,
        )


@dataclass(frozen=True)
class McpGrant:
    """What a call token admits: the only (server, tool) pairs, the turn whose record the
    calls go on, when the token expires (epoch seconds) and the run whose end cancels its
    calls in flight ("call:<id>" or "run:<id>"; "" for none)."""

    tools: tuple[tuple[str, str], ...]
    turn: str
    expires_at: float
    run: str = ""


@dataclass(frozen=True)
class Principal:
    """Who a request acts as: resolved from its bearer token (identity.bearer)."""

    account_id: str
    connection_id: str
    scopes: frozenset[str]
    # None = unbounded; otherwise the only targets (e.g. "crew:contracts") it may touch.
    target_bounds: tuple[str, ...] | None = None
    # The names (canonical) whose allow-list holds this connection, as of this request.
    consents: dict[str, Consent] = field(default_factory=dict, hash=False)
    # Set when relay code calls with its run's credential (relays.credentials): the run whose
    # checkpoints it may write, and the attempt its credential belongs to (the run was
    # running that attempt when this request was authenticated). None for a connection.
    relay_run: str | None = None
    relay_attempt: int = 0
    # How the request proved it: a connection's own bearer token, a web session cookie
    # pointing at one, or a relay run's credential. Only a token grants authority.
    credential: Literal["token", "session", "run", "mcp_call"] = "token"
    # A web session's end (epoch seconds): what the session lets it do ends then, a push
    # listener it opened included. None for every other credential.
    session_expires_at: int | None = None
    # A `lambda` adapter's MCP call token (mcp_servers.call_tokens): what it may call and
    # for which turn; None for every other credential.
    mcp_grant: McpGrant | None = None

    @property
    def acting_as(self) -> dict[str, str]:
        """name → agent_id of every name this connection may act as (M5)."""
        return {name: c.agent_id for name, c in self.consents.items()}

    def require(self, scope: str) -> None:
        if scope not in self.scopes:
            raise MissingScope(
                f"This connection lacks the '{scope}' scope. Create a connection with it: "
                f"agentworks connections create --name NAME --scopes {scope}",
                scope=scope,
            )

    def require_own_token(self) -> None:
        """Actions that grant or store authority (connections, sign-in links, Crews,
        adapter profiles, webhooks, registered workflows, releases, the webhook key) need
        the connection's own bearer token: a web session or relay code holding a derived
        credential never mints one that outlives or outreaches it. Says nothing about any
        target, so it leaks nothing."""
        if self.credential != "token":
            raise MissingScope(
                "This action grants or stores authority, so it needs the connection's own "
                "bearer token; a web session or a relay run's credential cannot do it.",
                scope="token",
            )

    def require_account_admin(self) -> None:
        """A3b: account-wide administration (every connection, the scheduler) needs `admin`
        without target bounds. Says nothing about any target, so it leaks nothing."""
        self.require(ADMIN)
        if self.target_bounds is not None:
            raise MissingScope(
                "This admin connection is limited by target bounds; account-wide "
                "administration needs an admin connection without target bounds.",
                scope=ADMIN,
            )

    def may_target(self, target: str) -> bool:
        return self.target_bounds is None or target in self.target_bounds


@dataclass(frozen=True)
class Connection:
    account_id: str
    connection_id: str
    name: str
    scopes: tuple[str, ...]
    secret_hash: str
    created_at: int
    target_bounds: tuple[str, ...] | None = None
    expires_at: int | None = None
    revoked_at: int | None = None
    created_by: str | None = None
    consents: dict[str, Consent] = field(default_factory=dict, hash=False)
    # Stops authenticating once `created_by` is revoked or expires (a bridge's per-agent
    # child connection: revoking the person's login stops every agent it attached).
    ends_with_parent: bool = False
    # The ancestors this connection ends with, nearest first: its creator, and the
    # creator's own list when the creator ends with its parent too (empty unless
    # `ends_with_parent`). Read in one BatchGetItem by authentication.
    bound_to: tuple[str, ...] = ()
    # 0 for an account's first connection, its creator's + 1 otherwise.
    generation: int = 0

    def is_live(self, now: float) -> bool:
        if self.revoked_at is not None:
            return False
        return self.expires_at is None or now < self.expires_at

    def principal(self) -> Principal:
        return Principal(
            account_id=self.account_id,
            connection_id=self.connection_id,
            scopes=frozenset(self.scopes),
            target_bounds=self.target_bounds,
            consents=dict(self.consents),
        )

    def public(self, now: float, stopped: bool = False) -> dict[str, Any]:
        """Metadata safe to show anyone in the account: never the hash. `stopped`: an
        ancestor it ends with was revoked or expired."""
        return {
            "connection_id": self.connection_id,
            "name": self.name,
            "scopes": list(self.scopes),
            "target_bounds": list(self.target_bounds) if self.target_bounds is not None else None,
            "created_at": self.created_at,
            "expires_at": self.expires_at,
            "revoked_at": self.revoked_at,
            "ends_with_parent": self.ends_with_parent,
            "status": _status(self, now, stopped),
        }


def _status(connection: Connection, now: float, stopped: bool) -> str:
    if connection.revoked_at is not None:
        return "revoked"
    if not connection.is_live(now):
        return "expired"
    return "stopped" if stopped else "active"


@dataclass(frozen=True)
class IssuedConnection:
    connection: Connection
    token: str = field(repr=False)
