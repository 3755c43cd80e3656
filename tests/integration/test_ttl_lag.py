"""TTL lag (M2, F4, M11): DynamoDB deletes expired items up to ~48 h after their TTL, so an
expired item can still be read and can still fail `attribute_not_exists`. moto never deletes
anything, and the test clock moves past the TTLs, so every expired item here is held exactly
as AWS would hold it; each test shows the code treating it as absent.

The local stack's sweeper takes the same lag (AGENTWORKS_DEV_TTL_LAG_SECONDS).
"""

from __future__ import annotations

import copy
from typing import Any

from agentworks import limits
from agentworks.crews.call_store import CallStore, binding_key
from agentworks.dynamo import from_item, to_item
from agentworks.messaging import keys
from agentworks_local.scheduler import TtlSweeper, ttl_tables
from tests.integration.crew_support import CONTRACTS, wait_for
from tests.integration.test_write_faults import items

TERMINAL = {"succeeded", "failed", "interrupted", "cancelled"}
AWS_TTL_LAG_SECONDS = 48 * 3600


def _held(stack: Any, table: str, key: dict[str, str]) -> dict[str, Any]:
    """The item is still stored, and its TTL has passed (by the test's clock)."""
    data = from_item(stack.client.get_item(TableName=table, Key=to_item(key)).get("Item"))
    assert data is not None, key
    assert int(data[keys.TTL_ATTRIBUTE]) <= stack.clock.now()
    return data


def test_the_local_sweeper_holds_expired_items_for_its_lag(stack):
    table = stack.settings.work_table
    now = int(stack.clock.now())
    for name, expired_ago in (("recent", 3600), ("old", AWS_TTL_LAG_SECONDS + 3600)):
        stack.client.put_item(
            TableName=table,
            Item=to_item({"pk": f"T#{name}", "sk": "X", "expires_ttl": now - expired_ago}),
        )
    tables = [t for t in ttl_tables(stack.resources) if t.name == table]
    lagging = TtlSweeper(stack.client, tables, stack.clock.now, AWS_TTL_LAG_SECONDS)
    assert lagging.sweep_once() == 1
    assert [i["pk"] for i in items(stack, table, pk="T#")] == ["T#recent"]
    assert TtlSweeper(stack.client, tables, stack.clock.now).sweep_once() == 1
    assert items(stack, table, pk="T#") == []


def _first_contact(api: Any, token: str, **extra: Any) -> Any:
    return api(
        "POST", "/v1/messages", token, {"target": "agent:reviewer", "message": "hi", **extra}
    )


def test_m2_a_submission_id_is_free_again_once_its_binding_expired(api, stack, agents):
    worker, reviewer = agents.named("worker"), agents.named("reviewer")
    first = _first_contact(api, worker, submission_id="daily-1")
    assert first.status == 201, first.body
    assert _first_contact(api, worker, submission_id="daily-1").body["replayed"] is True
    stack.clock.advance(limits.SUBMISSION_BINDING_SECONDS + 1)
    (binding,) = items(stack, stack.settings.messages_table, pk="SUB#")
    _held(stack, stack.settings.messages_table, {"pk": binding["pk"], "sk": binding["sk"]})
    again = _first_contact(api, worker, submission_id="daily-1")
    # A new send, not a replay of a message that is itself gone.
    assert again.status == 201 and not again.body.get("replayed"), again.body
    assert again.body["conversation_id"] != first.body["conversation_id"]
    mailbox = api("GET", "/v1/messages", reviewer, query={"agent_name": "reviewer"}).body
    # The expired mailbox entry (also still stored) is not shown.
    assert [m["body"] for m in mailbox["messages"]] == ["hi"]
    assert _first_contact(api, worker, submission_id="daily-1").body["replayed"] is True


def test_m2_an_expired_binding_for_other_content_does_not_conflict(api, stack, agents):
    """A binding for different content would refuse the id (409) while live; expired, it
    is no binding — neither a conflict nor a replay."""
    worker = agents.named("worker")
    agents.named("reviewer")
    first = _first_contact(api, worker, submission_id="job")
    assert first.status == 201
    stack.clock.advance(limits.SUBMISSION_BINDING_SECONDS + 1)
    other = api(
        "POST",
        "/v1/messages",
        worker,
        {"target": "agent:reviewer", "message": "new content", "submission_id": "job"},
    )
    assert other.status == 201 and not other.body.get("replayed"), other.body


def _crew(api: Any, stack: Any) -> None:
    reply = api("POST", "/v1/crews", stack.admin_token, copy.deepcopy(CONTRACTS))
    assert reply.status == 201, reply.body


def _call(api: Any, token: str, text: str, submission_id: str) -> Any:
    body = {
        "target": "crew:contracts",
        "function": "summarize",
        "args": {"text": text},
        "submission_id": submission_id,
    }
    return api("POST", "/v1/calls", token, body)


def test_f4_an_expired_call_binding_admits_a_new_call(api, stack, agents):
    _crew(api, stack)
    caller = agents.connection("caller")["token"]
    first = _call(api, caller, "a", "nightly")
    wait_for(api, caller, first.body["call_id"], TERMINAL)
    stack.clock.advance(limits.CALL_SUBMISSION_BINDING_SECONDS + 1)
    (binding,) = items(stack, stack.settings.work_table, pk="CALLSUB#")
    _held(stack, stack.settings.work_table, {"pk": binding["pk"], "sk": binding["sk"]})
    # Other arguments would conflict with a live binding; an expired one is absent.
    second = _call(api, caller, "b", "nightly")
    assert second.status == 202 and second.body["replayed"] is False, second.body
    assert second.body["call_id"] != first.body["call_id"]
    wait_for(api, caller, second.body["call_id"], TERMINAL)
    assert _call(api, caller, "b", "nightly").body["call_id"] == second.body["call_id"]


def test_f4_reading_an_expired_call_binding_finds_nothing(stack):
    calls = CallStore(stack.client, stack.settings.work_table)
    now_ms = int(stack.clock.now() * 1000)
    for submission_id, ttl in (("live", now_ms // 1000 + 60), ("gone", now_ms // 1000)):
        stack.client.put_item(
            TableName=stack.settings.work_table,
            Item=to_item(
                {
                    **binding_key("acct", "conn", submission_id),
                    "call_id": f"call_{submission_id}",
                    "args_hash": "h",
                    "expires_ttl": ttl,
                }
            ),
        )
    assert calls.get_binding("acct", "conn", "live", now_ms) == ("call_live", "h")
    assert calls.get_binding("acct", "conn", "gone", now_ms) is None


def test_m9_a_wakeup_past_its_ttl_never_fires_and_reads_as_gone(api, stack, agents):
    """A wakeup held a week past its due time (here: its account paused all along) is past
    its TTL: the tick does not claim it even though DynamoDB still holds it, it leaves the
    due index, and cancelling it answers like an unknown wakeup."""
    from tests.integration.test_wakeups import conversation, schedule, tick

    caller = agents.connection("caller")["token"]
    sent = conversation(api, stack, caller)
    wakeup_id = schedule(api, caller, sent["inbox_id"], delay_seconds=120).body["wakeup_id"]
    assert api("POST", "/v1/scheduler", stack.admin_token, {"paused": True}).status == 200
    stack.clock.advance(120 + limits.WAKEUP_MAX_SECONDS + 1)
    assert api("POST", "/v1/scheduler", stack.admin_token, {"paused": False}).status == 200
    (wakeup,) = items(stack, stack.settings.work_table, sk="WAKE#")
    _held(stack, stack.settings.work_table, {"pk": wakeup["pk"], "sk": wakeup["sk"]})
    assert tick()["wakeups_fired"] == 0
    (wakeup,) = items(stack, stack.settings.work_table, sk="WAKE#")
    assert wakeup["state"] == "expired" and "wake_store" not in wakeup
    assert [c for c in items(stack, stack.settings.work_table, pk="CALL#")] == []
    unknown = api("DELETE", f"/v1/wakeups/{wakeup_id[:-4]}ZZZZ", caller)
    gone = api("DELETE", f"/v1/wakeups/{wakeup_id}", caller)
    assert (gone.status, gone.body) == (unknown.status, unknown.body) == (404, unknown.body)
