"""Counting read pages without a request of their own: a read writes nothing to fold its
count into (the cursor is the caller's), so pages are added up in this process and written
at most once per `limits.USAGE_FLUSH_SECONDS` — by the first page after the window closes,
or by a usage report asked for in the same process (so it shows what this process counted).

One `ADD` per account-day-shard in the tally at a flush. A container Lambda recycles takes
what it had not written with it: at most one window of its reads, an estimate's error.
"""

from __future__ import annotations

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.usage.counts import Counts, day_of, shard_of
from agentworks.usage.recorder import UsageRecorder


class UsageTally:
    def __init__(self, recorder: UsageRecorder, clock: Clock = SYSTEM_CLOCK) -> None:
        self._recorder = recorder
        self._clock = clock
        self._pending: dict[tuple[str, str, int], Counts] = {}
        self._window_started: float | None = None

    def add(self, account_id: str, spread_by: str, counts: Counts) -> None:
        """Adds to this process's tally; writes the tally when its window has closed."""
        if not counts:
            return
        now = self._clock.now()
        key = (account_id, day_of(now), shard_of(spread_by))
        self._pending[key] = self._pending.get(key, Counts()) + counts
        if self._window_started is None:
            self._window_started = now
        elif now - self._window_started >= limits.USAGE_FLUSH_SECONDS:
            self.flush()

    def flush(self) -> None:
        """Writes what is pending (one ADD per account-day-shard); a dropped write is
        counted and logged by the recorder, never raised."""
        pending, self._pending, self._window_started = self._pending, {}, None
        for (account_id, day, shard), counts in pending.items():
            self._recorder.add_to(account_id, day, shard, counts)
