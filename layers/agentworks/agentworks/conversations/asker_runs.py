"""The asking run of a request one Crew sent another (C3): it waits on a task token, and
whatever becomes of the request — its reply, a refusal, a failure, its deadline — is
what it reads when it carries on. Each request wakes its run once (the token is taken in
the same conditional save)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from agentworks.crews.call_store import StaleCall

if TYPE_CHECKING:
    from agentworks.conversations.delivery_items import Delivery
    from agentworks.crews.call_store import CallStore
    from agentworks.crews.execution import Executions
    from agentworks.crews.models import CallRecord

logger = logging.getLogger(__name__)


class AskerRuns:
    def __init__(self, calls: CallStore, executions: Executions) -> None:
        self._calls = calls
        self._executions = executions

    def tell(self, request: Delivery, answer: str) -> bool:
        """Wakes the run that sent `request` with `answer`; False when no run waits on it
        (none sent it, it ended, or it was woken already)."""
        if not request.asker_run_id:
            return False
        return self.tell_run(request.asker_run_id, request.message_id, answer)

    def tell_run(
        self, run_id: str, request_id: str, answer: str, reply_id: str | None = None
    ) -> bool:
        """Wakes run `run_id` if it waits on `request_id`: its next turn reads `answer`, or
        the reply message `reply_id` (an ask-back's answer, read when it carries on)."""
        for _attempt in range(5):
            found = self._calls.get(run_id)
            if found is None:
                return False
            record, version = found
            if not waits_on(record, request_id):
                return False
            token = record.task_token
            assert token is not None
            record.asked_reply, record.asked_reply_id, record.task_token = answer, reply_id, None
            record.progress.append(f"request {request_id}: {answer[:80]}")
            try:
                self._calls.save(record, version)
            except StaleCall:
                continue
            # A run stopped meanwhile (its request cancelled or expired) takes nothing.
            return self.resume(token)
        return False

    def resume(self, token: str) -> bool:
        """False when the execution no longer waits (stopped, timed out)."""
        try:
            self._executions.resume(token, {"answered": True})
        except Exception:  # any refusal means nobody waits on it
            return False
        return True


def waits_on(record: CallRecord, request_id: str) -> bool:
    return (
        not record.terminal
        and record.asked_request_id == request_id
        and record.task_token is not None
        and record.asked_reply is None
    )
