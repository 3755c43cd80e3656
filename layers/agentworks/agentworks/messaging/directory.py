"""Named agents: register, unregister and list the account's directory (M4, M5)."""

from __future__ import annotations

from collections.abc import Callable

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.errors import Conflict, InvalidInput, LimitReached, Unavailable
from agentworks.identity.models import MESSAGES_READ, MESSAGES_SEND, Principal
from agentworks.ids import new_id
from agentworks.messaging.agent_store import (
    AgentStore,
    ConnectionMissing,
    RegistrationChanged,
    RegistrationExists,
    RegistrationLimit,
)
from agentworks.messaging.models import AgentView, RegisterAgent, Registration, iso
from agentworks.messaging.names import normalize_agent_name

# A name is "online" when something read as it within this window.
ONLINE_WINDOW_MS = 120_000

# (account_id, connection_id) -> is that a live connection of the account?
ConnectionCheck = Callable[[str, str], bool]


def agent_view(reg: Registration, now_ms: int) -> AgentView:
    return AgentView(
        agent_name=reg.display_name,
        agent_id=reg.agent_id,
        purpose=reg.purpose,
        provider=reg.provider,
        online=reg.last_seen_at is not None and now_ms - reg.last_seen_at < ONLINE_WINDOW_MS,
        allowed_connection_ids=reg.allowed_connection_ids,
        created_at=iso(reg.created_at) or "",
        last_seen_at=iso(reg.last_seen_at),
    )


class AgentDirectory:
    def __init__(
        self, agents: AgentStore, live_connection: ConnectionCheck, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self._agents = agents
        self._live_connection = live_connection
        self._clock = clock

    def _now_ms(self) -> int:
        return int(self._clock.now() * 1000)

    def _allowed(self, principal: Principal, requested: list[str] | None) -> list[str] | None:
        if requested is None:
            return None
        chosen = list(dict.fromkeys([principal.connection_id, *(c.strip() for c in requested)]))
        for connection_id in chosen[1:]:
            if not self._live_connection(principal.account_id, connection_id):
                raise self._not_live(connection_id)
        return chosen

    @staticmethod
    def _not_live(connection_id: str) -> InvalidInput:
        return InvalidInput(
            f"allowed_connection_ids: {connection_id} is not a live connection of this "
            "account. List them with: agentworks connections list",
            field="allowed_connection_ids",
        )

    def register(self, principal: Principal, request: RegisterAgent) -> AgentView:
        principal.require(MESSAGES_SEND)
        name = normalize_agent_name(request.agent_name)
        if not principal.may_target(f"agent:{name}"):
            raise Unavailable()
        if request.allowed_connection_ids is not None:
            principal.require_own_token()  # an allow-list lets other connections act as it
        allowed = self._allowed(principal, request.allowed_connection_ids)
        for _attempt in range(3):
            existing = self._agents.get(principal.account_id, name)
            if existing is not None:
                if principal.connection_id not in existing.allowed_connection_ids:
                    if MESSAGES_READ not in principal.scopes:
                        # It cannot list the directory, so it must not learn that the name
                        # exists: the answer of a name it may not take at all (A5).
                        raise Unavailable()
                    raise Conflict(
                        f"The name '{name}' is registered and this connection is not on its "
                        "allow-list. Ask a connection on the list to add this one "
                        "(register --allow-connection), or pick another name.",
                    )
                # Re-registering without a field keeps its value (M5 for the allow-list).
                keep = existing.allowed_connection_ids if allowed is None else allowed
                purpose = existing.purpose if request.purpose is None else request.purpose
                provider = existing.provider if request.provider is None else request.provider
                try:
                    self._agents.update_settings(existing, purpose, provider, keep)
                except RegistrationChanged:
                    continue  # changed or removed a moment ago: read it again
                except ConnectionMissing as missing:
                    raise self._not_live(missing.connection_id) from None
                existing.purpose, existing.provider = purpose, provider
                existing.allowed_connection_ids = keep
                return agent_view(existing, self._now_ms())
            reg = Registration(
                account_id=principal.account_id,
                name=name,
                display_name=request.agent_name,
                agent_id=new_id("agt", self._clock),
                allowed_connection_ids=allowed or [principal.connection_id],
                created_at=self._now_ms(),
                created_by=principal.connection_id,
                purpose=request.purpose,
                provider=request.provider,
            )
            try:
                self._agents.create(reg)
            except (RegistrationExists, RegistrationChanged):
                continue  # registered a moment ago by someone else: treat as re-register
            except ConnectionMissing as missing:
                raise self._not_live(missing.connection_id) from None
            except RegistrationLimit as limit:
                bound = (
                    limits.REGISTRATIONS_PER_ACCOUNT
                    if limit.scope == "account"
                    else limits.REGISTRATIONS_PER_SERVER
                )
                raise LimitReached(
                    f"At most {bound:,} registered names per {limit.scope}; unregister names "
                    "you no longer use (agentworks messages unregister --agent NAME).",
                ) from None
            return agent_view(reg, self._now_ms())
        raise Conflict("The name changed while registering; retry.")

    def unregister(self, principal: Principal, agent_name: str) -> None:
        principal.require(MESSAGES_SEND)
        name = normalize_agent_name(agent_name)
        # A4: a name outside the bounds answers like an unknown one, before any read.
        if not principal.may_target(f"agent:{name}"):
            raise Unavailable()
        reg = self._agents.get(principal.account_id, name)
        # M5: only a connection on the name's current allow-list may remove it.
        if reg is None or principal.connection_id not in reg.allowed_connection_ids:
            raise Unavailable()
        if not self._agents.delete(reg):
            raise Unavailable()

    def list(
        self,
        principal: Principal,
        listening: Callable[[str], bool] | None = None,
    ) -> list[AgentView]:
        """The directory (M4); with `listening` (agent_id → is a push listener of it
        connected, issue 10) each entry says so, for one more read per name."""
        principal.require(MESSAGES_READ)
        now = self._now_ms()
        regs = self._agents.list_all(principal.account_id)
        if principal.target_bounds is not None:
            regs = [r for r in regs if principal.may_target(f"agent:{r.name}")]
        views = [agent_view(r, now) for r in sorted(regs, key=lambda r: r.name)]
        if listening is not None:
            for view in views:
                view.listening = listening(view.agent_id)
        return views
