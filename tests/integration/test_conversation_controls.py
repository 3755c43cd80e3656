"""Pause, resume, close and delete a conversation with a Crew (C4): who may, what each
does to runs and requests, and that a refusal reads like an unknown inbox."""

from __future__ import annotations

from typing import Any

from tests.integration.test_conversation_requests import (
    TERMINAL,
    ask,
    executions,
    request_state,
    requests_of,
    wait_for_request,
)
from tests.integration.test_crew_messages import crew, send, wait_for_messages
from tests.integration.test_mailbox_adapter import DELEGATOR, wait_for_mailbox


def control(api: Any, token: str, inbox_id: str, action: str, **body: Any) -> Any:
    return api("POST", f"/v1/conversations/{inbox_id}/{action}", token, body)


def test_c4_pause_starts_no_new_run_and_resume_starts_what_waited(api, stack, agents):
    crew(api, stack, "on")
    caller = agents.connection("caller")["token"]
    first = ask(api, caller, "What does clause 1 say?").body
    inbox = first["inbox_id"]
    assert wait_for_request(api, caller, first, TERMINAL)["state"] == "answered"
    paused = control(api, caller, inbox, "pause")
    assert paused.status == 200 and paused.body["status"] == "paused", paused.body
    held = ask(api, caller, "And clause 2?", inbox_id=inbox).body
    assert request_state(api, caller, held)["state"] == "received"
    assert len(executions(stack)) == 1  # nothing new started
    assert control(api, caller, inbox, "pause").status == 409  # already paused
    resumed = control(api, caller, inbox, "resume")
    assert resumed.status == 200 and resumed.body["started_runs"] == 1, resumed.body
    assert wait_for_request(api, caller, held, TERMINAL)["state"] == "answered"
    assert len(wait_for_messages(api, caller, inbox, count=2)) == 2


def test_c4_a_run_going_when_paused_finishes_and_its_reply_is_kept(api, stack, agents):
    assert api("POST", "/v1/crews", stack.admin_token, DELEGATOR).status == 201
    worker = agents.named("worker")
    caller = agents.connection("caller")["token"]
    sent = ask(api, caller, "Check clause 4.", target="crew:delegator").body
    [work] = wait_for_mailbox(api, worker, "worker")
    assert control(api, caller, sent["inbox_id"], "pause").status == 200
    run_id = work["body"].split("AgentWorks call ", 1)[1].split(".", 1)[0]
    posted = api(
        "POST",
        f"/v1/calls/{run_id}/result",
        worker,
        {"agent_name": "worker", "final_text": "Clause 4 is fine."},
    )
    assert posted.status == 200, posted.body
    [reply] = wait_for_messages(api, caller, sent["inbox_id"])
    assert reply["body"] == "Clause 4 is fine." and reply["in_reply_to"] == sent["message_id"]
    # The run posts its reply, then records the request answered as it finishes.
    assert wait_for_request(api, caller, sent, TERMINAL)["state"] == "answered"


def test_c4_close_cancels_open_requests_and_takes_no_more_messages(api, stack, agents):
    crew(api, stack, "review")
    caller = agents.connection("caller")["token"]
    one = ask(api, caller, "Clause 1?").body
    two = ask(api, caller, "Clause 2?", inbox_id=one["inbox_id"]).body
    closed = control(api, caller, one["inbox_id"], "close")
    assert closed.status == 200 and closed.body["cancelled_requests"] == 2, closed.body
    assert {r["state"] for r in requests_of(api, caller, one["inbox_id"])} == {"cancelled"}
    assert request_state(api, caller, two)["reason"] == "The conversation was closed."
    refused = send(api, caller, "One more thing.", inbox_id=one["inbox_id"])
    assert refused.status == 409 and refused.body["error"]["code"] == "conversation_closed"
    assert control(api, caller, one["inbox_id"], "resume").status == 409
    assert executions(stack) == []


def test_c4_delete_closes_then_deletes_messages_and_keeps_the_runs(api, stack, agents):
    crew(api, stack, "on")
    caller = agents.connection("caller")["token"]
    sent = ask(api, caller, "What does clause 7 say?").body
    assert wait_for_request(api, caller, sent, TERMINAL)["state"] == "answered"
    assert api("DELETE", f"/v1/conversations/{sent['inbox_id']}", caller).status == 403
    deleted = api("DELETE", f"/v1/conversations/{sent['inbox_id']}", stack.admin_token)
    assert deleted.status == 200 and deleted.body["status"] == "deleted", deleted.body
    page = api("GET", "/v1/messages", caller, query={"inbox_id": sent["inbox_id"]}).body
    assert page["messages"] == []
    run_id = request_state(api, caller, sent)["run_id"]
    assert api("GET", f"/v1/calls/{run_id}", stack.admin_token).status == 200  # runs stay
    assert len(executions(stack)) == 1


def test_c4_only_someone_who_can_act_for_a_side_may_and_a_stranger_sees_unknown(api, stack, agents):
    crew(api, stack, "review")
    caller = agents.connection("caller")["token"]
    stranger = stack.services.identity.bootstrap("elsewhere").token
    sent = ask(api, caller, "Clause 1?").body
    crew_inbox = sent["inbox_id"][:-1] + "b"  # the Crew's side of the same conversation
    unknown = control(api, stranger, "ibx_" + "0" * 26 + "a", "pause")
    assert unknown.status == 404
    # Another account: exactly what an inbox that does not exist answers.
    refused = control(api, stranger, sent["inbox_id"], "pause")
    assert (refused.status, refused.body) == (unknown.status, unknown.body)
    # The caller is the conversation's other side (it knows it): acting for the Crew's side
    # needs the admin scope, and the refusal says so.
    refused = control(api, caller, crew_inbox, "pause")
    assert refused.status == 403 and refused.body["error"]["scope"] == "admin", refused.body
    assert request_state(api, caller, sent)["state"] == "waiting_for_review"  # unchanged
    # An account admin acts for the Crew's side.
    assert control(api, stack.admin_token, crew_inbox, "pause").status == 200


def test_c4_between_named_agents_there_is_nothing_to_pause(api, stack, agents):
    reviewer = agents.connection("reviewer")["token"]
    assert api("POST", "/v1/agents", reviewer, {"agent_name": "reviewer"}).status == 200
    caller = agents.connection("caller")["token"]
    sent = api("POST", "/v1/messages", caller, {"message": "hi", "target": "agent:reviewer"})
    refused = control(api, caller, sent.body["inbox_id"], "pause")
    assert refused.status == 404, refused.body
