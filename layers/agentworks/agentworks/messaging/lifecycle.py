"""Inbox lifetime rules (M11).

- A conversation idle for 7 days is retired by the scheduler tick; its metadata answers
  `expired` (to authorized callers) for 7 more days, then TTL removes it.
- At most 2,000 retired entries are kept; the oldest beyond that are forgotten.
- A new conversation past 300 live ones for its initiating account, or 2,000 for the
  store, first retires the least recently active one (of that account, or of the store).
"""

from __future__ import annotations

from dataclasses import dataclass

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.errors import LimitReached
from agentworks.messaging.lifecycle_store import LifecycleStore, idle_key

_SWEEP_BATCH = 100


@dataclass(frozen=True)
class SweepReport:
    retired_idle: int
    forgotten: int

    def as_dict(self) -> dict[str, int]:
        return {"retired_idle": self.retired_idle, "forgotten": self.forgotten}


class InboxLifecycle:
    def __init__(self, store: LifecycleStore, clock: Clock = SYSTEM_CLOCK) -> None:
        self._store = store
        self._clock = clock

    def make_room(self, account_id: str, scope: str) -> None:
        """Retires the least recently active live conversation of the full scope."""
        now_ms = int(self._clock.now() * 1000)
        for _attempt in range(5):
            oldest = self._store.oldest_live(account_id if scope == "account" else None)
            if not oldest:
                break
            conversation, owner = oldest[0]
            if self._store.retire(conversation, owner, now_ms):
                return
        raise LimitReached(
            "No conversation could be retired to admit a new one; retry shortly.", scope=scope
        )

    def sweep(self) -> SweepReport:
        """The tick's retention pass: retire idle conversations, bound retired metadata."""
        now_ms = int(self._clock.now() * 1000)
        cutoff_hour = (now_ms - limits.INBOX_IDLE_SECONDS * 1000) // 3_600_000
        cutoff_ms = now_ms - limits.INBOX_IDLE_SECONDS * 1000
        retired = 0
        while True:
            idle = self._store.oldest_live(None, idle_key(cutoff_hour, ""), _SWEEP_BATCH)
            for conversation, owner in idle:
                # The index moves once an hour with the first send of the hour; the newest
                # message is the exact last activity (and repairs a lost hourly move).
                newest = self._store.newest_activity(conversation)
                if newest is not None and newest > cutoff_ms:
                    self._store.move_activity(conversation, newest)
                    continue
                retired += int(self._store.retire(conversation, owner, now_ms))
            if len(idle) < _SWEEP_BATCH:
                break
        forgotten = 0
        excess = self._store.retired_count() - limits.EXPIRED_LOOKUP_MAX_ENTRIES
        while excess > 0:
            batch = self._store.oldest_retired(min(excess, _SWEEP_BATCH))
            for conversation in batch:
                self._store.forget(conversation)
            forgotten += len(batch)
            excess -= len(batch)
            if not batch:
                break
        return SweepReport(retired, forgotten)
