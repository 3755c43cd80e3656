"""Adding to usage counters from a request that does its own work first (a WebSocket
closing, a tally of read pages): one `ADD`, and a failure never fails the request it counts."""

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
        return self.add_to(account_id, day_of(self._clock.now()), shard_of(spread_by), counts)

    def add_to(self, account_id: str, day: str, shard: int, counts: Counts) -> bool:
        """Adds to one shard of one day (a tally written later keeps the day it counted)."""
        if not counts:
            return True
        try:
            self._store.add(account_id, day, shard, counts)
        except Exception:
            logger.exception("usage write dropped", extra={"account_id": account_id})
            count("UsageWritesDropped")
            return False
        return True
