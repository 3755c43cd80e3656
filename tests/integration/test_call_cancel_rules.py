"""Cancelling a function call (issue 30: A2A CancelTask, `agentworks calls cancel`), on the
service: its caller or the account's admin cancels an unfinished call — the record ends
`cancelled`, the Crew's slot comes back and the execution stops —, an ended call says how
it ended, anyone else's or an unknown id looks alike, a call that belongs to a run is
cancelled with its run, and a record that keeps changing is given up on with a retry."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from agentworks.crews.call_store import StaleCall
from agentworks.errors import Conflict, InvalidInput, MissingScope, Unavailable
from tests.integration.test_call_rules import _handed_off
from tests.integration.test_mailbox_adapter import call


def _calls(stack: Any) -> Any:
    return stack.services.crews.calls


def _execution_status(stack: Any, call_id: str) -> str:
    sfn = boto3.client("stepfunctions", region_name="us-east-1")
    arn = stack.settings.function_call_state_machine_arn
    [found] = [e for e in sfn.list_executions(stateMachineArn=arn)["executions"]
               if e["name"] == call_id]  # fmt: skip
    return str(found["status"])


@pytest.fixture
def stop_causes(stack: Any) -> Iterator[list[str]]:
    """The causes the StopExecution requests carry (moto keeps none; the console shows it)."""
    causes: list[str] = []
    events = _calls(stack)._executions.client.meta.events

    def seen(params: dict[str, Any], **_: Any) -> None:
        causes.append(params["cause"])

    events.register("provide-client-params.states.StopExecution", seen)
    yield causes
    events.unregister("provide-client-params.states.StopExecution", seen)


def test_an_unfinished_call_is_cancelled_and_it_ends_everywhere(
    api, stack, agents, stop_causes
) -> None:
    _worker, call_id = _handed_off(api, stack, agents)
    admin = stack.principal(stack.admin_token)  # the account's admin, for its caller
    assert api("GET", "/v1/crews/delegator", stack.admin_token).body["running"] == 1
    status = _calls(stack).cancel(admin, call_id)
    assert (status["state"], status["terminal"]) == ("cancelled", True)
    record, _ = _calls(stack)._calls.get(call_id)
    assert (record.state, record.outcome) == ("cancelled", "cancelled")
    assert record.errors[-1] == "cancelled by the caller"
    assert record.pending_inputs == [] and record.task_token is None
    assert record.slot_held is False and record.updated_at == int(stack.clock.now() * 1000)
    assert _execution_status(stack, call_id) == "ABORTED"
    assert stop_causes == ["cancelled by the caller"]
    # The Crew's slot came back in the same transaction.
    assert api("GET", "/v1/crews/delegator", stack.admin_token).body["running"] == 0
    with pytest.raises(Conflict) as again:
        _calls(stack).cancel(admin, call_id)
    assert again.value.message == "The call already ended (cancelled); there is nothing to cancel."
    assert again.value.details == {"state": "cancelled"}


def test_anyone_elses_call_and_an_unknown_one_look_alike(api, stack, agents) -> None:
    _worker, call_id = _handed_off(api, stack, agents)
    stranger = stack.principal(agents.connection("stranger")["token"])
    for asked in (call_id, "call_01UNKNOWN0000000000000000"):
        with pytest.raises(Unavailable):
            _calls(stack).cancel(stranger, asked)
    record, _ = _calls(stack)._calls.get(call_id)
    assert not record.terminal


def test_cancelling_needs_the_call_scope(api, stack, agents) -> None:
    _worker, call_id = _handed_off(api, stack, agents)
    reader = stack.principal(agents.connection("reader", scopes=["functions:read"])["token"])
    with pytest.raises(MissingScope):
        _calls(stack).cancel(reader, call_id)


def test_a_call_of_a_run_is_cancelled_with_its_run(stack) -> None:
    from agentworks.relays.runs import RUN_PREFIX

    admin = stack.principal(stack.admin_token)
    with pytest.raises(InvalidInput) as refused:
        _calls(stack).cancel(admin, f"{RUN_PREFIX}0001")
    assert refused.value.message == (
        "This call belongs to a workflow run or a Relay run: cancel that run."
    )
    assert refused.value.details == {"field": "call_id"}


def test_a_record_that_keeps_changing_is_given_up_on_after_five_tries(
    api, stack, agents, monkeypatch
) -> None:
    _worker, call_id = _handed_off(api, stack, agents)
    store = _calls(stack)._calls
    tries: list[int] = []

    def finish(*args: Any, **kwargs: Any) -> None:
        tries.append(1)
        raise StaleCall()

    monkeypatch.setattr(store, "finish", finish)
    with pytest.raises(Conflict) as changing:
        _calls(stack).cancel(stack.principal(stack.admin_token), call_id)
    assert changing.value.message == "The call changed while cancelling; retry."
    assert len(tries) == 5


def test_recent_statuses_are_the_recent_calls_of_the_crew_named(api, stack, agents) -> None:
    """A2A ListTasks reads them: each call's whole status, of one Crew when named."""
    _worker, call_id = _handed_off(api, stack, agents)
    admin = stack.principal(stack.admin_token)
    record, _ = _calls(stack)._calls.get(call_id)
    every, following = _calls(stack).recent_statuses(admin, limit=5)
    assert [s["call_id"] for s in every] == [call_id] and following is None
    assert every[0] == _calls(stack).status(admin, call_id)
    named, _ = _calls(stack).recent_statuses(admin, crew_name=record.crew_name)
    assert [s["call_id"] for s in named] == [call_id]
    assert _calls(stack).recent_statuses(admin, crew_name="another-crew") == ([], None)


def test_recent_statuses_are_read_a_page_at_a_time(api, stack, agents) -> None:
    """ListTasks' pageSize and pageToken reach the read: one call a page, newest first."""
    _worker, older = _handed_off(api, stack, agents)
    stack.clock.advance(1)
    newer = call(api, agents.connection("caller")["token"], "the deed")
    admin = stack.principal(stack.admin_token)
    first, following = _calls(stack).recent_statuses(admin, limit=1)
    assert [s["call_id"] for s in first] == [newer] and following is not None
    rest, end = _calls(stack).recent_statuses(admin, limit=1, before=following)
    assert [s["call_id"] for s in rest] == [older] and end is None
