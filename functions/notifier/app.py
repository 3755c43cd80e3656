"""Notifier function: two streams, notices to the push channel's listeners.

- The messages table's: a notice to each listener of an inbox that got messages
  (agentworks.push.notifier), then the batch's sends counted in their accounts' usage
  (agentworks.messaging.stream_usage).
- The work table's (calls, workflow runs and steps, Relay runs and steps): one notice per
  account to its web console's listeners naming the runs that changed
  (agentworks.push.run_notices).

Notices are hints (the listener reads through the API), so a retried batch repeats some,
and loses none. Each event source's filter lets through only its own table's records, and
each part reads only the items it knows.
"""

from __future__ import annotations

from typing import Any

from agentworks.observability import count, observed_handler
from agentworks.push.notifier import delivered_messages
from agentworks.push.run_notices import changed_runs
from agentworks.runtime import push


@observed_handler()
def handler(event: dict[str, Any], context: Any) -> dict[str, int]:
    records = event.get("Records") or []
    report = push().notifier.notify(delivered_messages(records))
    runs = changed_runs(records)
    if runs:
        before = report.posted
        push().run_notices.notify(runs, report)
        count("PushNotices", report.posted - before)
    push().usage.count(records, report.usage)
    return {"inboxes": report.inboxes, "posted": report.posted, "dropped": report.dropped}
