"""What a Crew's runs reach in the conversations they run in (M8–M10, C1–C3), by shape.

Conversations sit a floor above Crews: they admit messages to Crews and start their runs.
So the step runner and the reconciler hold the conversation side by these shapes, never by
its modules; agentworks.conversations fills them in (its wiring)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from agentworks.audit.entries import AuditEntry
    from agentworks.identity.models import Principal

# (account_id, connection_id) → is the connection live now (A3: re-checked after a read).
LiveConnection = Callable[[str, str], bool]
# (account_id, connection_id) → its principal while it is live, else None (a run's starter).
StarterPrincipal = Callable[[str, str], "Principal | None"]


class ConversationRecords(Protocol):
    """The delivery records and wakeups a run reads and moves (CrewInboxStore). A delivery
    record is the conversation side's own type, read here by its attributes."""

    def get_delivery(self, conversation: str, seq: int) -> Any: ...

    def set_delivery_outcome(
        self, conversation: str, seq: int, run_id: str, state: str, error: str | None, now: int
    ) -> None: ...

    def set_wakeup_run_state(
        self, conversation: str, wake: str, run_id: str, state: str, error: str | None, now: int
    ) -> None: ...

    def put_ask_back(
        self, conversation: str, seq: int, run_id: str, request_id: str, deadline_ms: int
    ) -> None: ...

    def audit(self, entry: AuditEntry, now: int) -> None: ...


class AskingRuns(Protocol):
    """C3: the run that asked another Crew waits; what comes of its request wakes it
    (AskerRuns)."""

    def tell(self, request: Any, answer: str) -> bool: ...

    def resume(self, token: str) -> bool: ...


class AskedRunStarts(Protocol):
    """C3: starts the run of a request one Crew's run sent another (AskedStarts)."""

    def start_one(self, conversation: str, seq: int) -> int: ...
