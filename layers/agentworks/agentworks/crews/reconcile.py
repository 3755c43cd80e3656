"""Reconciliation of calls whose execution ended without recording an outcome (F5).

The state machine records every outcome itself (Finish, or Interrupted from any Catch). What
it cannot record — the execution stopped (StopExecution, a timeout of the whole execution),
or not even Interrupted could write — would keep the Crew's slot for ever. The one-minute
tick asks Step Functions about open calls (a bounded number each minute, see
open_call_store) and records those whose execution has ended, or never started, as
`interrupted`, giving their slot back in the same transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.crews.call_store import StaleCall
from agentworks.crews.outcomes import count_ended, report_outcome
from agentworks.observability import logger

if TYPE_CHECKING:
    from agentworks.crews.call_store import CallStore
    from agentworks.crews.conversation_records import ConversationRecords
    from agentworks.crews.execution import Executions
    from agentworks.crews.models import CallRecord
    from agentworks.crews.open_call_store import OpenCallStore
    from agentworks.messaging.crew_inbox_views import CrewInboxViews

# Execution statuses that mean "nothing will record this call any more".
_ENDED = frozenset({"SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"})


class CallReconciler:
    def __init__(
        self,
        calls: CallStore,
        open_calls: OpenCallStore,
        executions: Executions,
        inbox: ConversationRecords | None,
        clock: Clock = SYSTEM_CLOCK,
        receipts: CrewInboxViews | None = None,
        call_ended: Callable[[CallRecord], None] | None = None,
    ) -> None:
        self._calls = calls
        self._open = open_calls
        self._executions = executions
        self._inbox = inbox
        self._clock = clock
        self._receipts = receipts
        self._call_ended = call_ended  # a workflow step waiting for the call goes on

    def _now(self) -> int:
        return int(self._clock.now() * 1000)

    def reconcile(self) -> dict[str, int]:
        """Checks at most RECONCILE_CALLS_PER_TICK open calls; records the ended ones."""
        now = self._now()
        checked = recorded = 0
        for call_id in self._open.due(now, limits.RECONCILE_CALLS_PER_TICK):
            checked += 1
            status = self._executions.status_of_call(call_id)
            if status is not None and status not in _ENDED:
                self._open.recheck(call_id, now + limits.RECONCILE_RECHECK_SECONDS * 1000)
                continue
            why = (
                "the execution was never started"
                if status is None
                else f"the execution ended ({status}) before recording an outcome"
            )
            recorded += self.interrupt(call_id, why, status)
        return {"calls_checked": checked, "calls_reconciled": recorded}

    def interrupt(self, call_id: str, why: str, status: str | None = None) -> bool:
        """Records the open call `interrupted` with `why` as its evidence, giving its slot
        back; False when it was recorded meanwhile or moved since it was read."""
        now = self._now()
        found = self._calls.get(call_id)
        if found is None or found[0].terminal:
            return False  # recorded meanwhile (the index lags the table)
        record, version = found
        record.errors.append(f"interrupted: {why}")
        record.state = record.outcome = "interrupted"
        record.updated_at = now
        record.pending_inputs, record.task_token = [], None
        release, record.slot_held = record.slot_held, False
        try:
            self._calls.finish(record, version, release_slot=release)
        except StaleCall:
            return False  # it moved since it was read: the next tick looks again
        logger.warning("call reconciled", extra={"call_id": call_id, "execution": status})
        count_ended(record)
        report_outcome(record, self._inbox, self._receipts, now)
        if self._call_ended is not None:
            self._call_ended(record)
        return True
