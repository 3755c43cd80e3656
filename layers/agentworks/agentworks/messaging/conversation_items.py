"""The item shapes of a conversation (META) and of its messages (`M#<seq>`), both ways."""

from __future__ import annotations

from typing import Any, cast

from agentworks import limits
from agentworks.ids import Side
from agentworks.messaging import keys
from agentworks.messaging.message_kinds import PLAIN, Framing
from agentworks.messaging.models import Conversation, ConversationStatus, Party, StoredMessage


def ttl_after(ms: int, seconds: int) -> int:
    """The TTL attribute's value (epoch seconds) `seconds` after `ms`."""
    return ms // 1000 + seconds


def _party_to_map(party: Party) -> dict[str, Any]:
    return {"kind": party.kind, "agent_id": party.agent_id, "agent_name": party.agent_name}


def _party_from_map(data: dict[str, Any]) -> Party:
    return Party(
        kind=data["kind"], agent_id=data.get("agent_id"), agent_name=data.get("agent_name")
    )


def conversation_ttl(last_activity_ms: int) -> int:
    """META outlives the idle period by the expired-lookup period (M11)."""
    return ttl_after(last_activity_ms, limits.INBOX_IDLE_SECONDS + limits.EXPIRED_LOOKUP_SECONDS)


def crew_key(account_id: str, crew_id: str) -> str:
    """The ByCrew partition of one Crew's conversations."""
    return f"{account_id}#{crew_id}"


def named_keys(conv: Conversation) -> dict[str, str]:
    """The NamedByAccount index's keys (C5 the Messages view): the account, then the
    conversation's ulid (sortable: newest last)."""
    return {"named_account": conv.account_id, "named_sort": conv.conversation}


def conversation_to_item(conv: Conversation) -> dict[str, Any]:
    return {
        **keys.conversation(conv.conversation),
        "account_id": conv.account_id,
        "party_a": _party_to_map(conv.parties["a"]),
        "party_b": _party_to_map(conv.parties["b"]),
        "created_at": conv.created_at,
        "last_activity": conv.last_activity,
        "activity_hour": conv.activity_hour,
        "evicted_at": conv.evicted_at,
        "status": None if conv.status == "active" else conv.status,
        "depth": None if conv.depth == 1 else conv.depth,
        keys.TTL_ATTRIBUTE: conversation_ttl(conv.last_activity),
    }


def conversation_from_item(data: dict[str, Any]) -> Conversation:
    return Conversation(
        conversation=data["pk"].removeprefix("CONV#"),
        account_id=data["account_id"],
        parties={"a": _party_from_map(data["party_a"]), "b": _party_from_map(data["party_b"])},
        created_at=int(data["created_at"]),
        last_activity=int(data["last_activity"]),
        activity_hour=int(data.get("activity_hour", 0)),
        evicted_at=data.get("evicted_at"),
        status=cast(ConversationStatus, data.get("status", "active")),
        depth=int(data.get("depth", 1)),
    )


def message_to_item(msg: StoredMessage) -> dict[str, Any]:
    return {
        **keys.message(msg.conversation, msg.seq),
        "to_side": msg.side,
        "sender": msg.sender,
        "body": msg.body,
        "created_at": msg.created_at,
        "receipt": msg.receipt,
        "rate": msg.window,
        "n_a": msg.counts["a"],
        "n_b": msg.counts["b"],
        "submission_id": msg.submission_id,
        "to_agent": msg.to_agent,
        **framing_attributes(msg.framing),
        keys.TTL_ATTRIBUTE: ttl_after(msg.created_at, limits.MESSAGE_RETENTION_SECONDS),
    }


def message_from_item(data: dict[str, Any]) -> StoredMessage:
    ttl = data.get(keys.TTL_ATTRIBUTE)
    return StoredMessage(
        conversation=data["pk"].removeprefix("CONV#"),
        side=cast(Side, data["to_side"]),
        seq=keys.message_seq(data["sk"]),
        sender=data.get("sender", ""),
        body=data.get("body", ""),
        created_at=int(data["created_at"]),
        receipt=data.get("receipt", "stored"),
        window=[int(t) for t in data.get("rate", [])],
        counts={"a": int(data.get("n_a", 0)), "b": int(data.get("n_b", 0))},
        submission_id=data.get("submission_id"),
        expires_ttl=int(ttl) if ttl is not None else None,
        to_agent=data.get("to_agent"),
        framing=framing_from(data),
    )


def framing_attributes(framing: Framing) -> dict[str, Any]:
    """A plain message stores none (its item and its stream record stay as they were)."""
    if framing.is_plain:
        return {}
    return {
        "kind": framing.kind,
        "deadline_at": framing.deadline_at,
        "handoff": True if framing.handoff else None,
        "reply_to": framing.in_reply_to,
        "written_by": framing.written_by,
    }


def framing_from(data: dict[str, Any]) -> Framing:
    kind = data.get("kind")
    if kind is None:
        return PLAIN
    deadline, reply_to = data.get("deadline_at"), data.get("reply_to")
    return Framing(
        kind=kind,
        deadline_at=int(deadline) if deadline is not None else None,
        handoff=bool(data.get("handoff", False)),
        in_reply_to=int(reply_to) if reply_to is not None else None,
        written_by=data.get("written_by"),
    )
