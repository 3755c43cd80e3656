"""An audit entry: one change to a conversation with a Crew, and who made it (C6).

In the work table, one partition per account, oldest first:

    AUDIT#<account_id>   <at ms:013d>#<ulid>   conversation_id, inbox_id, action, actor,
                                               actor_connection_id, actor_run_id,
                                               message_id, state, kind, detail, expires_ttl

No message bodies: ids, states and short platform-written details only. An entry is kept
`limits.AUDIT_RETENTION_SECONDS` (TTL). The webhooks function reads the table's stream for
INSERTs under `AUDIT#` (audit/webhook_events.py says which entries become which event).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Literal

from ulid import ULID

from agentworks import limits
from agentworks.dynamo import TTL_ATTRIBUTE, to_item

AUDIT_PREFIX = "AUDIT#"

Action = Literal[
    "message_sent",
    "request_state",
    "message_state",
    "released",
    "declined",
    "cancelled",
    "expired",
    "paused",
    "resumed",
    "closed",
    "deleted",
    "answered_for",  # a person answered for an agent (stepping in, C5)
]
ActorKind = Literal["connection", "platform", "run"]


@dataclass(frozen=True)
class Actor:
    """Who made a change: a connection (a person or a program), the platform itself (the
    tick, a deleted Crew), or a Crew's run and the connection it runs as."""

    kind: ActorKind
    connection_id: str | None = None
    run_id: str | None = None

    @staticmethod
    def connection(connection_id: str) -> Actor:
        return Actor("connection", connection_id)

    @staticmethod
    def run(run_id: str, runs_as: str | None) -> Actor:
        return Actor("run", runs_as, run_id)


PLATFORM = Actor("platform")


@dataclass
class AuditEntry:
    account_id: str
    conversation: str  # the conversation's ULID
    action: Action
    actor: Actor
    at: int = 0  # ms; 0: the writer stamps it
    message_id: str | None = None
    state: str | None = None  # a request's API state (C2) after the change
    kind: str | None = None  # the message's kind (request, reply, note, message)
    detail: str | None = None  # short, platform-written (a reason's length, never a body)
    inbox_id: str | None = None
    entry_id: str = field(default="")  # the sort key's ULID part; "" until stamped

    def stamped(self, now_ms: int) -> AuditEntry:
        """The entry with its time and id (once: a stamped entry keeps both)."""
        if not self.at:
            self.at = now_ms
        if not self.entry_id:
            self.entry_id = _next_ulid(self.at)
        return self


_last_ulid = 0
_ulid_lock = threading.Lock()


def _next_ulid(at_ms: int) -> str:
    """A ULID for `at_ms`, greater than every one this process made before: entries stamped
    in the same millisecond keep the order their changes were made in."""
    global _last_ulid
    with _ulid_lock:
        value = max(int(ULID.from_timestamp(at_ms / 1000)), _last_ulid + 1)
        _last_ulid = value
        return str(ULID.from_int(value))


def audit_pk(account_id: str) -> str:
    return f"{AUDIT_PREFIX}{account_id}"


def audit_sk(at: int, entry_id: str) -> str:
    return f"{at:013d}#{entry_id}"


def audit_item(entry: AuditEntry) -> dict[str, Any]:
    assert entry.at and entry.entry_id, "stamp the entry first"
    item: dict[str, Any] = {
        "pk": audit_pk(entry.account_id),
        "sk": audit_sk(entry.at, entry.entry_id),
        "conversation": entry.conversation,
        "inbox_id": entry.inbox_id,
        "action": entry.action,
        "actor": entry.actor.kind,
        "actor_connection_id": entry.actor.connection_id,
        "actor_run_id": entry.actor.run_id,
        "message_id": entry.message_id,
        "state": entry.state,
        "kind": entry.kind,
        "detail": (entry.detail or "")[: limits.AUDIT_DETAIL_MAX_CHARS] or None,
        "at": entry.at,
        TTL_ATTRIBUTE: entry.at // 1000 + limits.AUDIT_RETENTION_SECONDS,
    }
    return {k: v for k, v in item.items() if v is not None}


def audit_put(table: str, entry: AuditEntry, now_ms: int) -> dict[str, Any]:
    """The entry as a transaction item (name it "audit"), written once."""
    entry.stamped(now_ms)
    return {
        "Put": {
            "TableName": table,
            "Item": to_item(audit_item(entry)),
            "ConditionExpression": "attribute_not_exists(pk)",
        }
    }


def entry_from(data: dict[str, Any]) -> AuditEntry:
    _, entry_id = str(data["sk"]).split("#", 1)
    return AuditEntry(
        account_id=str(data["pk"]).removeprefix(AUDIT_PREFIX),
        conversation=str(data["conversation"]),
        action=data["action"],
        actor=Actor(
            data.get("actor", "platform"),
            data.get("actor_connection_id"),
            data.get("actor_run_id"),
        ),
        at=int(data["at"]),
        message_id=data.get("message_id"),
        state=data.get("state"),
        kind=data.get("kind"),
        detail=data.get("detail"),
        inbox_id=data.get("inbox_id"),
        entry_id=entry_id,
    )
