"""Adding to usage counters from a request that does its own work first (a read page, a
WebSocket closing): one `ADD`, and a failure never fails the request it counts."""

from __future__ import annotations

from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.observability import count, logger
from agentworks.usage.counts import Counts, day_of, shard_of
from agentworks.usage.usage_store import UsageStore


class UsageRecorder:
    def __init__(self, store: UsageStore, clock: Clock = SYSTEM_CLOCK) -> None:
        self._store = store
        self._clock = clock

    def add(self, account_id: str, spread_by: str, counts: Counts) -> bool:
        """Adds `counts` to today's counters of `account_id`, in the shard `spread_by`
        (an id the caller holds) picks; False when the write was dropped (a metric and a
        log line say so: usage is an estimate, the read or close it counts is not)."""
        if not counts:
            return True
        day = day_of(self._clock.now())
        try:
            self._store.add(account_id, day, shard_of(spread_by), counts)
        except Exception:
            logger.exception("usage write dropped", extra={"account_id": account_id})
            count("UsageWritesDropped")
            return False
        return True
