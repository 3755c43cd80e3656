"""What a Crew run's end adds to its account's usage: one function call (a run for a
message or a wakeup is not a call) and the states its execution entered."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentworks.usage.counts import Counts

if TYPE_CHECKING:
    from agentworks.crews.models import CallRecord


def call_usage(record: CallRecord) -> Counts:
    return Counts(
        function_calls=1 if record.kind == "function" else 0,
        state_transitions=record.transitions,
    )
