"""A run's credential (issue 9, "Isolation and authority"): `awr1.<account>.<run>.<secret>`.

The host mints one per attempt and hands it only to the relay code's process; the run
keeps a SHA-256 of it. Every platform call made with it is authenticated here, each time
anew: the run must be running that attempt, and the caller whose authority the run carries
must still hold a live connection — so a revoked caller's running relay cannot send, and
frozen source does not freeze permissions. The principal is the caller's connection as it
is now, narrowed to what relay code may do, and tagged with the run (its checkpoints).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.errors import Unauthenticated
from agentworks.identity import tokens
from agentworks.identity.models import (
    FUNCTIONS_CALL,
    FUNCTIONS_READ,
    MESSAGES_READ,
    MESSAGES_SEND,
    RELAYS_RUN,
    Principal,
)

if TYPE_CHECKING:
    from agentworks.identity.connection_store import ConnectionStore
    from agentworks.relays.run_store import RelayRunStore

PREFIX = "awr1"
# Relay code talks and calls; it never administers (no admin, no workflows:run).
RELAY_CODE_SCOPES = frozenset(
    {MESSAGES_READ, MESSAGES_SEND, FUNCTIONS_CALL, FUNCTIONS_READ, RELAYS_RUN}
)


def is_run_credential(token: str) -> bool:
    return token.strip().startswith(PREFIX + ".")


def format_credential(account_id: str, run_id: str, secret: str) -> str:
    return f"{PREFIX}.{account_id}.{run_id}.{secret}"


class RunCredentials:
    def __init__(
        self, runs: RelayRunStore, connections: ConnectionStore, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self._runs = runs
        self.connections = connections  # the host re-checks the same callers before attempts
        self._clock = clock

    def authenticate(self, token: str) -> Principal:
        failure = Unauthenticated(
            "Missing, invalid, expired or revoked token. Send 'Authorization: Bearer <token>'."
        )
        parts = token.strip().split(".")
        if len(parts) != 4 or parts[0] != PREFIX or not all(parts[1:]) or len(token) > 256:
            raise failure
        account_id, run_id, secret = parts[1], parts[2], parts[3]
        found = self._runs.get(run_id)
        if found is None:
            raise failure
        run = found[0]
        if (
            run.account_id != account_id
            or run.status != "running"
            or not run.credential_hash
            or not tokens.secret_matches(secret, run.credential_hash)
        ):
            raise failure
        connection = self.connections.get_live_connection(
            account_id, run.caller_connection_id, self._clock.now()
        )
        if connection is None:
            raise failure
        principal = connection.principal()
        if RELAYS_RUN not in principal.scopes or not principal.may_target(f"relay:{run.relay}"):
            raise failure  # the caller may no longer run this Relay at all
        return replace(
            principal,
            scopes=principal.scopes & RELAY_CODE_SCOPES,
            relay_run=run.run_id,
            relay_attempt=run.attempt,
            credential="run",
        )
