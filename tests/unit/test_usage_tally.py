"""Read pages are tallied in memory and written at most once a minute per process (issue
12: usage counting adds no request to a read): what a flush writes, when, on which day,
and that a dropped write costs the read nothing."""

from __future__ import annotations

from typing import Any

from agentworks import limits
from agentworks.usage.counts import Counts, day_of, shard_of
from agentworks.usage.recorder import UsageRecorder
from agentworks.usage.tally import UsageTally
from tests.support.clock import FakeClock

PAGE = Counts(messages_read=3, read_requests=1)


class Store:
    """Records each ADD the recorder makes, as UsageStore.add would send it."""

    def __init__(self, fail: bool = False) -> None:
        self.adds: list[tuple[str, str, int, Counts]] = []
        self.fail = fail

    def add(self, account_id: str, day: str, shard: int, counts: Counts) -> None:
        if self.fail:
            raise RuntimeError("ProvisionedThroughputExceededException")
        self.adds.append((account_id, day, shard, counts))


def _tally(clock: FakeClock, store: Store) -> UsageTally:
    recorder: Any = UsageRecorder(store, clock)  # type: ignore[arg-type]
    return UsageTally(recorder, clock)


def test_pages_within_a_window_write_nothing_then_one_add_per_shard() -> None:
    clock, store = FakeClock(1_800_000_000), Store()
    tally = _tally(clock, store)
    for _ in range(50):
        tally.add("acct_1", "conn_a", PAGE)
        clock.advance(1)
    assert store.adds == []  # 50 pages, no request of their own
    clock.advance(limits.USAGE_FLUSH_SECONDS)
    tally.add("acct_1", "conn_a", PAGE)  # the first page after the window writes it all
    assert store.adds == [
        (
            "acct_1",
            day_of(clock.now()),
            shard_of("conn_a"),
            Counts(messages_read=153, read_requests=51),
        )
    ]
    tally.add("acct_1", "conn_a", PAGE)  # a new window starts: nothing written
    assert len(store.adds) == 1


def test_window_closes_at_the_limit_not_before() -> None:
    clock, store = FakeClock(1_800_000_000), Store()
    tally = _tally(clock, store)
    tally.add("acct_1", "conn_a", PAGE)
    clock.advance(limits.USAGE_FLUSH_SECONDS - 0.001)
    tally.add("acct_1", "conn_a", PAGE)
    assert store.adds == []
    clock.advance(0.001)
    tally.add("acct_1", "conn_a", PAGE)
    assert [a[3] for a in store.adds] == [Counts(messages_read=9, read_requests=3)]


def test_accounts_and_days_stay_apart() -> None:
    clock, store = FakeClock(1_800_000_000 + 16 * 3600 - 30), Store()  # 30 s to midnight
    tally = _tally(clock, store)
    first_day = day_of(clock.now())
    tally.add("acct_1", "conn_a", PAGE)
    tally.add("acct_2", "conn_b", PAGE)
    clock.advance(limits.USAGE_FLUSH_SECONDS)
    tally.add("acct_1", "conn_a", PAGE)  # tomorrow's page, written with yesterday's
    assert sorted((a[0], a[1]) for a in store.adds) == [
        ("acct_1", first_day),
        ("acct_1", day_of(clock.now())),
        ("acct_2", first_day),
    ]
    assert first_day != day_of(clock.now())


def test_an_empty_tally_writes_nothing_and_a_flush_empties_it() -> None:
    clock, store = FakeClock(1_800_000_000), Store()
    tally = _tally(clock, store)
    tally.flush()
    tally.add("acct_1", "conn_a", Counts())
    tally.flush()
    assert store.adds == []
    tally.add("acct_1", "conn_a", PAGE)
    tally.flush()
    tally.flush()
    assert len(store.adds) == 1


def test_a_dropped_write_never_fails_the_read_that_triggers_it() -> None:
    clock, store = FakeClock(1_800_000_000), Store(fail=True)
    tally = _tally(clock, store)
    tally.add("acct_1", "conn_a", PAGE)
    clock.advance(limits.USAGE_FLUSH_SECONDS)
    tally.add("acct_1", "conn_a", PAGE)  # the write fails: logged and counted, not raised
    store.fail = False
    tally.flush()
    assert store.adds == []  # an estimate: the dropped window is not written twice
