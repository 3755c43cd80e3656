"""Runs of a Crew in its conversations (M9, M10): one for each message it acts on and one for
each wakeup that fires.

A run is a record in the calls table (kind "message", function "") and its own execution of
the function-call state machine, named after it. It takes no function slot: slots (F5)
bound concurrent *function calls*; messages are bounded by each conversation's rate limit
(M11) instead. The step runner reads the message at the run's first turn and posts the
Crew's final answer back into the same conversation when it finishes.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from agentworks.audit.entries import Actor
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.conversations.crew_inbox_store import CrewInboxStore, Delivery, Wakeup
from agentworks.crews.call_store import CallStore
from agentworks.crews.execution import Executions
from agentworks.crews.models import CallRecord
from agentworks.ids import new_id, parse_message_id

logger = logging.getLogger(__name__)

NOT_STARTED = "The run could not be started; nothing was answered."


class MessageRuns:
    def __init__(
        self,
        calls: CallStore,
        inbox: CrewInboxStore,
        executions: Executions,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._calls = calls
        self._inbox = inbox
        self._executions = executions
        self._clock = clock

    def _now(self) -> int:
        return int(self._clock.now() * 1000)

    def new_run(
        self,
        account_id: str,
        crew_id: str,
        crew_name: str,
        crew_inbox_id: str,
        connection_id: str,
        message_id: str | None = None,
        wakeup_id: str | None = None,
        run_id: str | None = None,
    ) -> CallRecord:
        now = self._now()
        return CallRecord(
            call_id=run_id or new_id("run", self._clock),
            account_id=account_id,
            crew_name=crew_name,
            crew_id=crew_id,
            function="",
            args={},
            caller_connection_id=connection_id,
            state="accepted",
            created_at=now,
            updated_at=now,
            slot_held=False,
            kind="message",
            inbox_id=crew_inbox_id,
            message_id=message_id,
            wakeup_id=wakeup_id,
        )

    def record_put(self, record: CallRecord) -> dict[str, Any]:
        """The transaction item that stores a new run's record."""
        return self._calls.new_record_put(record)

    def for_message(self, delivery: Delivery, crew_name: str, crew_inbox_id: str) -> bool:
        """Records the message (once) with its run and starts it; False for a replay."""
        record = self.new_run(
            delivery.account_id,
            delivery.crew_id,
            crew_name,
            crew_inbox_id,
            delivery.connection_id,
            message_id=delivery.message_id,
        )
        record.depth = delivery.depth
        delivery.state, delivery.run_id = "running", record.call_id
        if not self._inbox.open_delivery(delivery, self._calls.new_record_put(record)):
            return False
        self.start(record)
        return True

    def for_held(
        self,
        delivery: Delivery,
        crew_name: str,
        crew_inbox_id: str,
        from_state: str,
        actor: Actor | None = None,
    ) -> CallRecord | None:
        """A message that waited (`pending_review` for a person, `received` in a paused
        conversation or for the tick) gets its run: recorded in the transaction that moves
        the message to `running`, then started (its state says whether it did). None when
        the message moved meanwhile. `actor` (audited) released it or resumed its
        conversation; None: the platform (the tick)."""
        record = self.new_run(
            delivery.account_id,
            delivery.crew_id,
            crew_name,
            crew_inbox_id,
            delivery.connection_id,
            message_id=delivery.message_id,
        )
        record.depth = delivery.depth
        put = self.record_put(record)
        now = self._now()
        if not self._inbox.release(delivery, record.call_id, put, now, from_state, actor):
            return None
        self.start(record)
        return record

    def for_wakeup(self, wakeup: Wakeup, run_id: str) -> CallRecord:
        """The run of a wakeup that fired, stored (not started yet)."""
        record = self.new_run(
            wakeup.account_id,
            wakeup.crew_id,
            wakeup.crew_name,
            wakeup.crew_inbox_id,
            wakeup.connection_id,
            wakeup_id=wakeup.wakeup_id,
            run_id=run_id,
        )
        self._calls.put_new(record)
        return record

    def start(self, record: CallRecord) -> bool:
        """Starts the run's execution. If that fails nothing will run it: the run and the
        message's record say so (failed), and the caller decides what else to record."""
        try:
            self._executions.start(record.call_id)
        except Exception:
            logger.exception("message run not started", extra={"run_id": record.call_id})
            self.fail_unstarted(record)
            return False
        return True

    def fail_unstarted(self, record: CallRecord) -> None:
        now = self._now()
        record.state, record.outcome, record.updated_at = "failed", "failed", now
        record.errors.append(NOT_STARTED)
        with contextlib.suppress(Exception):
            self._calls.finish(record, 1, release_slot=False)
        if record.message_id:
            ref = parse_message_id(record.message_id)
            with contextlib.suppress(Exception):
                self._inbox.set_delivery_outcome(
                    ref.conversation, ref.seq, record.call_id, "failed", NOT_STARTED, now
                )
