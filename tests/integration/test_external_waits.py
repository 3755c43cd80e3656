"""The tick's round over waits on external agents' tasks (issue 30 §2), on the real wait
store (moto's DynamoDB): what it does when the agent is unreachable, when the wait's call
or run ended, when the token is closed, when the step wrote the wait again meanwhile, and
when the tick runs out of time. The agent is a stand-in here; tests/integration/
test_a2a_adapter.py drives a real A2A agent through the same round."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from typing import Any

import pytest
from botocore.exceptions import ClientError

from agentworks import limits
from agentworks.crews.execution import Executions
from agentworks.external_tasks.following import TaskFollower
from agentworks.external_tasks.wait_store import ExternalWait, ExternalWaitStore, StaleWait
from agentworks.external_tasks.waits import ExternalWaits

ACCOUNT = "acct_01JZZZZZZZZZZZZZZZZZZZZZZZ"


class Agent:
    """What the round asks of an agent: whether a task works, and to cancel it."""

    def __init__(self, working: bool = True, fails: bool = False) -> None:
        self.working, self.fails = working, fails
        self.reads: list[str] = []
        self.cancelled: list[str] = []
        self.watched: list[tuple[str, str]] = []

    def task_working(self, account_id: str, task_id: str) -> bool:
        self.reads.append(task_id)
        if self.fails:
            raise ConnectionError("the agent is unreachable")
        return self.working

    def cancel_task(self, account_id: str, task_id: str) -> None:
        if self.fails:
            raise ConnectionError("the agent is unreachable")
        self.cancelled.append(task_id)

    def watch_task(self, account_id: str, task_id: str, url: str, token: str) -> bool:
        if self.fails:
            raise ConnectionError("the agent is unreachable")
        self.watched.append((url, token))
        return True


class Round:
    def __init__(self, stack: Any, clock: Any, agent: Agent) -> None:
        self.store = ExternalWaitStore(stack.client, stack.settings.work_table)
        self.clock, self.agent = clock, agent
        self.resumed: list[str] = []
        self.closed: set[str] = set()  # tokens Step Functions no longer waits on
        self.ended: set[str] = set()  # owners whose call or run ended

    def send_task_success(self, taskToken: str, output: str) -> None:
        """Step Functions as the wiring's Executions reaches it."""
        if taskToken in self.closed:
            raise ClientError({"Error": {"Code": "TaskTimedOut"}}, "SendTaskSuccess")
        if taskToken == "broken":
            raise ClientError({"Error": {"Code": "ServiceUnavailable"}}, "SendTaskSuccess")
        assert json.loads(output) == {}  # the next turn reads the outcome: the token has none
        self.resumed.append(taskToken)

    def follower(self) -> TaskFollower:
        resume = Executions("", client=self).resume_if_waiting  # as runtime wires it
        return TaskFollower(
            self.store, lambda s: self.agent, resume, self.ended.__contains__, self.clock
        )

    def wait(self, owner: str = "call:c1", token: str = "t1", timeout_s: int = 3600) -> None:
        deadline = int(self.clock.now() * 1000) + timeout_s * 1000
        waits = ExternalWaits(self.store, lambda s: self.agent, lambda: "", self.clock)
        waits.begin(ACCOUNT, owner, {"type": "a2a"}, "task-1", deadline, token)

    def get(self, owner: str = "call:c1") -> ExternalWait | None:
        found = self.store.get(ACCOUNT, owner)
        return found[0] if found else None


@pytest.fixture
def round_(stack: Any, clock: Any) -> Round:
    return Round(stack, clock, Agent())


def test_the_pause_doubles_to_its_most_and_never_past_the_deadline(round_: Round) -> None:
    round_.wait(timeout_s=3000)
    pauses = []
    while (wait := round_.get()) is not None and not round_.resumed:
        round_.clock.t = wait.due_ms / 1000
        round_.follower().follow_due()
        if (after := round_.get()) is not None:
            pauses.append((after.due_ms - wait.due_ms) // 1000)
    first, most = limits.A2A_WAIT_POLL_FIRST_SECONDS, limits.A2A_WAIT_POLL_MAX_SECONDS
    assert pauses[:5] == [first, first * 2, first * 4, first * 8, first * 16]
    assert max(pauses) == most
    assert round_.resumed == ["t1"] and round_.get() is None  # at the deadline: resumed
    assert sum(pauses) + first == 3000  # the last pause ends at the deadline


def test_an_unreachable_agent_is_read_again_until_the_deadline(round_: Round) -> None:
    round_.agent.fails = True
    round_.wait(timeout_s=60)
    round_.clock.advance(15)
    report = round_.follower().follow_due()
    assert report["external_tasks_read"] == 1 and round_.resumed == []
    assert round_.get() is not None
    round_.clock.advance(60)
    report = round_.follower().follow_due()
    assert report == {"external_tasks_read": 0, "external_waits_resumed": 1,
                      "external_tasks_cancelled": 0}  # fmt: skip
    assert round_.get() is None  # the turn decides: it cancels the task and fails


def test_an_ended_task_resumes_the_step_once(round_: Round) -> None:
    round_.agent.working = False
    round_.wait()
    assert round_.follower().follow_due()["external_tasks_read"] == 0  # not due yet
    round_.clock.advance(15)
    assert round_.follower().follow_due()["external_waits_resumed"] == 1
    assert round_.follower().follow_due()["external_waits_resumed"] == 0
    assert round_.resumed == ["t1"] and round_.get() is None


def test_a_closed_token_drops_the_wait_and_another_error_keeps_it(round_: Round) -> None:
    round_.agent.working = False
    round_.wait("call:closed", token="gone")
    round_.wait("call:broken", token="broken")
    round_.wait("call:fine", token="fine")
    round_.closed.add("gone")
    round_.clock.advance(15)
    report = round_.follower().follow_due()
    assert report["external_waits_resumed"] == 1 and round_.resumed == ["fine"]
    assert round_.get("call:closed") is None and round_.get("call:fine") is None
    assert round_.get("call:broken") is not None  # read again next round


def test_a_wait_whose_call_ended_cancels_its_task_even_if_the_agent_is_gone(
    round_: Round,
) -> None:
    round_.wait("call:ok")
    round_.wait("step:run_1:0.0.0", token="t2")
    round_.ended.update({"call:ok", "step:run_1:0.0.0"})
    round_.clock.advance(15)
    assert round_.follower().follow_due()["external_tasks_cancelled"] == 2
    assert round_.agent.cancelled == ["task-1", "task-1"] and round_.agent.reads == []
    round_.wait("call:late", token="t3")
    round_.ended.add("call:late")
    round_.agent.fails = True
    round_.clock.advance(15)
    assert round_.follower().follow_due()["external_tasks_cancelled"] == 0
    assert round_.get("call:late") is None and round_.resumed == []


def test_a_wait_written_again_after_the_tick_read_it_is_kept(round_: Round) -> None:
    round_.wait(token="old")
    found = round_.store.get(ACCOUNT, "call:c1")
    assert found is not None
    old, version = found
    round_.wait(token="new")  # the step's next turn waits again, with a new token
    with pytest.raises(StaleWait):
        round_.store.delete(old, version)
    with pytest.raises(StaleWait):
        round_.store.reschedule(replace(old, due_ms=old.due_ms + 1), version)
    kept = round_.get()
    assert kept is not None and kept.task_token == "new"


def test_the_round_stops_while_the_tick_has_too_little_time(round_: Round) -> None:
    round_.agent.working = False
    round_.wait()
    round_.clock.advance(15)
    report = round_.follower().follow_due(lambda: limits.A2A_TICK_RESERVE_SECONDS - 0.001)
    assert report["external_tasks_read"] == 0 and round_.get() is not None
    at_reserve = round_.follower().follow_due(lambda: limits.A2A_TICK_RESERVE_SECONDS)
    assert at_reserve["external_waits_resumed"] == 1


def test_one_round_reads_at_most_its_share_of_waits(
    round_: Round, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A2A_WAITS_PER_TICK: at the bound every due wait is read; past it, the rest wait for
    the next round."""
    monkeypatch.setattr(limits, "A2A_WAITS_PER_TICK", 2)
    round_.wait("call:a")
    round_.wait("call:b")
    round_.clock.advance(15)
    assert round_.follower().follow_due()["external_tasks_read"] == 2
    round_.wait("call:c")
    round_.clock.advance(30)  # a and b are due again, and c is due
    assert round_.follower().follow_due()["external_tasks_read"] == 2
    assert round_.follower().follow_due()["external_tasks_read"] == 1
    assert sorted(round_.agent.reads) == ["task-1"] * 5


def test_a_wait_asks_the_agent_to_call_back_and_is_kept_when_it_cannot(round_: Round) -> None:
    waits = ExternalWaits(round_.store, lambda s: round_.agent, lambda: "https://api.example.com",
                          round_.clock)  # fmt: skip
    deadline = int(round_.clock.now() * 1000) + 60_000
    wait = waits.begin(ACCOUNT, "step:run_1:0.1.2", {"type": "a2a"}, "task-1", deadline, "t1")
    quoted = "https://api.example.com/a2a-callbacks/" + ACCOUNT + "/step%3Arun_1%3A0.1.2"
    assert round_.agent.watched == [(quoted, wait.watch_token)] and len(wait.watch_token) == 32
    round_.agent.fails = True
    again = waits.begin(ACCOUNT, "call:c2", {"type": "a2a"}, "task-2", deadline, "t2")
    assert round_.get("call:c2") == again  # the tick reads it regardless
    assert again.watch_token != wait.watch_token  # a fresh secret per wait


def test_a_notice_reads_the_task_at_once_only_with_the_waits_token(round_: Round) -> None:
    round_.agent.working = False
    round_.wait()
    wait = round_.get()
    assert wait is not None
    follower = round_.follower()
    assert not follower.follow_now(ACCOUNT, "call:c1", "wrong")
    assert not follower.follow_now(ACCOUNT, "call:nobody", wait.watch_token)
    assert round_.agent.reads == [] and round_.get() == wait
    assert follower.follow_now(ACCOUNT, "call:c1", wait.watch_token)  # before it is due
    assert round_.resumed == ["t1"] and round_.get() is None


def _raw(round_: Round, owner: str = "call:c1") -> dict[str, Any]:
    from agentworks.dynamo import from_item

    item = round_.store._db.get_item(
        TableName=round_.store._table,
        Key={"pk": {"S": f"EXTWAITS#{ACCOUNT}"}, "sk": {"S": f"WAIT#{owner}"}},
    )["Item"]
    return dict(from_item(item) or {})


def test_a_waits_item_keeps_its_version_and_expires_a_day_past_its_deadline(
    round_: Round,
) -> None:
    round_.wait(timeout_s=600)
    first = _raw(round_)
    wait = round_.get()
    assert wait is not None
    assert first["version"] == 1
    assert first["expires_ttl"] == wait.deadline_ms // 1000 + 24 * 3600
    round_.wait(timeout_s=600, token="t2")  # the step waits again: one version on
    assert _raw(round_)["version"] == 2
    found = round_.store.get(ACCOUNT, "call:c1")
    assert found is not None
    round_.store.reschedule(replace(found[0], due_ms=found[0].due_ms + 1), found[1])
    assert round_.store.get(ACCOUNT, "call:c1")[1] == 3  # type: ignore[index]


def test_one_round_resumes_every_ended_task_and_skips_a_wait_not_yet_due(round_: Round) -> None:
    """A wait the index shows due but whose record says later (the index lags its table)
    is skipped, and the round goes on to the others."""
    round_.agent.working = False
    round_.wait("call:a", token="ta")
    round_.wait("call:b", token="tb")
    round_.wait("call:c", token="tc")
    round_.clock.advance(15)
    later = round_.get("call:a")
    assert later is not None
    record = json.dumps({**asdict(later), "due_ms": later.due_ms + 60_000})
    round_.store._db.update_item(  # the record moved on; its index entry not yet
        TableName=round_.store._table,
        Key={"pk": {"S": f"EXTWAITS#{ACCOUNT}"}, "sk": {"S": "WAIT#call:a"}},
        UpdateExpression="SET #r = :r",
        ExpressionAttributeNames={"#r": "record"},
        ExpressionAttributeValues={":r": {"S": record}},
    )
    report = round_.follower().follow_due()
    assert report["external_waits_resumed"] == 2 and sorted(round_.resumed) == ["tb", "tc"]
    assert round_.get("call:a") is not None


def test_a_wait_written_again_while_its_task_is_read_is_left_to_the_next_round(
    round_: Round,
) -> None:
    """The step's next turn waits again while the tick reads the old wait: the tick's write
    is refused (StaleWait), the new wait stays, and the round and a notice go on."""
    round_.wait("call:a", token="ta")
    round_.wait("call:b", token="tb")
    round_.clock.advance(15)
    agent = round_.agent
    reads = agent.task_working

    def rewritten(account_id: str, task_id: str) -> bool:
        if not agent.reads:  # the first wait read is written again meanwhile
            round_.wait("call:a", token="ta2")
        return reads(account_id, task_id)

    agent.task_working = rewritten  # type: ignore[method-assign]
    assert round_.follower().follow_due()["external_tasks_read"] == 2  # the round went on
    rewritten_a, rescheduled_b = round_.get("call:a"), round_.get("call:b")
    assert rewritten_a is not None and rewritten_a.task_token == "ta2"
    assert rescheduled_b is not None and rescheduled_b.pause_s == 30
    wait = round_.get("call:a")
    assert wait is not None
    round_.clock.advance(15)
    agent.reads.clear()

    def rewritten_once(account_id: str, task_id: str) -> bool:
        round_.wait("call:a", token="ta3")
        return reads(account_id, task_id)

    agent.task_working = rewritten_once  # type: ignore[method-assign]
    assert round_.follower().follow_now(ACCOUNT, "call:a", wait.watch_token)  # no raise
    assert round_.get("call:a").task_token == "ta3"  # type: ignore[union-attr]
