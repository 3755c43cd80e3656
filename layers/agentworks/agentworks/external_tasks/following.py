"""The tick's round over the waits on external agents' tasks (issue 30 §2).

Each due wait's task is read once at its agent. Still working and within its time: the
next read is set, the pause doubling from A2A_WAIT_POLL_FIRST_SECONDS to
A2A_WAIT_POLL_MAX_SECONDS. Ended, asking, out of time, or unreadable past its time: the
waiting step is resumed with its token, and its next turn reads the outcome (or cancels
the task). When what waited ended meanwhile (a cancelled call or run), the task is
cancelled at the agent and the wait dropped.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Protocol

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.external_tasks.wait_store import ExternalWait, ExternalWaitStore, StaleWait

logger = logging.getLogger(__name__)


class TaskReader(Protocol):
    """What an adapter offers for a task it left working (a2a_agent.A2aAdapter)."""

    def task_working(self, account_id: str, task_id: str) -> bool: ...

    def cancel_task(self, account_id: str, task_id: str) -> None: ...

    def watch_task(self, account_id: str, task_id: str, url: str, token: str) -> bool: ...


class TaskFollower:
    def __init__(
        self,
        store: ExternalWaitStore,
        readers: Callable[[dict[str, Any]], TaskReader],
        resume: Callable[[str, dict[str, Any]], bool],
        owner_ended: Callable[[str], bool],
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._store = store
        self._readers = readers  # the adapter of a wait's settings
        # SendTaskSuccess(token, output); False for a token nothing waits on any more (a
        # round that resumed it, then failed to delete; an execution that ended).
        self._resume = resume
        self._owner_ended = owner_ended  # call:<id> | step:<run>:<key> → over (or gone)?
        self._clock = clock

    def _now(self) -> int:
        return int(self._clock.now() * 1000)

    def follow_due(self, time_left: Callable[[], float] | None = None) -> dict[str, int]:
        """One round; `time_left` is the tick's remaining seconds (it stops in time)."""
        now = self._now()
        report = {"external_tasks_read": 0, "external_waits_resumed": 0,
                  "external_tasks_cancelled": 0}  # fmt: skip
        for account_id, owner in self._store.due(now, limits.A2A_WAITS_PER_TICK):
            if time_left is not None and time_left() < limits.A2A_TICK_RESERVE_SECONDS:
                break  # the rest stay due: the next tick reads them
            found = self._store.get(account_id, owner)
            if found is None or found[0].due_ms > now:
                continue  # settled, or set later, since the index was written
            try:
                self._follow(*found, now, report)
            except StaleWait:
                continue  # its step wrote it again meanwhile: the next round reads that one
            except Exception as error:
                logger.warning("external wait not settled", extra={"error": str(error)})
        return report

    def follow_now(self, account_id: str, owner: str, watch_token: str) -> bool:
        """An agent's push notification about the task a wait follows: the task is read at
        once (the notice's content is not trusted). False — and nothing read — when no such
        wait is open or the token is not the one registered with the agent."""
        found = self._store.get(account_id, owner)
        if found is None or not found[0].watch_token:
            return False
        if not hmac.compare_digest(found[0].watch_token.encode(), watch_token.encode()):
            return False
        with contextlib.suppress(StaleWait):  # written again meanwhile: that one is newer
            self._follow(*found, self._now(), Counter())
        return True

    def _follow(
        self, wait: ExternalWait, version: int, now: int, report: dict[str, int] | Counter[str]
    ) -> None:
        reader = self._readers(wait.settings)
        if self._owner_ended(wait.owner):
            self._store.delete(wait, version)
            try:
                reader.cancel_task(wait.account_id, wait.task_id)
                report["external_tasks_cancelled"] += 1
            except Exception as error:  # the agent's, the network's: the wait is gone anyway
                logger.warning("external task not cancelled", extra={"error": str(error)})
            return
        if now < wait.deadline_ms:
            report["external_tasks_read"] += 1
            try:
                working = reader.task_working(wait.account_id, wait.task_id)
            except Exception as error:  # unreachable for now: read again, up to its time
                logger.warning("external task not read", extra={"error": str(error)})
                working = True
            if working:
                pause = min(wait.pause_s * 2, limits.A2A_WAIT_POLL_MAX_SECONDS)
                due = min(now + wait.pause_s * 1000, wait.deadline_ms)
                self._store.reschedule(replace(wait, due_ms=due, pause_s=pause), version)
                return
        if self._resume(wait.task_token, {}):
            report["external_waits_resumed"] += 1
        self._store.delete(wait, version)
