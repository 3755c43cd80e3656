"""Which audit entries are which webhook events (C6), and what a delivery's body says.

    agent_asked           a request was sent to an agent (message_sent, kind request)
    request_needs_review  a request waits for a person (state waiting_for_review)
    request_answered      a request's run answered it (state answered)
    conversation_closed   the conversation was closed (by a person, or its Crew's deletion)

A body carries ids and states only, never a message's text: the receiver reads the
conversation through the API with its own connection.
"""

from __future__ import annotations

from typing import Any

from agentworks.audit.entries import AuditEntry
from agentworks.conversation_webhooks.models import WebhookEvent
from agentworks.messaging.models import iso


def event_of(entry: AuditEntry) -> WebhookEvent | None:
    if entry.action == "message_sent" and entry.kind == "request":
        return "agent_asked"
    if entry.action == "closed":
        return "conversation_closed"
    if entry.action in ("request_state", "released"):
        if entry.state == "waiting_for_review":
            return "request_needs_review"
        if entry.state == "answered":
            return "request_answered"
    return None


def payload(event: WebhookEvent, entry: AuditEntry) -> dict[str, Any]:
    return {
        "event": event,
        "audit_entry_id": entry.entry_id,
        "at": iso(entry.at),
        "conversation_id": f"cnv_{entry.conversation}",
        "inbox_id": entry.inbox_id,
        "message_id": entry.message_id,
        "state": entry.state,
        "actor": {
            "kind": entry.actor.kind,
            "connection_id": entry.actor.connection_id,
            "run_id": entry.actor.run_id,
        },
    }
