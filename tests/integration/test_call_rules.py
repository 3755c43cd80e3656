"""Crew call admission, by what a caller sees: the error that names what to fix, the args
bound at and just past its limit, a submission's arguments compared by value, and a page
of a file that must exist. Written to kill the mutants `make mutate` found alive in
crews/calls.py (docs/benchmarks.md, "Mutation testing")."""

from __future__ import annotations

import copy
import json
import time

import boto3
import pytest

from agentworks import limits
from tests.integration.crew_support import CONTRACTS, wait_for


def _caller(api, stack, agents) -> str:
    assert api("POST", "/v1/crews", stack.admin_token, CONTRACTS).status == 201
    return agents.connection("caller")["token"]


def _summarize(args: dict, **more) -> dict:
    return {"target": "crew:contracts", "function": "summarize", "args": args, **more}


def test_an_unknown_function_is_named_with_where_to_look(api, stack, agents):
    caller = _caller(api, stack, agents)
    reply = api("POST", "/v1/calls", caller, {"target": "crew:contracts", "function": "nope"})
    assert (reply.status, reply.body) == (
        400,
        {
            "error": {
                "code": "invalid_request",
                "message": "crew:contracts has no function 'nope'. See its functions with: "
                "agentworks functions list --target crew:contracts",
                "field": "function",
            }
        },
    )


def test_args_at_their_bound_are_accepted_and_a_byte_more_is_refused(api, stack, agents):
    caller = _caller(api, stack, agents)
    args = {"text": ""}
    args["text"] = "x" * (limits.ARGS_MAX_BYTES - len(json.dumps(args)))
    assert len(json.dumps(args)) == limits.ARGS_MAX_BYTES
    assert api("POST", "/v1/calls", caller, _summarize(args)).status == 202
    past = api("POST", "/v1/calls", caller, _summarize({"text": args["text"] + "x"}))
    assert (past.status, past.body["error"]) == (
        400,
        {
            "code": "invalid_request",
            "message": f"args are limited to {limits.ARGS_MAX_BYTES // 1024} KiB of JSON.",
            "field": "args",
        },
    )


def test_a_submission_compares_its_arguments_by_value_not_by_key_order(api, stack, agents):
    caller = _caller(api, stack, agents)
    schema_free = dict(CONTRACTS, name="loose")
    schema_free["functions"] = [
        {**CONTRACTS["functions"][0], "input_schema": {"type": "object"}},
    ]
    assert api("POST", "/v1/crews", stack.admin_token, schema_free).status == 201
    first = {"target": "crew:loose", "function": "summarize", "submission_id": "sub-order"}
    accepted = api("POST", "/v1/calls", caller, {**first, "args": {"text": "a", "lang": "en"}})
    assert accepted.status == 202
    again = api("POST", "/v1/calls", caller, {**first, "args": {"lang": "en", "text": "a"}})
    assert (again.status, again.body["call_id"]) == (200, accepted.body["call_id"])  # replayed
    other = api("POST", "/v1/calls", caller, {**first, "args": {"lang": "fr", "text": "a"}})
    assert (other.status, other.body["error"]["message"]) == (
        409,
        "submission_id was already used with other arguments; use a new submission_id "
        "for new work.",
    )


def test_a_file_is_read_from_page_zero_and_a_negative_page_is_refused(api, stack, agents):
    adapter = copy.deepcopy(CONTRACTS["adapter"])
    adapter["rules"][1] = {
        "function": "summarize",
        "result": {"summary": "{args.text}"},
        "files": {"notes.txt": "Notes on {args.text}"},
    }
    assert (
        api("POST", "/v1/crews", stack.admin_token, dict(CONTRACTS, adapter=adapter)).status == 201
    )
    caller = agents.connection("caller")["token"]
    call_id = api("POST", "/v1/calls", caller, _summarize({"text": "the lease"})).body["call_id"]
    done = wait_for(api, caller, call_id, {"succeeded", "failed", "interrupted"})
    assert done["state"] == "succeeded" and done["result_file"] is None
    files = f"/v1/calls/{call_id}/files"
    first = api("GET", files, caller, query={"path": "notes.txt"}).body
    assert (first["page"], first["content"]) == (0, "Notes on the lease")
    negative = api("GET", files, caller, query={"path": "notes.txt", "page": "-1"})
    assert (negative.status, negative.body["error"]) == (
        400,
        {"code": "invalid_request", "message": "page must be 0 or more.", "field": "page"},
    )
    # The result was inline: there is no result file to read, as if the path were unknown.
    assert api("GET", files, caller, query={"path": "result.json"}).status == 404
    crew_id = api("GET", "/v1/crews/contracts", caller).body["crew_id"]
    boto3.client("s3", region_name="us-east-1").delete_object(
        Bucket=stack.settings.outputs_bucket, Key=f"calls/{crew_id}/{call_id}/notes.txt"
    )
    gone = api("GET", files, caller, query={"path": "notes.txt"})
    assert (gone.status, gone.body["error"]["message"]) == (
        410,
        "This output was removed 7 days after it was written; the call record remains.",
    )


def test_a_posted_result_is_refused_with_what_to_do(api, stack, agents):
    """The mailbox adapter's agent posts the outcome: each refusal says what to fix, and
    the call keeps waiting until an accepted one; after it, a post meets a finished call."""
    from tests.integration.test_mailbox_adapter import DELEGATOR, call, wait_for_mailbox

    assert api("POST", "/v1/crews", stack.admin_token, DELEGATOR).status == 201
    worker = agents.named("worker")
    caller = agents.connection("caller")["token"]
    call_id = call(api, caller, "the lease")
    wait_for_mailbox(api, worker, "worker")
    path = f"/v1/calls/{call_id}/result"
    empty = api("POST", path, worker, {"agent_name": "worker"})
    assert (empty.status, empty.body["error"]) == (
        400,
        {
            "code": "invalid_request",
            "message": "Give final_text, result or both.",
            "field": "final_text",
        },
    )
    wrong = api("POST", path, worker, {"agent_name": "worker", "result": {"gist": "x"}})
    assert wrong.status == 422
    assert wrong.body["error"]["message"].startswith(
        "The result does not match summarize's output schema: "
    )
    assert wrong.body["error"]["message"].endswith("The call still waits; post a corrected result.")
    assert wrong.body["error"]["output_schema"] == DELEGATOR["functions"][0]["output_schema"]
    result = {"summary": "short"}
    posted = api(
        "POST", path, worker, {"agent_name": "worker", "result": result, "final_text": "Done."}
    )
    assert posted.status == 200 and posted.body["progress"][-1] == "result posted by agent:worker"
    done = wait_for(api, caller, call_id, {"succeeded", "failed", "interrupted"})
    assert (done["state"], done["final_text"], done["result"]) == ("succeeded", "Done.", result)
    late = api("POST", path, worker, {"agent_name": "worker", "final_text": "Again."})
    assert (late.status, late.body["error"]["message"]) == (
        409,
        "The call is succeeded; it is not waiting for a result.",
    )


def test_a_reply_answers_only_the_pending_question_it_names(api, stack, agents):
    caller = _caller(api, stack, agents)
    confirm = {"target": "crew:contracts", "function": "confirm", "args": {"action": "ship"}}
    call_id = api("POST", "/v1/calls", caller, confirm).body["call_id"]
    waiting = wait_for(api, caller, call_id, {"input_required", "failed", "interrupted"})
    [question] = waiting["pending_inputs"]
    wrong = api(
        "POST", f"/v1/calls/{call_id}/reply", caller, {"request_id": "req_x", "answer": "no"}
    )
    assert (wrong.status, wrong.body["error"]) == (
        409,
        {
            "code": "conflict",
            "message": "No pending input with that request_id on this call; see its "
            f"pending_inputs with: agentworks functions status --call-id {call_id}",
            "field": "request_id",
        },
    )
    answered = api(
        "POST",
        f"/v1/calls/{call_id}/reply",
        caller,
        {"request_id": question["request_id"], "answer": "yes"},
    )
    assert (answered.status, answered.body["state"], answered.body["pending_inputs"]) == (
        200,
        "running",
        [],
    )
    done = wait_for(api, caller, call_id, {"succeeded", "failed", "interrupted"})
    assert done["result"] == {"confirmed": "yes"}  # the answer reached the Crew by its id


def test_a_call_is_stamped_with_the_clock_and_listed_with_it(api, stack, agents):
    from agentworks.messaging.models import iso

    caller = _caller(api, stack, agents)
    now = iso(int(stack.clock.now() * 1000))
    accepted = api("POST", "/v1/calls", caller, _summarize({"text": "t"})).body
    assert (accepted["created_at"], accepted["updated_at"]) == (now, now)
    [listed] = api("GET", "/v1/calls", caller).body["calls"]
    assert (listed["call_id"], listed["created_at"]) == (accepted["call_id"], now)
    assert listed["updated_at"] >= now and listed["cost_usd"] == 0


def test_a_page_size_outside_its_bounds_is_refused_by_the_service_too(stack, agents):
    from agentworks.errors import InvalidInput

    caller = stack.principal(agents.connection("caller")["token"])
    for limit in (0, limits.CALLS_PAGE_MAX + 1):
        with pytest.raises(InvalidInput) as refused:
            stack.services.crews.calls.recent(caller, limit)
        assert refused.value.to_body()["error"] == {
            "code": "invalid_request",
            "message": f"limit must be 1–{limits.CALLS_PAGE_MAX}.",
            "field": "limit",
        }
    assert stack.services.crews.calls.recent(caller, limits.CALLS_PAGE_MAX).calls == []


def _handed_off(api, stack, agents) -> tuple[str, str]:
    """A mailbox call whose work waits in worker's mailbox: (worker's token, call id)."""
    from tests.integration.test_mailbox_adapter import DELEGATOR, call, wait_for_mailbox

    assert api("POST", "/v1/crews", stack.admin_token, DELEGATOR).status == 201
    worker = agents.named("worker")
    call_id = call(api, agents.connection("caller")["token"], "the lease")
    wait_for_mailbox(api, worker, "worker")
    # The hand-off step has recorded the hand-off (the work reaches the mailbox first).
    deadline = time.monotonic() + 30
    while "handed to agent:worker" not in api(
        "GET", f"/v1/calls/{call_id}", stack.admin_token
    ).body.get("progress", []):
        assert time.monotonic() < deadline, call_id
        time.sleep(0.05)
    return worker, call_id


def _still_recording(stack, call_id: str) -> None:
    """The window between the work reaching the mailbox and the hand-off step recording
    it: the call still holds the work it hands off."""
    store = stack.services.crews.calls._calls
    record, version = store.get(call_id)
    record.handoff_message = "the work, not yet recorded as handed off"
    store.save(record, version)


def _recorded(stack, call_id: str) -> None:
    store = stack.services.crews.calls._calls
    record, version = store.get(call_id)
    record.handoff_message = None
    store.save(record, version)


RESULT = {"agent_name": "worker", "result": {"summary": "short"}, "final_text": "Done."}


def test_a_result_posted_while_the_hand_off_is_recorded_waits_for_it(
    api, stack, agents, monkeypatch
):
    from agentworks.crews import calls

    worker, call_id = _handed_off(api, stack, agents)
    _still_recording(stack, call_id)
    paused: list[float] = []

    def pause(seconds: float) -> None:  # the hand-off step finishes during the third wait
        paused.append(seconds)
        if len(paused) == 3:
            _recorded(stack, call_id)

    monkeypatch.setattr(calls, "_pause", pause)
    posted = api("POST", f"/v1/calls/{call_id}/result", worker, RESULT)
    assert posted.status == 200, posted.body
    assert paused == [0.1, 0.1, 0.1]


def test_a_hand_off_never_recorded_is_waited_for_two_seconds_then_the_post_goes_on(
    api, stack, agents, monkeypatch
):
    from agentworks.crews import calls

    worker, call_id = _handed_off(api, stack, agents)
    _still_recording(stack, call_id)
    paused: list[float] = []
    monkeypatch.setattr(calls, "_pause", paused.append)
    posted = api("POST", f"/v1/calls/{call_id}/result", worker, RESULT)
    assert posted.status == 200, posted.body
    assert paused == [0.1] * 20


def test_a_post_that_keeps_meeting_a_changed_call_says_to_retry(api, stack, agents, monkeypatch):
    from agentworks.crews.call_store import StaleCall

    worker, call_id = _handed_off(api, stack, agents)
    store = stack.services.crews.calls._calls
    saves: list[str] = []

    def always_stale(record, version):
        saves.append(record.call_id)
        raise StaleCall()

    monkeypatch.setattr(store, "save", always_stale)
    posted = api("POST", f"/v1/calls/{call_id}/result", worker, RESULT)
    assert (posted.status, posted.body["error"]["message"]) == (
        409,
        "The call changed while posting; retry.",
    )
    assert len(saves) == 25  # every attempt tried to save; none waited on a hand-off
    monkeypatch.undo()
    assert wait_for(api, stack.admin_token, call_id, {"running"})["state"] == "running"


def test_a_post_that_meets_a_call_no_longer_waiting_says_where_to_look(
    api, stack, agents, monkeypatch
):
    worker, call_id = _handed_off(api, stack, agents)
    executions = stack.services.crews.calls._executions

    def gone(token, output):
        raise RuntimeError("TaskTimedOut")

    monkeypatch.setattr(executions, "resume", gone)
    posted = api("POST", f"/v1/calls/{call_id}/result", worker, RESULT)
    assert (posted.status, posted.body["error"]["message"]) == (
        409,
        "The call stopped waiting before the result arrived; see its status.",
    )


def test_a_result_from_anyone_but_the_agent_handed_the_work_looks_like_an_unknown_call(
    api, stack, agents
):
    worker, call_id = _handed_off(api, stack, agents)
    elsewhere = stack.services.identity.bootstrap("elsewhere").token
    namesake = agents.connection("worker-elsewhere", token=elsewhere)["token"]
    assert api("POST", "/v1/agents", namesake, {"agent_name": "worker"}).status == 200
    other = agents.named("other")
    caller = agents.connection("someone")["token"]
    unknown = api("POST", "/v1/calls/call_01UNKNOWN0000000000000000/result", worker, RESULT)
    assert unknown.status == 404
    before = api("GET", f"/v1/calls/{call_id}", stack.admin_token).body
    for token, name in ((namesake, "worker"), (other, "other"), (other, "worker"),
                        (caller, "worker")):  # fmt: skip
        refused = api("POST", f"/v1/calls/{call_id}/result", token, {**RESULT, "agent_name": name})
        assert (refused.status, refused.body) == (404, unknown.body), (name, refused.body)
    assert api("GET", f"/v1/calls/{call_id}", stack.admin_token).body == before
    assert api("POST", f"/v1/calls/{call_id}/result", worker, RESULT).status == 200


def test_a_new_call_is_counted_once_and_its_replay_not_at_all(api, stack, agents, capfd):
    """FunctionCallsAccepted (the dashboard's accepted calls) counts work, not requests."""
    caller = _caller(api, stack, agents)
    body = _summarize({"text": "t"}, submission_id="sub-count")

    def accepted_counts() -> list[float]:
        lines = capfd.readouterr().out.splitlines()
        blobs = [json.loads(line) for line in lines if '"FunctionCallsAccepted"' in line]
        return [value for blob in blobs for value in blob["FunctionCallsAccepted"]]

    capfd.readouterr()
    assert api("POST", "/v1/calls", caller, body).status == 202
    assert accepted_counts() == [1.0]
    assert api("POST", "/v1/calls", caller, body).status == 200  # the replay
    assert accepted_counts() == [0.0]


def test_recent_calls_show_cost_to_the_micro_dollar_within_the_target_bounds(api, stack, agents):
    """The Runs page's list: an admin bounded to one Crew sees that Crew's calls only, each
    with its cost rounded to six places."""
    from agentworks.crews.call_store import CallStore
    from agentworks.identity.models import ALL_SCOPES

    caller = _caller(api, stack, agents)
    assert api("POST", "/v1/crews", stack.admin_token, dict(CONTRACTS, name="other")).status == 201
    mine = api("POST", "/v1/calls", caller, _summarize({"text": "t"})).body["call_id"]
    elsewhere = dict(_summarize({"text": "t"}), target="crew:other")
    assert api("POST", "/v1/calls", caller, elsewhere).status == 202
    wait_for(api, caller, mine, {"succeeded"})
    store = CallStore(stack.client, stack.settings.work_table)
    found = store.get(mine)
    assert found is not None
    found[0].cost_usd = 0.12345678
    store.save(*found)
    bounded = api(
        "POST",
        "/v1/connections",
        stack.admin_token,
        {"name": "bounded-admin", "scopes": list(ALL_SCOPES), "target_bounds": ["crew:contracts"]},
    ).body["token"]
    listed = api("GET", "/v1/calls", bounded).body["calls"]
    assert [(c["call_id"], c["cost_usd"]) for c in listed] == [(mine, 0.123457)]
    assert api("GET", f"/v1/calls/{mine}", bounded).body["cost_usd"] == 0.123457


def test_a_submission_whose_call_is_gone_answers_like_an_unknown_call(api, stack, agents):
    """The binding outlives its call's record (kept longer): the same submission_id then
    finds nothing to recover and answers as any call no one may see, never an error."""
    from agentworks.dynamo import to_item

    caller = _caller(api, stack, agents)
    body = _summarize({"text": "t"}, submission_id="sub-gone")
    call_id = api("POST", "/v1/calls", caller, body).body["call_id"]
    wait_for(api, caller, call_id, {"succeeded"})
    stack.client.delete_item(
        TableName=stack.settings.work_table, Key=to_item({"pk": f"CALL#{call_id}", "sk": "META"})
    )
    again = api("POST", "/v1/calls", caller, body)
    unknown = api("GET", "/v1/calls/call_01KZZZZZZZZZZZZZZZZZZZZZZZ", caller)
    assert (again.status, again.body) == (404, unknown.body)


def _calls_page(api, token: str, limit: int, before: str | None = None) -> tuple[list[str], str]:
    query = {"limit": str(limit), **({"before": before} if before is not None else {})}
    page = api("GET", "/v1/calls", token, query=query)
    assert page.status == 200, page.body
    return [c["call_id"] for c in page.body["calls"]], page.body["next_before"]


def test_the_call_list_pages_from_the_newest_back(api, stack, agents):
    """C5 the Runs page: a page of `limit` calls, newest first; `next_before` asks for the
    older ones until none are left — none at exactly `limit` calls, one more just past it."""
    caller = _caller(api, stack, agents)
    made = []
    for n in range(3):
        made.append(api("POST", "/v1/calls", caller, _summarize({"text": f"t{n}"})).body["call_id"])
        stack.clock.advance(1)
    newest = made[::-1]
    assert _calls_page(api, caller, 3) == (newest, None)  # at the limit: nothing older
    first, before = _calls_page(api, caller, 2)  # just past it: one more page
    assert first == newest[:2] and before is not None
    assert _calls_page(api, caller, 2, before) == ([made[0]], None)


def test_the_call_list_passes_over_other_callers_calls_past_one_query(
    api, stack, agents, monkeypatch
):
    """A caller's older call that lies past CALLS_LIST_SCAN newer calls of others is reached
    on a following page: next_before is where the Query stopped looking, not a guess."""
    caller = _caller(api, stack, agents)
    other = agents.connection("other")["token"]
    mine = api("POST", "/v1/calls", caller, _summarize({"text": "mine"})).body["call_id"]
    wait_for(api, caller, mine, {"succeeded"})
    for n in range(4):  # newest first: o3 o2 | o1 o0 | mine, two looked at a Query
        stack.clock.advance(1)
        theirs = api("POST", "/v1/calls", other, _summarize({"text": f"o{n}"})).body["call_id"]
        wait_for(api, other, theirs, {"succeeded"})
    monkeypatch.setattr(limits, "CALLS_LIST_SCAN", 2)
    found, before = _calls_page(api, caller, 5)
    assert found == [] and before is not None
    found, before = _calls_page(api, caller, 5, before)
    assert found == [] and before is not None
    assert _calls_page(api, caller, 5, before) == ([mine], None)


def test_a_call_list_position_is_checked_and_stays_in_the_callers_account(api, stack, agents):
    """A forged `before` is a 400 that says what to send; a well-formed one only positions
    the Query in the caller's own account (another account's calls never show)."""
    caller = _caller(api, stack, agents)
    made = api("POST", "/v1/calls", caller, _summarize({"text": "t"})).body["call_id"]
    for forged in ("x", "123.call_A", "9999999999999.call_" + "A" * 41, "9999999999999#" + made):
        refused = api("GET", "/v1/calls", caller, query={"before": forged})
        assert (refused.status, refused.body["error"]) == (
            400,
            {
                "code": "invalid_request",
                "message": "before must be the next_before of a page of calls; "
                "list again without it.",
                "field": "before",
            },
        ), forged
    stranger = stack.services.identity.bootstrap("elsewhere").token
    latest = "9999999999999.call_" + "Z" * 26
    assert _calls_page(api, caller, 5, latest) == ([made], None)
    assert _calls_page(api, stranger, 5, latest) == ([], None)


@pytest.mark.parametrize("kind", ["workflow", "relay"])
def test_a_workflow_or_relay_name_holding_a_colon_looks_like_an_unknown_one(
    api, stack, agents, kind
):
    """The kind is what comes before the first colon: the rest is the name, looked up as
    that kind's (and found nowhere), never read as some other kind's target."""
    caller = _caller(api, stack, agents)
    unknown = api("POST", "/v1/calls", caller, {"target": f"{kind}:nope", "function": "f"})
    assert unknown.status == 404
    for target in (f"{kind}:no:pe", f"{kind}:a:b:c"):
        reply = api("POST", "/v1/calls", caller, {"target": target, "function": "f"})
        assert (reply.status, reply.body) == (unknown.status, unknown.body)
        listed = api("GET", f"/v1/functions?target={target}", caller)
        assert (listed.status, listed.body) == (unknown.status, unknown.body)
