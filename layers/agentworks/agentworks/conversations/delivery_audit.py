"""Audit entries (C6) for what happens to a message to a Crew: its delivery record's moves.

The stores write them with the move itself — in its transaction when it is one, else right
after its conditional write succeeds — so callers only say who acted."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentworks.audit.entries import PLATFORM, Action, Actor, AuditEntry
from agentworks.conversations.delivery_items import STATE_OF_RECORD
from agentworks.ids import InboxRef

if TYPE_CHECKING:
    from agentworks.conversations.delivery_items import Delivery


def api_state(record_state: str) -> str:
    return STATE_OF_RECORD.get(record_state, "couldnt_complete")


def sender_of(delivery: Delivery) -> Actor:
    """Who sent the message: a Crew's run that asked (as its connection), or a connection."""
    if delivery.asker_run_id:
        return Actor.run(delivery.asker_run_id, delivery.connection_id)
    return Actor.connection(delivery.connection_id)


def delivery_entry(
    delivery: Delivery,
    state: str,
    actor: Actor | None = None,
    action: Action | None = None,
    detail: str | None = None,
) -> AuditEntry:
    """The entry of `delivery` reaching record state `state`."""
    return AuditEntry(
        account_id=delivery.account_id,
        conversation=delivery.conversation,
        action=action or ("request_state" if delivery.is_request else "message_state"),
        actor=actor or PLATFORM,
        message_id=delivery.message_id,
        state=api_state(state),
        kind=delivery.kind,
        detail=detail,
        inbox_id=InboxRef(delivery.conversation, "b").inbox_id,
    )
