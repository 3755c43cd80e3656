"""Notifier function: the messages table's stream → a notice to each listener of an inbox
that got messages (agentworks.push.notifier). Notices are hints (the listener reads
through the API), so a retried batch repeats some, and loses none. After the notices, the
batch's sends are counted in their accounts' usage (agentworks.messaging.stream_usage)."""

from __future__ import annotations

from typing import Any

from agentworks.observability import observed_handler
from agentworks.push.notifier import delivered_messages
from agentworks.runtime import push


@observed_handler()
def handler(event: dict[str, Any], context: Any) -> dict[str, int]:
    records = event.get("Records") or []
    report = push().notifier.notify(delivered_messages(records))
    push().usage.count(records, report.usage)
    return {"inboxes": report.inboxes, "posted": report.posted, "dropped": report.dropped}
