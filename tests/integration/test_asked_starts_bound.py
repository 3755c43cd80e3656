"""C3: the tick starts the runs of requests Crews' runs sent, at most ASKED_STARTS_PER_TICK
a round, oldest first; the rest wait for the next round. The bound is lowered here (it is
read at each round) so a round's share is a few requests, not a hundred; each start is
recorded by a stand-in for `start_one`, whose own rules tests/integration/test_crew_asks.py
drives end to end."""

from __future__ import annotations

from typing import Any

import pytest

from agentworks import limits
from agentworks.conversations.asked_starts import AskedStarts
from agentworks.conversations.delivery_items import Delivery, delivery_item
from agentworks.conversations.wiring import asked_starts
from agentworks.dynamo import to_item

SHARE = 2


def _waiting(stack: Any, count: int) -> list[tuple[str, int]]:
    """`count` requests that wait for the tick to start their run, oldest first."""
    waiting = []
    for n in range(count):
        delivery = Delivery(
            conversation=f"conv{n}", seq=1, message_id=f"msg_{n}", account_id="acct_asks",
            crew_id="crew_asked", connection_id="conn_1", state="received",
            created_at=1_800_000_000_000 + n, updated_at=1_800_000_000_000 + n,
            kind="request", asker_run_id=f"run_asker{n}",
        )  # fmt: skip
        stack.client.put_item(
            TableName=stack.settings.work_table, Item=to_item(delivery_item(delivery))
        )
        waiting.append((delivery.conversation, delivery.seq))
    return waiting


@pytest.fixture
def starts(stack: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[AskedStarts, list]:
    monkeypatch.setattr(limits, "ASKED_STARTS_PER_TICK", SHARE)
    tick = asked_starts(stack.settings, stack.client, stack.clock, None, None)  # type: ignore[arg-type]
    started: list[tuple[str, int]] = []

    def start_one(conversation: str, seq: int) -> int:
        started.append((conversation, seq))
        return 1

    monkeypatch.setattr(tick, "start_one", start_one)
    return tick, started


def test_a_round_starts_its_share_oldest_first_and_no_more(stack: Any, starts: Any) -> None:
    tick, started = starts
    waiting = _waiting(stack, SHARE + 1)
    assert tick.start_due() == SHARE
    assert started == waiting[:SHARE]


def test_a_round_at_its_share_starts_them_all(stack: Any, starts: Any) -> None:
    tick, started = starts
    waiting = _waiting(stack, SHARE)
    assert tick.start_due() == SHARE
    assert started == waiting
