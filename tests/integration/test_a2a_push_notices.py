"""A2A push notifications from the notifier (issue 30 §1), through the work table's real
stream records and the real outbound sending to local receivers: a call's state change
reaches each of its configs (a failing receiver costs its own attempts and nothing else),
a write that changes no state sends and reads nothing, a Crew's run for a message is no
task, and the outbound rules are applied at send time, not only when the config was saved.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from a2a.types.a2a_pb2 import StreamResponse, TaskState
from google.protobuf.json_format import Parse

from agentworks import limits
from agentworks.a2a_server.push_notices import changed_calls
from agentworks.crews.call_store import CallStore
from agentworks.crews.models import CallRecord
from agentworks.outbound.urls import ALLOW_LOOPBACK_ENV
from agentworks.push.a2a_config_store import A2aPushConfigStore, PushConfig
from tests.integration.test_console_notices import WorkStream
from tests.support.webhook_receiver import Receiver, webhook_receiver

CALL_ID = "call_01PUSHNOTICES0000000000000"


@pytest.fixture
def receivers() -> Iterator[tuple[Receiver, Receiver]]:
    with webhook_receiver() as first, webhook_receiver() as second:
        yield first, second


def _call(stack: Any, kind: str = "function", call_id: str = CALL_ID) -> tuple[CallRecord, int]:
    record = CallRecord(
        call_id=call_id,
        account_id="acct_push",
        crew_name="contracts",
        crew_id="crew_1",
        function="summarize" if kind == "function" else "",
        args={"text": "t"},
        caller_connection_id="conn_1",
        state="input_required",
        created_at=1_700_000_000_000,
        updated_at=1_700_000_000_000,
        kind=kind,
    )
    CallStore(stack.client, stack.settings.work_table).put_new(record)
    return record, 1


def _configs(stack: Any) -> A2aPushConfigStore:
    return A2aPushConfigStore(stack.client, stack.settings.work_table)


def _config(call: CallRecord, config_id: str, url: str, **fields: Any) -> PushConfig:
    return PushConfig(call.call_id, config_id, call.account_id, url, **fields)


def _tasks(receiver: Receiver) -> list[Any]:
    return [Parse(got.body.decode(), StreamResponse()).task for got in receiver.received]


def test_a_state_change_reaches_each_config_and_a_failing_one_fails_nothing_else(
    stack: Any, receivers: tuple[Receiver, Receiver], allow_loopback_webhooks: None
) -> None:
    good, broken = receivers
    broken.failing = True
    work = WorkStream(stack)
    calls = CallStore(stack.client, stack.settings.work_table)
    call, version = _call(stack)
    _configs(stack).put(_config(call, "good", good.url, token="t-1"))
    _configs(stack).put(_config(call, "broken", broken.url))
    call.state = "running"
    version = calls.save(call, version)
    call.state, call.result, call.has_result, call.turns = "succeeded", {"summary": "s"}, True, 1
    calls.save(call, version)

    answer = work.deliver()
    assert answer["a2a_pushed"] == 2  # the good receiver's two; the broken one's none
    states = [t.status.state for t in _tasks(good)]
    assert states == [TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_COMPLETED]
    assert all(t.id == CALL_ID for t in _tasks(good))
    assert good.received[0].header("X-A2A-Notification-Token") == "t-1"
    assert "Authorization" not in good.received[0].headers
    # Each change tried A2A_PUSH_ATTEMPTS times at the receiver that answers 500.
    assert len(broken.received) == 2 * limits.A2A_PUSH_ATTEMPTS


def test_a_write_that_changes_no_state_sends_and_reads_nothing(
    stack: Any, receivers: tuple[Receiver, Receiver], allow_loopback_webhooks: None
) -> None:
    good, _ = receivers
    work = WorkStream(stack)
    calls = CallStore(stack.client, stack.settings.work_table)
    call, version = _call(stack)
    _configs(stack).put(_config(call, "good", good.url))
    call.progress.append("still asking")
    calls.save(call, version)

    records = work.records()
    assert records and changed_calls(records) == []  # the call and its config were written
    queries: list[str] = []
    stack.client.meta.events.register(
        "before-call.dynamodb.Query", lambda params, **_: queries.append(str(params))
    )
    from tests.support.handlers import LambdaContext, load_handler

    answer = load_handler("notifier").handler({"Records": records}, LambdaContext())
    assert "a2a_pushed" not in answer and good.received == []
    assert not [q for q in queries if "PUSH#" in q]


def test_a_crews_run_for_a_message_is_no_task(
    stack: Any, receivers: tuple[Receiver, Receiver], allow_loopback_webhooks: None
) -> None:
    good, _ = receivers
    work = WorkStream(stack)
    calls = CallStore(stack.client, stack.settings.work_table)
    call, version = _call(stack, kind="message", call_id="call_01PUSHMESSAGERUN000000000")
    _configs(stack).put(_config(call, "good", good.url))
    call.state = "running"
    calls.save(call, version)

    assert changed_calls(work.records()) == []


def test_the_outbound_rules_apply_at_send_time(
    stack: Any, receivers: tuple[Receiver, Receiver], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A config's host that was public when it was saved and now resolves to a refused
    address (DNS rebinding) is refused when sent: here a loopback receiver, stored as the
    check on save would have let a public one through, and no loopback option."""
    good, _ = receivers
    monkeypatch.delenv(ALLOW_LOOPBACK_ENV, raising=False)
    work = WorkStream(stack)
    calls = CallStore(stack.client, stack.settings.work_table)
    call, version = _call(stack)
    _configs(stack).put(_config(call, "rebound", good.url))
    call.state = "running"
    calls.save(call, version)

    answer = work.deliver()
    assert answer["a2a_pushed"] == 0 and good.received == []
