"""Notifier function: two streams, notices to the push channel's listeners.

- The messages table's: a notice to each listener of an inbox that got messages
  (agentworks.push.notifier), then the batch's sends counted in their accounts' usage
  (agentworks.messaging.stream_usage).
- The work table's (calls, workflow runs and steps, Relay runs and steps): one notice per
  account to its web console's listeners naming the runs that changed
  (agentworks.push.run_notices); then, for a function call whose state changed, its A2A
  push notification configs are sent the task (agentworks.a2a_server.push_notices, best
  effort: it never fails the batch).

Notices are hints (the listener reads through the API), so a retried batch repeats some,
and loses none. Each event source's filter lets through only its own table's records, and
each part reads only the items it knows.
"""

from __future__ import annotations

from typing import Any

from agentworks.a2a_server.push_notices import a2a_notices, changed_calls
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
    answer = {"inboxes": report.inboxes, "posted": report.posted, "dropped": report.dropped}
    calls = changed_calls(records)
    if calls:
        # Last: a retried batch (a failure above) has sent none of these yet.
        answer["a2a_pushed"] = a2a_notices().notify(calls)
    return answer
