"""The A2A push notices' bounds (issue 30 §1), with the sender and the clock standing in:
each POST waits A2A_PUSH_TIMEOUT_SECONDS at most, a failed one is tried again after
A2A_PUSH_BACKOFF_SECONDS (A2A_PUSH_ATTEMPTS in all), and a batch stops sending once
A2A_PUSH_BATCH_SECONDS are spent. tests/integration/test_a2a_push_notices.py sends for real."""

from __future__ import annotations

from agentworks import limits
from agentworks.a2a_server.push_notices import A2aNotices
from agentworks.crews.models import CallRecord
from agentworks.outbound.sending import Outcome
from agentworks.push.a2a_config_store import PushConfig
from tests.support.clock import FakeClock


def _call(call_id: str) -> CallRecord:
    return CallRecord(call_id=call_id, account_id="acct_push", crew_name="contracts",
                      crew_id="crew_1", function="summarize", args={}, caller_connection_id="c",
                      state="succeeded", created_at=1, updated_at=1)  # fmt: skip


class Configs:
    def __init__(self, per_call: int = 1) -> None:
        self.per_call = per_call

    def of_call(self, call_id: str, consistent: bool = True) -> list[PushConfig]:
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
        self.at: list[float] = []

    def __call__(self, url: str, body: bytes, headers: dict[str, str], timeout: float) -> Outcome:
        self.posts.append((url, timeout))
        self.at.append(self.clock.now())
        self.clock.advance(self.takes)
        status = self.statuses.pop(0) if self.statuses else 200
        return Outcome(status=status) if status else Outcome(failure="connection failed")


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
