"""The delivery record of a message to a Crew (M8–M10), and of a request (C1, C2), in the
work table:

    CREWCONV#<conversation>   MSG#<seq:010d>   state (pending_review, received, running,
                                               succeeded, failed, interrupted, declined,
                                               expired, cancelled), run_id, error; a
                                               request also kind, deadline_at, handoff

A request that is still open sits in the work table's sparse OpenCalls index under its own
partition, so the tick finds the ones past their deadline with one Query:

    open_store = DEADLINE    open_check = <deadline ms:013d>#<conversation>#<seq:010d>

Terminal moves remove those two attributes, so the index holds open requests only.

A request one Crew's run sent another waits `received` under the START partition until the
tick starts its run (the step runner may not start executions of the state machine that
invokes it: its role can't name that state machine without a dependency cycle):

    open_store = START    open_check = <created ms:013d>#<conversation>#<seq:010d>
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentworks import limits
from agentworks.dynamo import TTL_ATTRIBUTE

if TYPE_CHECKING:
    from agentworks.conversations.models import RequestState

# What a request in each record state shows callers (C2), and writes to the audit log (C6).
STATE_OF_RECORD: dict[str, RequestState] = {
    "pending_review": "waiting_for_review",
    "received": "received",
    "running": "in_progress",
    "succeeded": "answered",
    "declined": "declined",
    "failed": "couldnt_complete",
    "interrupted": "couldnt_complete",
    "expired": "expired",
    "cancelled": "cancelled",
}
DEADLINES = "DEADLINE"
STARTS = "START"
# States in which a request still waits for its answer (and can expire or be cancelled).
OPEN_STATES = ("pending_review", "received", "running")
# REMOVEs that take a record out of the deadline index (append to a terminal update).
closed_updates = "REMOVE open_store, open_check"


def conversation_pk(conversation: str) -> str:
    return f"CREWCONV#{conversation}"


def delivery_key(conversation: str, seq: int) -> dict[str, str]:
    return {"pk": conversation_pk(conversation), "sk": f"MSG#{seq:010d}"}


def deadline_key(deadline_at: int, conversation: str, seq: int) -> str:
    return f"{deadline_at:013d}#{conversation}#{seq:010d}"


def parse_deadline_key(value: str) -> tuple[str, int]:
    """open_check → (conversation, seq)."""
    _, conversation, seq = value.split("#")
    return conversation, int(seq)


@dataclass
class Delivery:
    """What became of one message to a Crew (no body)."""

    conversation: str
    seq: int
    message_id: str
    account_id: str
    crew_id: str
    connection_id: str  # who sent it: its run runs as them
    state: str
    created_at: int  # ms
    updated_at: int
    run_id: str | None = None
    error: str | None = None
    kind: str = "message"  # or "request" (C1); notes have no delivery record
    deadline_at: int | None = None  # ms, requests
    handoff: bool = False
    asker_run_id: str | None = None  # C3: the run of the Crew that asked, waiting on it
    depth: int = 1  # C4: how many conversations deep

    @property
    def is_request(self) -> bool:
        return self.kind == "request"


def delivery_item(d: Delivery) -> dict[str, Any]:
    item: dict[str, Any] = {
        **delivery_key(d.conversation, d.seq),
        "message_id": d.message_id,
        "account_id": d.account_id,
        "crew_id": d.crew_id,
        "connection_id": d.connection_id,
        "state": d.state,
        "created_at": d.created_at,
        "updated_at": d.updated_at,
        "run_id": d.run_id,
        "error": d.error,
        TTL_ATTRIBUTE: d.created_at // 1000 + limits.DELIVERY_RECORD_SECONDS,
    }
    if d.is_request:
        item |= {
            "kind": d.kind,
            "deadline_at": d.deadline_at,
            "handoff": d.handoff or None,
            "asker_run_id": d.asker_run_id,
            "depth": d.depth if d.depth > 1 else None,
        }
        if d.state == "received" and d.asker_run_id:
            item |= {
                "open_store": STARTS,
                "open_check": deadline_key(d.created_at, d.conversation, d.seq),
            }
        elif d.deadline_at is not None and d.state in OPEN_STATES:
            item |= deadline_index(d)
    return item


def deadline_index(d: Delivery) -> dict[str, Any]:
    """The deadline index attributes of an open request (none without a deadline)."""
    if d.deadline_at is None:
        return {}
    return {
        "open_store": DEADLINES,
        "open_check": deadline_key(d.deadline_at, d.conversation, d.seq),
    }


def delivery_from(data: dict[str, Any]) -> Delivery:
    deadline = data.get("deadline_at")
    return Delivery(
        conversation=data["pk"].removeprefix("CREWCONV#"),
        seq=int(data["sk"].removeprefix("MSG#")),
        message_id=data["message_id"],
        account_id=data["account_id"],
        crew_id=data["crew_id"],
        connection_id=data["connection_id"],
        state=data["state"],
        created_at=int(data["created_at"]),
        updated_at=int(data["updated_at"]),
        run_id=data.get("run_id") or None,
        error=data.get("error") or None,
        kind=data.get("kind", "message"),
        deadline_at=int(deadline) if deadline is not None else None,
        handoff=bool(data.get("handoff", False)),
        asker_run_id=data.get("asker_run_id"),
        depth=int(data.get("depth", 1)),
    )
