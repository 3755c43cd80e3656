"""Webhooks function: the work table's stream, filtered to new audit entries, → conversation
events to the subscribed URLs (agentworks.conversation_webhooks.delivery): signed, retried
with backoff, each attempt recorded. A batch Lambda retries sends nothing twice (each
delivery is claimed before its first attempt)."""

from __future__ import annotations

from typing import Any

from agentworks.conversation_webhooks.delivery import audit_entries
from agentworks.observability import observed_handler
from agentworks.runtime import webhook_delivery


@observed_handler()
def handler(event: dict[str, Any], context: Any) -> dict[str, int]:
    report = webhook_delivery().deliver(audit_entries(event.get("Records") or []))
    return {
        "entries": report.entries,
        "sent": report.sent,
        "failed": report.failed,
        "skipped_private": report.skipped_private,
    }
