"""The A2A push notices' bounds (issue 30 §1), with the sender and the clock standing in:
each POST waits A2A_PUSH_TIMEOUT_SECONDS at most, a failed one is tried again after
A2A_PUSH_BACKOFF_SECONDS (A2A_PUSH_ATTEMPTS in all), and a batch stops sending once
A2A_PUSH_BATCH_SECONDS are spent. tests/integration/test_a2a_push_notices.py sends for real."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from agentworks import limits
from agentworks.a2a_server.push_notices import A2aNotices
from agentworks.crews.models import CallRecord
from agentworks.outbound.sending import REFUSED_ADDRESS, Outcome
from agentworks.push.a2a_config_store import PushConfig
from tests.support.clock import FakeClock
from tests.support.metrics import counted_metrics


def _call(call_id: str) -> CallRecord:
    return CallRecord(call_id=call_id, account_id="acct_push", crew_name="contracts",
                      crew_id="crew_1", function="summarize", args={}, caller_connection_id="c",
                      state="succeeded", created_at=1, updated_at=1)  # fmt: skip


class Configs:
    def __init__(self, per_call: int = 1, none_for: frozenset[str] | set[str] = frozenset()):
        self.per_call, self.none_for = per_call, none_for
        self.reads: list[tuple[str, bool]] = []

    def of_call(self, call_id: str, consistent: bool = True) -> list[PushConfig]:
        self.reads.append((call_id, consistent))
        if call_id in self.none_for:
            return []
        return [
            PushConfig(call_id, f"cfg{i}", "acct_push", f"https://hooks.example.com/{i}")
            for i in range(self.per_call)
        ]


class Receiver:
    """Answers each POST with the next status (None: the connection failed), taking
    `takes` seconds of the clock."""

    def __init__(self, clock: FakeClock, statuses: list[int | None], takes: float = 0.0) -> None:
        self.clock, self.statuses, self.takes = clock, statuses, takes
        self.posts: list[tuple[str, float]] = []  # (url, timeout)
        self.headers: list[dict[str, str]] = []
        self.at: list[float] = []

    def __call__(self, url: str, body: bytes, headers: dict[str, str], timeout: float) -> Outcome:
        self.posts.append((url, timeout))
        self.headers.append(headers)
        self.at.append(self.clock.now())
        self.clock.advance(self.takes)
        status = self.statuses.pop(0) if self.statuses else 200
        return Outcome(status=status) if status else Outcome(failure="connection failed")


class Refusing:
    """An address the outbound rules refuse: final, never worth another attempt."""

    def __init__(self) -> None:
        self.posts: list[str] = []

    def __call__(self, url: str, body: bytes, headers: dict[str, str], timeout: float) -> Outcome:
        self.posts.append(url)
        return Outcome(failure=REFUSED_ADDRESS)


class Raising:
    """Raises on its first `times` POSTs, then hands them to the receiver."""

    def __init__(self, receiver: Receiver, times: int) -> None:
        self.receiver, self.times, self.raised = receiver, times, 0

    def __call__(self, url: str, body: bytes, headers: dict[str, str], timeout: float) -> Outcome:
        if self.raised < self.times:
            self.raised += 1
            raise OSError("the sender broke")
        return self.receiver(url, body, headers, timeout)


def _keys_failing_for(account: str) -> Any:
    def keys(account_id: str) -> list[str]:
        if account_id == account:
            raise RuntimeError("no key")
        return ["k" * 32]

    return keys


def _notices(clock: FakeClock, receiver: Receiver, configs: Configs | None = None) -> A2aNotices:
    return A2aNotices(configs or Configs(), lambda account: ["k" * 32], clock, receiver)  # type: ignore[arg-type]


def test_each_post_waits_at_most_its_timeout() -> None:
    clock = FakeClock()
    receiver = Receiver(clock, [200])
    assert _notices(clock, receiver).notify([_call("call_1")]) == 1
    assert receiver.posts == [("https://hooks.example.com/0", limits.A2A_PUSH_TIMEOUT_SECONDS)]


def test_a_failed_post_is_tried_again_after_the_backoff_and_no_more() -> None:
    clock = FakeClock()
    receiver = Receiver(clock, [None, 503, 200])  # the third would succeed: never asked
    assert _notices(clock, receiver).notify([_call("call_1")]) == 0
    assert len(receiver.posts) == limits.A2A_PUSH_ATTEMPTS == 2
    assert receiver.at[1] - receiver.at[0] == limits.A2A_PUSH_BACKOFF_SECONDS
    retried = Receiver(clock, [None, 200])
    assert _notices(clock, retried).notify([_call("call_2")]) == 1  # the second attempt counts


def test_a_batch_stops_sending_once_its_time_is_spent() -> None:
    """At the bound nothing more goes out; just before it, the POST still does."""
    clock = FakeClock()
    each = 4.0
    receiver = Receiver(clock, [], takes=each)
    calls = [_call(f"call_{i}") for i in range(10)]
    sent = _notices(clock, receiver).notify(calls)
    fits = int(limits.A2A_PUSH_BATCH_SECONDS // each)  # started before the bound
    assert sent == len(receiver.posts) == fits
    start = receiver.at[0]
    assert receiver.at[-1] < start + limits.A2A_PUSH_BATCH_SECONDS <= receiver.at[-1] + each


def test_the_pause_doubles_between_attempts_and_none_follows_the_last(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With three attempts (the bound is read at each send): pauses of one and two
    backoffs, and the batch's clock stops at the last answer."""
    monkeypatch.setattr(limits, "A2A_PUSH_ATTEMPTS", 3)
    clock = FakeClock()
    receiver = Receiver(clock, [503, 503, 503, 200])
    assert _notices(clock, receiver).notify([_call("call_1")]) == 0
    backoff = limits.A2A_PUSH_BACKOFF_SECONDS
    assert [b - a for a, b in itertools.pairwise(receiver.at)] == [backoff, 2 * backoff]
    assert clock.now() == receiver.at[-1]


def test_a_refused_address_is_not_tried_again() -> None:
    clock = FakeClock()
    refusing = Refusing()
    assert _notices(clock, refusing).notify([_call("call_1")]) == 0  # type: ignore[arg-type]
    assert len(refusing.posts) == 1


def test_a_sender_that_raises_fails_that_config_only() -> None:
    clock = FakeClock()
    receiver = Receiver(clock, [])
    raising = Raising(receiver, times=1)
    notices = _notices(clock, raising, Configs(per_call=2))  # type: ignore[arg-type]
    assert notices.notify([_call("call_1")]) == 1  # the second config's POST went out
    assert raising.raised == 1 and len(receiver.posts) == 1


def test_each_post_is_signed_at_the_clocks_time() -> None:
    clock = FakeClock(start=1_800_000_123.75)
    receiver = Receiver(clock, [])
    _notices(clock, receiver).notify([_call("call_1")])
    assert receiver.headers[0]["X-AgentWorks-Signature"].startswith("t=1800000123,v1=")


def test_sent_and_failed_are_counted_once_a_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """One POST answered, one failing at every attempt, one call whose notification could
    not be prepared and one with no configs: the batch goes on past each and counts 1 sent,
    2 failed."""
    counted = counted_metrics(monkeypatch)
    clock = FakeClock()
    statuses: list[int | None] = [200, *[400] * limits.A2A_PUSH_ATTEMPTS]
    receiver = Receiver(clock, statuses)
    configs = Configs(per_call=1, none_for={"call_quiet"})
    notices = A2aNotices(configs, _keys_failing_for("acct_broken"), clock, receiver)  # type: ignore[arg-type]
    broken = _call("call_broken")
    broken.account_id = "acct_broken"
    sent = notices.notify([_call("call_quiet"), broken, _call("call_1"), _call("call_2")])
    assert sent == 1
    # call_1's and call_2's: the batch went past the others
    assert len(receiver.posts) == 1 + limits.A2A_PUSH_ATTEMPTS
    assert (counted["A2aPushSent"], counted["A2aPushFailed"]) == (1, 2)


def test_a_batch_out_of_time_counts_what_it_did_not_send(monkeypatch: pytest.MonkeyPatch) -> None:
    counted = counted_metrics(monkeypatch)
    clock = FakeClock()
    receiver = Receiver(clock, [], takes=limits.A2A_PUSH_BATCH_SECONDS)
    notices = _notices(clock, receiver, Configs(per_call=3))
    assert notices.notify([_call("call_1")]) == 1
    assert (counted["A2aPushSent"], counted["A2aPushFailed"]) == (1, 2)


def test_configs_are_read_once_a_call_and_without_a_consistent_read() -> None:
    """The notifier follows the stream, written well before: an eventually consistent
    read (half the cost) is enough, once per call in a batch."""
    clock = FakeClock()
    configs = Configs(per_call=1)
    _notices(clock, Receiver(clock, []), configs).notify([_call("call_1"), _call("call_1")])
    assert configs.reads == [("call_1", False)]
