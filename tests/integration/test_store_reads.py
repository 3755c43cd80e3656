"""Reads as DynamoDB answers them, not as moto does: results that span pages (moto answers
below 1 MB in one), reads right after a write from a replica that has not seen it (moto is
always fresh), and items an earlier release wrote without today's attributes. Each store
below must read all of it, read its own writes, and fill what an old item lacks."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from agentworks import limits
from agentworks.dynamo import to_item
from agentworks.messaging.models import SubmissionBinding
from agentworks.messaging.submission_store import binding_from_item, binding_to_item
from agentworks.relays.records import Checkpoint, RelayRun
from agentworks.relays.run_store import RelayRunStore
from tests.support import faults, small_pages, stale_reads


@pytest.fixture
def relay_runs(stack) -> RelayRunStore:
    return RelayRunStore(stack.client, stack.settings.work_table)


def _run(run_id: str, key: str) -> RelayRun:
    return RelayRun(
        run_id=run_id,
        account_id="acct_reads",
        relay="tools",
        function="main",
        version=1,
        input_json="{}",
        idempotency_key=key,
        fingerprint="f",
        caller="conn_1",
        caller_connection_id="conn_1",
        created_at=1_000,
    )


def _step(name: str, started_at: int) -> Checkpoint:
    return Checkpoint(name=name, status="started", attempt=1, safe=False, started_at=started_at)


def test_a_relay_runs_steps_are_read_across_pages_in_start_order(stack, relay_runs) -> None:
    for name, at in (("c", 3_000), ("a", 1_000), ("b", 2_000), ("b2", 2_000)):
        relay_runs.start_step("run_pages", _step(name, at))
    pages = small_pages.install(stack.client)
    found = relay_runs.steps("run_pages")
    assert [c.name for c in found] == ["a", "b", "b2", "c"]
    assert pages.pages >= 4  # one item a page: the reader followed LastEvaluatedKey


def test_a_relay_run_reads_its_own_writes(stack, relay_runs) -> None:
    replica = stale_reads.install(stack.client, reads=("Query", "GetItem"))
    replica.missing()  # a replica that has not seen any of what follows
    assert relay_runs.create(_run("run_fresh", "key-fresh"))
    relay_runs.start_step("run_fresh", _step("fetch", 5_000))
    found = relay_runs.by_key("acct_reads", "tools", "conn_1", "key-fresh")
    assert found is not None and found.run_id == "run_fresh"
    assert relay_runs.step("run_fresh", "fetch") == _step("fetch", 5_000)
    assert relay_runs.steps("run_fresh") == [_step("fetch", 5_000)]
    assert replica.stale_answers == 0  # every read went to the store, strongly


def test_a_checkpoint_an_earlier_release_wrote_reads_with_defaults(stack, relay_runs) -> None:
    """Before `safe` and `replays` were kept: not safe to run again, never replayed."""
    old = {
        **{"pk": "RRUN#run_old", "sk": "STEP#fetch", "name": "fetch", "status": "completed"},
        **{"attempt": 1, "started_at": 5_000, "completed_at": 6_000, "result_json": "1"},
    }
    stack.client.put_item(TableName=stack.settings.work_table, Item=to_item(old))
    found = relay_runs.step("run_old", "fetch")
    assert found == Checkpoint("fetch", "completed", 1, False, 5_000, 6_000, "1", replays=0)


def test_a_relay_run_is_created_at_version_one_and_due_its_grace_after_its_last_write(
    relay_runs,
) -> None:
    """The reconciler asks about a run not yet terminal RECONCILE_GRACE_SECONDS after it
    was last written (created, then updated), and not a millisecond before."""
    grace_ms = limits.RECONCILE_GRACE_SECONDS * 1000
    run = _run("run_due", "key-due")
    assert relay_runs.create(run)
    assert relay_runs.get("run_due") == (run, 1)
    assert relay_runs.open_runs(1_000 + grace_ms - 1, 10) == []
    assert relay_runs.open_runs(1_000 + grace_ms, 10) == ["run_due"]
    assert relay_runs.replace(dataclasses.replace(run, updated_at=50_000), 1) == 2
    assert relay_runs.open_runs(50_000 + grace_ms - 1, 10) == []
    assert relay_runs.open_runs(50_000 + grace_ms, 10) == ["run_due"]


# ---- submission bindings (M2) ----


def _binding(**changes: Any) -> SubmissionBinding:
    fields: dict[str, Any] = {
        "content_hash": "h1",
        "inbox_id": "ibx_x",
        "conversation_id": "cnv_x",
        "message_id": "msg_x",
        "created_at": 1_700_000_000_123,
        "claim": "claim-1",
        "claimed_at": 1_700_000_000_100,
        "sender": "agent:reviewer",
        "submission_id": "sub-1",
        "account_id": "acct_reads",
    }
    return SubmissionBinding(**{**fields, **changes})


@pytest.mark.parametrize(
    "binding",
    [_binding(), _binding(message_id=None, created_at=None), _binding(sender="crew:contracts")],
)
def test_a_binding_reads_back_as_written(binding: SubmissionBinding) -> None:
    assert binding_from_item(binding_to_item(binding)) == binding


def test_a_binding_an_earlier_release_wrote_reads_as_claimed_when_created() -> None:
    """Before claims: a binding always named its message; it was claimed when created."""
    old = binding_to_item(_binding())
    del old["claim"], old["claimed_at"]
    read = binding_from_item(old)
    assert (read.claim, read.claimed_at) == ("", 1_700_000_000_123)


def test_a_retried_send_finds_its_binding_on_a_replica_that_missed_it(api, agents, stack) -> None:
    worker = agents.named("worker")
    agents.named("reviewer")
    body = {"target": "agent:reviewer", "message": "start", "submission_id": "once"}
    first = api("POST", "/v1/messages", worker, body)
    assert first.status == 201, first.body
    replica = stale_reads.install(stack.client, reads=("Query", "GetItem"))
    replica.missing()
    again = api("POST", "/v1/messages", worker, body)
    assert again.status in (200, 201), again.body
    assert again.body["message_id"] == first.body["message_id"]
    assert replica.stale_answers == 0


# ---- inbox state (M8): the newest deliveries of what this side sent ----


def test_inbox_state_finds_what_this_side_sent_behind_a_page_of_the_peers(
    api, agents, stack, monkeypatch
) -> None:
    monkeypatch.setattr(limits, "STATE_DELIVERY_RECORDS", 2)  # pages of 4 messages
    worker, reviewer = agents.named("worker"), agents.named("reviewer")
    sent = [
        api("POST", "/v1/messages", worker, {"target": "agent:reviewer", "message": "one"}).body
    ]
    inbox = sent[0]["inbox_id"]
    for text in ("two", "three"):
        sent.append(api("POST", "/v1/messages", worker, {"inbox_id": inbox, "message": text}).body)
    mailbox = api("GET", "/v1/messages", reviewer, query={"agent_name": "reviewer"}).body
    reply_to = mailbox["messages"][0]["reply_address"]
    for n in range(3):  # the newest page: three of the peer's and one of this side's
        said = api("POST", "/v1/messages", reviewer, {"inbox_id": reply_to, "message": f"r{n}"})
        assert said.status == 201, said.body
    state = api("GET", f"/v1/inboxes/{inbox}/state", worker)
    assert state.status == 200, state.body
    records = state.body["delivery_records"]
    assert [r["message_id"] for r in records] == [sent[2]["message_id"], sent[1]["message_id"]]


@pytest.fixture
def bindings(stack) -> Any:
    from agentworks.messaging.conversation_store import ConversationStore

    return ConversationStore(stack.client, stack.settings.messages_table)


NOW_MS = 1_700_000_000_100


def test_a_claimed_binding_is_found_by_its_keys_only(bindings) -> None:
    pending = _binding(message_id=None, created_at=None)
    assert bindings.claim_binding(pending) == (True, None)
    assert bindings.get_binding("acct_reads", "agent:reviewer", "sub-1", NOW_MS) == pending
    for other in (("acct_other", "agent:reviewer", "sub-1"), ("acct_reads", "agent:x", "sub-1"),
                  ("acct_reads", "agent:reviewer", "sub-2")):  # fmt: skip
        assert bindings.get_binding(*other, NOW_MS) is None
    # A second claim finds the first, as it was written.
    assert bindings.claim_binding(_binding(claim="claim-2")) == (False, pending)
    expired_at = (NOW_MS // 1000 + limits.SUBMISSION_BINDING_SECONDS) * 1000
    assert bindings.get_binding("acct_reads", "agent:reviewer", "sub-1", expired_at) is None


def test_a_refused_claim_with_no_item_in_its_answer_reads_the_binding(
    stack, bindings, monkeypatch
) -> None:
    """A failed condition's answer names the item that failed it (ALL_OLD); one that does
    not is answered by reading the binding by its keys."""
    pending = _binding(message_id=None, created_at=None)
    assert bindings.claim_binding(pending) == (True, None)
    plan = faults.install(stack.client, monkeypatch)
    plan.fail("PutItem", "ConditionalCheckFailedException")  # an answer with no Item
    assert bindings.claim_binding(_binding(claim="claim-2")) == (False, pending)
    assert plan.injected == 1
    # The binding read is this send's own (its put's answer was lost before): it holds it.
    plan.fail("PutItem", "ConditionalCheckFailedException")
    assert bindings.claim_binding(pending) == (True, None)
    assert plan.injected == 2
    expired = _binding(
        claim="claim-3", claimed_at=NOW_MS + limits.SUBMISSION_BINDING_SECONDS * 1000
    )
    plan.fail("PutItem", "ConditionalCheckFailedException")
    assert bindings.claim_binding(expired) == (False, None)  # read at its claim: expired


def test_a_claim_whose_answer_was_lost_is_the_senders_own(stack, bindings, monkeypatch) -> None:
    """The put committed, its answer was lost, and the client's retry failed the condition
    on the binding it had just written: the send holds the id, not another send."""
    plan = faults.install(stack.client, monkeypatch)
    plan.fail("PutItem", "InternalServerError", commit_first=True)
    pending = _binding(message_id=None, created_at=None)
    assert bindings.claim_binding(pending) == (True, None)
    assert plan.injected == 1
    assert bindings.claim_binding(_binding(claim="claim-2")) == (False, pending)


def test_a_binding_is_given_back_only_by_its_claim_and_only_while_pending(bindings) -> None:
    pending = _binding(message_id=None, created_at=None)
    bindings.claim_binding(pending)
    bindings.release_binding(_binding(message_id=None, created_at=None, claim="not-mine"))
    assert bindings.get_binding("acct_reads", "agent:reviewer", "sub-1", NOW_MS) == pending
    bindings.complete_binding(pending, "msg_done", 1_700_000_000_200)
    bindings.release_binding(pending)  # it names its message now: kept
    done = bindings.get_binding("acct_reads", "agent:reviewer", "sub-1", NOW_MS)
    assert done is not None and done.message_id == "msg_done"
    other = _binding(message_id=None, created_at=None, submission_id="sub-2")
    bindings.claim_binding(other)
    bindings.release_binding(other)
    assert bindings.get_binding("acct_reads", "agent:reviewer", "sub-2", NOW_MS) is None
    assert bindings.get_binding("acct_reads", "agent:reviewer", "sub-1", NOW_MS) == done


def test_a_binding_is_read_strongly_right_after_its_claim(stack, bindings) -> None:
    pending = _binding(message_id=None, created_at=None)
    bindings.claim_binding(pending)
    replica = stale_reads.install(stack.client, reads=("Query", "GetItem"))
    replica.missing()
    assert bindings.get_binding("acct_reads", "agent:reviewer", "sub-1", NOW_MS) == pending
    assert replica.stale_answers == 0


def test_a_stopped_sends_binding_is_taken_over_once_and_only_while_pending(bindings) -> None:
    stale = _binding(message_id=None, created_at=None, claim="stopped")
    bindings.claim_binding(stale)
    mine = _binding(message_id=None, created_at=None, claim="mine")
    theirs = _binding(message_id=None, created_at=None, claim="theirs")
    assert bindings.take_over(stale, mine) is True
    assert bindings.take_over(stale, theirs) is False  # the claim it saw is gone
    assert bindings.get_binding("acct_reads", "agent:reviewer", "sub-1", NOW_MS) == mine
    bindings.complete_binding(mine, "msg_done", 1_700_000_000_200)
    assert bindings.take_over(mine, theirs) is False  # it names its message: kept
    done = bindings.get_binding("acct_reads", "agent:reviewer", "sub-1", NOW_MS)
    assert done is not None and (done.claim, done.message_id) == ("mine", "msg_done")


def test_a_pending_binding_an_earlier_release_wrote_without_times_reads_claimed_at_zero() -> None:
    old = binding_to_item(_binding(message_id=None, created_at=None))
    del old["claim"], old["claimed_at"], old["created_at"]
    read = binding_from_item(old)
    assert (read.claim, read.claimed_at, read.created_at) == ("", 0, None)


def test_inbox_state_shows_a_message_just_sent_through_a_lagging_replica(
    api, agents, stack
) -> None:
    worker = agents.named("worker")
    agents.named("reviewer")
    sent = api("POST", "/v1/messages", worker, {"target": "agent:reviewer", "message": "one"})
    replica = stale_reads.install(stack.client)
    replica.missing()
    state = api("GET", f"/v1/inboxes/{sent.body['inbox_id']}/state", worker)
    assert state.status == 200, state.body
    assert [r["message_id"] for r in state.body["delivery_records"]] == [sent.body["message_id"]]
