"""Wakeups (M9) under load: the tick's cap is shared fairly among accounts, and a paused
account's wakeups are out of the tick's sight (neither claimable nor counted).

The backlog is seeded straight into the work table in batches (moto slows down with table
size, so hundreds of wakeups through the API would take minutes); the tick is the real
handler. Starting executions is recorded, not run: what is measured is which wakeups the
tick claims, not what their runs answer."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import boto3

from agentworks import limits, runtime
from agentworks.conversations.crew_inbox_store import CrewInboxStore
from agentworks.conversations.delivery_items import conversation_pk
from agentworks.conversations.wakeup_queue_store import marker_touch
from agentworks.conversations.wakeup_store import Wakeup, _wakeup_item
from agentworks.dynamo import from_item, to_item
from agentworks.ids import new_ulid
from tests.support.handlers import LambdaContext, load_handler

ACCOUNT_A = "acc_busy"
ACCOUNT_B = "acc_quiet"


class _RecordingStepFunctions:
    """StartExecution accepted and recorded, never run (every other call goes through)."""

    def __init__(self) -> None:
        self._real = boto3.client("stepfunctions", region_name="us-east-1")
        self.started: list[str] = []

    def start_execution(self, **request: Any) -> Any:
        self.started.append(request["name"])
        return {"executionArn": f"{request['stateMachineArn']}:{request['name']}"}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def _wakeup(stack: Any, account_id: str, conversation: str, due_at: int) -> Wakeup:
    wake = new_ulid(stack.clock)
    now = int(stack.clock.now() * 1000)
    return Wakeup(
        wakeup_id=f"wku_{conversation}{wake}",
        conversation=conversation,
        wake=wake,
        account_id=account_id,
        crew_id="crw_seeded",
        crew_name="contracts",
        inbox_id=f"inb_{conversation}a",
        crew_inbox_id=f"inb_{conversation}b",
        agent_name=None,
        connection_id="con_seeded",
        due_at=due_at,
        state="scheduled",
        created_at=now,
        updated_at=now,
    )


def _seed(stack: Any, account_id: str, count: int, due_at: int) -> list[Wakeup]:
    """`count` scheduled wakeups of one account (in one conversation, so that their states
    read back in a few queries), written as CrewInboxStore.put_wakeup writes them (the item
    and the account's marker), in batches."""
    table = stack.settings.work_table
    conversation = new_ulid(stack.clock)
    wakeups = [_wakeup(stack, account_id, conversation, due_at) for _ in range(count)]
    for i in range(0, count, 25):
        stack.client.batch_write_item(
            RequestItems={
                table: [
                    {"PutRequest": {"Item": to_item(_wakeup_item(w))}} for w in wakeups[i : i + 25]
                ]
            }
        )
    stack.client.update_item(**marker_touch(table, account_id, wakeups[0].created_at)["Update"])
    return wakeups


def _tick() -> dict[str, int]:
    return load_handler("tick").handler({"source": "aws.events"}, LambdaContext())


def _store(stack: Any) -> CrewInboxStore:
    return CrewInboxStore(stack.client, stack.settings.work_table)


def _states(stack: Any, wakeups: list[Wakeup]) -> list[str]:
    """The current state of each of `wakeups` (all of one conversation)."""
    [conversation] = {w.conversation for w in wakeups}
    query: dict[str, Any] = {
        "TableName": stack.settings.work_table,
        "KeyConditionExpression": "pk = :pk AND begins_with(sk, :wake)",
        "ExpressionAttributeValues": to_item(
            {":pk": conversation_pk(conversation), ":wake": "WAKE#"}
        ),
        "ConsistentRead": True,
    }
    states: dict[str, str] = {}
    while True:
        page = stack.client.query(**query)
        for raw in page["Items"]:
            data = from_item(raw) or {}
            states[data["sk"].removeprefix("WAKE#")] = data["state"]
        if "LastEvaluatedKey" not in page:
            return [states.get(w.wake, "gone") for w in wakeups]
        query["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _install_recording(stack: Any) -> _RecordingStepFunctions:
    sfn = _RecordingStepFunctions()
    crews = runtime.build_crews(
        stack.settings,
        stack.client,
        stack.clock,
        s3=boto3.client("s3", region_name="us-east-1"),
        stepfunctions=sfn,
        messaging=stack.services.messaging,
    )
    runtime.install(replace(stack.services, crews=crews))
    return sfn


def test_m9_one_accounts_backlog_does_not_hold_up_another_account(stack):
    now_ms = int(stack.clock.now() * 1000)
    busy = _seed(stack, ACCOUNT_A, limits.WAKEUPS_PER_TICK + 100, now_ms + 60_000)
    stack.clock.advance(61)
    [quiet] = _seed(stack, ACCOUNT_B, 1, int(stack.clock.now() * 1000))  # the newest
    sfn = _install_recording(stack)
    try:
        first = _tick()
        assert first["wakeups_fired"] == limits.WAKEUPS_PER_TICK  # the cap holds
        assert _states(stack, [quiet]) == ["fired"]  # B's is not behind A's backlog
        assert _states(stack, busy).count("fired") == limits.WAKEUPS_PER_TICK - 1
        second = _tick()
        assert second["wakeups_fired"] == 101  # the rest of A's backlog, once each
        assert set(_states(stack, busy)) == {"fired"}
        assert len(sfn.started) == len(set(sfn.started)) == len(busy) + 1
    finally:
        runtime.install(stack.services)


def test_m9_a_paused_accounts_wakeups_are_not_claimable_and_hold_up_nobody(stack):
    now_ms = int(stack.clock.now() * 1000)
    _store(stack).queue.set_paused(ACCOUNT_A, True, "con_admin", now_ms)
    paused = _seed(stack, ACCOUNT_A, limits.WAKEUPS_PER_TICK, now_ms + 60_000)
    stack.clock.advance(61)
    [quiet] = _seed(stack, ACCOUNT_B, 1, int(stack.clock.now() * 1000))
    _install_recording(stack)
    try:
        assert _tick()["wakeups_fired"] == 1
        assert _states(stack, [quiet]) == ["fired"]
        assert set(_states(stack, paused)) == {"scheduled"}  # held, not claimed
        stack.clock.advance(60)
        assert _tick()["wakeups_fired"] == 0  # still paused: nothing claimable
        resumed_at = int(stack.clock.now() * 1000)
        _store(stack).queue.set_paused(ACCOUNT_A, False, "con_admin", resumed_at)
        assert _tick()["wakeups_fired"] == limits.WAKEUPS_PER_TICK
        assert set(_states(stack, paused)) == {"fired"}
    finally:
        runtime.install(stack.services)


def test_m9_a_tick_serves_wakeup_accounts_per_tick_accounts_longest_waiting_first(
    stack, monkeypatch
):
    """One more account than a tick serves, each with one due wakeup: the tick fires the
    WAKEUP_ACCOUNTS_PER_TICK that waited longest, the next tick the one left.

    The bound is lowered to 20 for speed (201 accounts take ~7 s on moto): the tick reads
    `limits.WAKEUP_ACCOUNTS_PER_TICK` when it runs, so the rule under test is the same."""
    monkeypatch.setattr(limits, "WAKEUP_ACCOUNTS_PER_TICK", 20)
    seeded = []
    for n in range(limits.WAKEUP_ACCOUNTS_PER_TICK + 1):
        stack.clock.advance(0.001)
        seeded += _seed(stack, f"acc_{n:04d}", 1, int(stack.clock.now() * 1000))
    stack.clock.advance(limits.WAKEUP_INDEX_SETTLE_SECONDS + 1)
    _install_recording(stack)
    try:
        assert _tick()["wakeups_fired"] == limits.WAKEUP_ACCOUNTS_PER_TICK
        newest = seeded[-1]
        assert _states(stack, [newest]) == ["scheduled"]
        assert all(_states(stack, [w]) == ["fired"] for w in seeded[:3])
        assert _tick()["wakeups_fired"] == 1
        assert _states(stack, [newest]) == ["fired"]
    finally:
        runtime.install(stack.services)


def test_m9_a_tick_records_at_most_wakeup_stale_per_tick_stale_claims(stack, monkeypatch):
    """Claims a tick made but never recorded (it stopped) are recorded `interrupted`, at most
    WAKEUP_STALE_PER_TICK a tick, oldest first; the next tick records the rest.

    The bound is lowered to 10 for speed: the tick reads `limits.WAKEUP_STALE_PER_TICK` when
    it runs, so the rule under test is the same."""
    from agentworks.conversations.wakeup_queue_store import FIRING, due_key

    monkeypatch.setattr(limits, "WAKEUP_STALE_PER_TICK", 10)
    now = int(stack.clock.now() * 1000)
    claimed = _seed(stack, ACCOUNT_A, limits.WAKEUP_STALE_PER_TICK + 1, now)
    for n, w in enumerate(claimed):  # as a claim leaves it (wakeup_store.claim), oldest first
        stack.client.update_item(
            TableName=stack.settings.work_table,
            Key=to_item({"pk": conversation_pk(w.conversation), "sk": f"WAKE#{w.wake}"}),
            UpdateExpression="SET #state = :firing, wake_store = :store, wake_due = :claimed, "
            "run_id = :run",
            ExpressionAttributeNames={"#state": "state"},
            ExpressionAttributeValues=to_item(
                {
                    ":firing": "firing",
                    ":store": FIRING,
                    ":claimed": due_key(now + n, w.wakeup_id),
                    ":run": f"run_{n}",
                }
            ),
        )
    stack.clock.advance(limits.WAKEUP_FIRING_STALE_SECONDS + 1)
    assert _tick()["wakeups_interrupted"] == limits.WAKEUP_STALE_PER_TICK
    states = _states(stack, claimed)
    assert states[:-1] == ["interrupted"] * limits.WAKEUP_STALE_PER_TICK
    assert states[-1] == "firing"
    assert _tick()["wakeups_interrupted"] == 1
    assert set(_states(stack, claimed)) == {"interrupted"}
