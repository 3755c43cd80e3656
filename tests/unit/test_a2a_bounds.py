"""The A2A bounds (issue 30), each at and past its limit: how long a SendMessage waits, the
ListTasks page, and the a2a adapter's settings, pauses, timeouts and cancel — against fakes
of the calls and of the agent's client, on a clock the test moves."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest
from a2a.server.context import ServerCallContext
from a2a.types.a2a_pb2 import (
    ListTasksRequest,
    Message,
    Role,
    SendMessageRequest,
    Task,
    TaskState,
    TaskStatus,
)
from a2a.utils.errors import InvalidParamsError

from agentworks import limits
from agentworks.a2a_server import handler as a2a_handler
from agentworks.a2a_server.handler import CREW, PRINCIPAL, CrewTasks
from agentworks.crews.adapters import a2a_agent
from agentworks.crews.adapters.a2a_agent import A2aAdapter, validate
from agentworks.crews.adapters.base import AdapterError, AwaitedTask, TurnRequest


class Clock:
    """time.monotonic and asyncio.sleep of the module under test: sleeping moves it."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.pauses: list[float] = []

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    for module in (a2a_handler, a2a_agent):
        monkeypatch.setattr(module, "time", SimpleNamespace(monotonic=fake.monotonic,
                                                            time_ns=lambda: 1))  # fmt: skip
        monkeypatch.setattr(module, "asyncio", SimpleNamespace(sleep=fake.sleep, run=asyncio.run))
    return fake


# -- the server side: SendMessage's wait and the ListTasks page --------------------------


def _status(state: str = "running") -> dict[str, Any]:
    return {
        "call_id": "call_1",
        "target": "crew:contracts",
        "function": "summarize",
        "state": state,
        "terminal": False,
        "pending_inputs": [],
        "errors": [],
        "turns": 1,
        "updated_at": "2026-12-04T00:00:00.000Z",
    }


class FakeCalls:
    def __init__(self) -> None:
        self.reads = 0
        self.listed: list[int] = []

    def call(self, principal: Any, request: Any) -> dict[str, Any]:
        return _status("accepted")

    def status(self, principal: Any, call_id: str) -> dict[str, Any]:
        self.reads += 1
        return _status()

    def recent_statuses(
        self, principal: Any, limit: int, crew: str, before: str | None
    ) -> tuple[list[dict[str, Any]], str | None]:
        self.listed.append(limit)
        return [_status()], None


def _handler(calls: FakeCalls) -> CrewTasks:
    crews = SimpleNamespace(calls=calls, requests=None, inbox=None)
    return CrewTasks(crews, messaging=None, push_configs=None)  # type: ignore[arg-type]


def _context() -> ServerCallContext:
    return ServerCallContext(state={PRINCIPAL: object(), CREW: "contracts"})


def _call_message() -> Message:
    from a2a.helpers.proto_helpers import new_data_part

    return Message(
        message_id="m1",
        role=Role.ROLE_USER,
        parts=[new_data_part({"function": "summarize", "args": {"text": "x"}})],
    )


def test_a_send_waits_for_its_task_at_most_the_send_wait(clock: Clock) -> None:
    calls = FakeCalls()
    task = asyncio.run(
        _handler(calls).on_message_send(SendMessageRequest(message=_call_message()), _context())
    )
    assert task.status.state == TaskState.TASK_STATE_WORKING  # as it stood when time was up
    assert sum(clock.pauses) <= limits.A2A_SEND_WAIT_SECONDS
    assert sum(clock.pauses) + clock.pauses[-1] * 2 > limits.A2A_SEND_WAIT_SECONDS - 2.0
    assert clock.pauses[:3] == [0.25, 0.5, 1.0] and max(clock.pauses) == 2.0
    assert calls.reads == len(clock.pauses)


def test_a_stream_is_a_long_poll_of_at_most_the_send_wait(clock: Clock) -> None:
    """SendStreamingMessage: the task as sent, then only changes; a task still working
    when A2A_SEND_WAIT_SECONDS are up ends the stream (the client subscribes again)."""
    calls = FakeCalls()

    async def stream() -> list[Any]:
        request = SendMessageRequest(message=_call_message())
        return [e async for e in _handler(calls).on_message_send_stream(request, _context())]

    events = asyncio.run(stream())
    states = [e.status.state for e in events]
    assert states == [TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING]
    assert sum(clock.pauses) <= limits.A2A_SEND_WAIT_SECONDS
    assert sum(clock.pauses) + clock.pauses[-1] * 2 > limits.A2A_SEND_WAIT_SECONDS - 2.0
    assert calls.reads == len(clock.pauses) > 2  # read each pause, sent only the change


def test_a_send_that_returns_at_once_reads_nothing_more(clock: Clock) -> None:
    calls = FakeCalls()
    request = SendMessageRequest(message=_call_message())
    request.configuration.return_immediately = True
    task = asyncio.run(_handler(calls).on_message_send(request, _context()))
    assert task.status.state == TaskState.TASK_STATE_SUBMITTED
    assert calls.reads == 0 and clock.pauses == []


def test_list_tasks_pages_by_default_and_up_to_the_calls_page() -> None:
    calls = FakeCalls()
    handler = _handler(calls)
    asyncio.run(handler.on_list_tasks(ListTasksRequest(), _context()))
    asyncio.run(
        handler.on_list_tasks(ListTasksRequest(page_size=limits.CALLS_PAGE_MAX), _context())
    )
    assert calls.listed == [limits.A2A_TASKS_PAGE_DEFAULT, limits.CALLS_PAGE_MAX]
    with pytest.raises(InvalidParamsError, match="pageSize must be 1–100"):
        asyncio.run(
            handler.on_list_tasks(ListTasksRequest(page_size=limits.CALLS_PAGE_MAX + 1), _context())
        )
    assert calls.listed == [limits.A2A_TASKS_PAGE_DEFAULT, limits.CALLS_PAGE_MAX]


# -- the a2a adapter ------------------------------------------------------------------------

SETTINGS = {"type": "a2a", "card_url": "https://agents.example.com"}


def test_the_adapters_timeout_is_bounded() -> None:
    top = limits.A2A_TURN_TIMEOUT_MAX_SECONDS
    assert validate({**SETTINGS, "timeout_seconds": top}) == []
    assert validate({**SETTINGS, "timeout_seconds": 1}) == []
    for wrong in (0, top + 1, 2.5, True):
        [problem] = validate({**SETTINGS, "timeout_seconds": wrong})
        assert f"'timeout_seconds' must be an integer from 1 to {top}" in problem
    [unknown] = validate({**SETTINGS, "cardUrl": "x"})
    assert unknown.startswith("a2a adapter: unknown setting 'cardUrl' (known: auth_secret, ")
    [refused] = validate({**SETTINGS, "card_url": "https://10.1.2.3/card.json"})
    assert "'card_url' is refused" in refused


class FakeAgent:
    """The a2a client of an agent whose task stays WORKING for `working` reads."""

    def __init__(self, working: int) -> None:
        self.working = working
        self.cancelled: list[str] = []

    async def get_task(self, request: Any) -> Task:
        self.working -= 1
        state = TaskState.TASK_STATE_WORKING if self.working > 0 else TaskState.TASK_STATE_COMPLETED
        return Task(id=request.id, status=TaskStatus(state=state))

    async def cancel_task(self, request: Any) -> Task:
        self.cancelled.append(request.id)
        return Task(id=request.id, status=TaskStatus(state=TaskState.TASK_STATE_CANCELED))


def _turn(**fields: Any) -> TurnRequest:
    return TurnRequest(crew_name="c", instructions="", settings=SETTINGS, kind="message",
                       prompt="hi", **fields)  # fmt: skip


def _adapter(clock: Clock, **settings: Any) -> A2aAdapter:
    platform = SimpleNamespace(now=clock.monotonic)  # the platform's clock, the same time
    return A2aAdapter({**SETTINGS, **settings}, lambda account, name: None, platform)  # type: ignore[arg-type]


def _follow(adapter: A2aAdapter, agent: FakeAgent, request: TurnRequest, clock: Clock) -> Any:
    working = Task(id="t1", status=TaskStatus(state=TaskState.TASK_STATE_WORKING))
    timeout = adapter._timeout
    deadline_ms = int((clock.now + timeout) * 1000)
    return asyncio.run(adapter._follow(agent, working, request, deadline_ms))


def test_a_turn_follows_the_task_with_pauses_doubling(clock: Clock) -> None:
    agent = FakeAgent(working=3)
    result = _follow(_adapter(clock), agent, _turn(), clock)
    assert "TASK_STATE_COMPLETED" in result.progress[0]
    first = limits.A2A_POLL_FIRST_SECONDS
    assert clock.pauses == [first, first * 2, first * 4]
    assert agent.cancelled == [] and result.awaited_task is None


def test_the_pause_doubles_to_its_most(clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "A2A_TURN_FOLLOW_SECONDS", 60.0)
    _follow(_adapter(clock), FakeAgent(working=7), _turn(), clock)
    first, most = limits.A2A_POLL_FIRST_SECONDS, limits.A2A_POLL_MAX_SECONDS
    assert clock.pauses == [first, first * 2, first * 4, first * 8, most, most, most]


def test_a_task_working_past_the_turns_window_is_left_to_the_tick(clock: Clock) -> None:
    agent = FakeAgent(working=10_000)
    started = clock.now
    result = _follow(_adapter(clock), agent, _turn(), clock)
    deadline = int((started + limits.A2A_TURN_TIMEOUT_DEFAULT_SECONDS) * 1000)
    assert result.awaited_task == AwaitedTask("t1", deadline)
    assert result.session_id == f"a2a-follow:{deadline}:t1"
    assert a2a_agent.followed_task(result.session_id) == (deadline, "t1")
    assert sum(clock.pauses) <= limits.A2A_TURN_FOLLOW_SECONDS < sum(clock.pauses) + 4
    assert agent.cancelled == [] and result.final_text is None and result.question is None


@pytest.mark.parametrize("timeout", [1, 3])
def test_a_task_still_working_at_its_time_is_cancelled(clock: Clock, timeout: int) -> None:
    agent = FakeAgent(working=10_000)
    with pytest.raises(AdapterError, match=f"did not finish within {timeout} s; it was cancelled"):
        _follow(_adapter(clock, timeout_seconds=timeout), agent, _turn(), clock)
    assert agent.cancelled == ["t1"]
    assert timeout - limits.A2A_POLL_MAX_SECONDS <= sum(clock.pauses) <= timeout


def test_a_followed_task_past_its_time_is_cancelled_at_once(clock: Clock) -> None:
    """The tick woke the turn at the deadline: the task is cancelled without a pause."""
    agent = FakeAgent(working=10_000)
    working = Task(id="t1", status=TaskStatus(state=TaskState.TASK_STATE_WORKING))
    past = int(clock.now * 1000) - 1
    with pytest.raises(AdapterError, match="did not finish within 600 s"):
        asyncio.run(_adapter(clock)._follow(agent, working, _turn(), past))
    assert agent.cancelled == ["t1"] and clock.pauses == []


def test_only_a_follow_session_names_a_followed_task() -> None:
    assert a2a_agent.followed_task("a2a-follow:1800000000000:task-9") == (1800000000000, "task-9")
    for other in (None, "", "a2a-task:task-9", "sess_01"):
        assert a2a_agent.followed_task(other) is None


def test_a_cancelled_run_cancels_the_task_at_the_next_read(clock: Clock) -> None:
    agent = FakeAgent(working=10_000)
    reads = iter([False, False, True])
    with pytest.raises(AdapterError, match="The run was cancelled; so was the A2A agent's task"):
        _follow(_adapter(clock), agent, _turn(cancelled=lambda: next(reads)), clock)
    assert agent.cancelled == ["t1"] and len(clock.pauses) == 2


def test_an_agent_that_does_not_answer_fails_the_turn_after_the_request_timeout(
    monkeypatch: pytest.MonkeyPatch, allow_loopback_webhooks: None
) -> None:
    """A card request nobody answers: the turn fails after A2A_REQUEST_TIMEOUT_SECONDS."""
    monkeypatch.setattr(limits, "A2A_REQUEST_TIMEOUT_SECONDS", 0.3)
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)
    held: list[socket.socket] = []
    threading.Thread(target=lambda: held.append(silent.accept()[0]), daemon=True).start()
    adapter = A2aAdapter(
        {"type": "a2a", "card_url": f"http://127.0.0.1:{silent.getsockname()[1]}"},
        secrets=lambda account, name: None,
    )
    started = time.monotonic()
    try:
        with pytest.raises(AdapterError, match="The A2A agent could not be reached"):
            adapter.run_turn(_turn())
        assert time.monotonic() - started < 5  # the bound, not httpx's or the turn's own
    finally:
        for connection in held:
            connection.close()
        silent.close()


def test_the_ticks_read_of_an_agent_that_does_not_answer_ends_at_its_own_bound(
    monkeypatch: pytest.MonkeyPatch, allow_loopback_webhooks: None
) -> None:
    """A2A_TICK_REQUEST_TIMEOUT_SECONDS, not the turn's A2A_REQUEST_TIMEOUT_SECONDS: one
    silent agent cannot hold the tick's round over every other wait."""
    monkeypatch.setattr(limits, "A2A_TICK_REQUEST_TIMEOUT_SECONDS", 0.3)
    monkeypatch.setattr(limits, "A2A_REQUEST_TIMEOUT_SECONDS", 60.0)
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)
    held: list[socket.socket] = []
    threading.Thread(target=lambda: held.append(silent.accept()[0]), daemon=True).start()
    adapter = A2aAdapter(
        {"type": "a2a", "card_url": f"http://127.0.0.1:{silent.getsockname()[1]}"},
        secrets=lambda account, name: None,
    )
    started = time.monotonic()
    try:
        with pytest.raises(Exception, match="Network communication error fetching agent card"):
            adapter.task_working("acct", "task-1")
        assert 0.3 <= time.monotonic() - started < 5  # waited its bound, not the turn's
    finally:
        for connection in held:
            connection.close()
        silent.close()
