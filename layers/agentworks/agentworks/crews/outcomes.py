"""A message run's outcome, shown where its sender looks (M7, M8, M9).

The step runner reports it when a run ends, and the tick's reconciliation when it records
a run whose execution ended without doing so: one implementation, so both show the same.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from agentworks.errors import AgentWorksError
from agentworks.ids import parse_message_id, parse_wakeup_id
from agentworks.observability import count_outcome

if TYPE_CHECKING:
    from agentworks.crews.conversation_records import ConversationRecords
    from agentworks.crews.models import CallRecord
    from agentworks.messaging.crew_inbox_views import CrewInboxViews


def report_outcome(
    record: CallRecord,
    inbox: ConversationRecords | None,
    receipts: CrewInboxViews | None,
    now: int,
) -> None:
    """The message's receipt goes `processed` (the Crew is done with it, whatever the
    outcome) and its delivery record (or wakeup) shows the run's state. Best effort and
    repeatable: a retried Finish repeats it."""
    if record.kind != "message":
        return
    error = record.errors[-1] if record.errors and record.state != "succeeded" else None
    if record.message_id:
        if receipts is not None:
            with contextlib.suppress(AgentWorksError):
                receipts.set_receipt_as_system(record.message_id, "processed")
        if inbox is not None:
            ref = parse_message_id(record.message_id)
            inbox.set_delivery_outcome(
                ref.conversation, ref.seq, record.call_id, record.state, error, now
            )
    if record.wakeup_id and inbox is not None:
        conversation, wake = parse_wakeup_id(record.wakeup_id)
        inbox.set_wakeup_run_state(conversation, wake, record.call_id, record.state, error, now)


def count_ended(record: CallRecord) -> None:
    """FunctionCallsEnded by outcome, counted where a function call's record turns terminal
    (the step runner's Finish or Interrupted, the tick's reconciliation): once per call."""
    if record.kind == "function":
        count_outcome("FunctionCallsEnded", record.state)
