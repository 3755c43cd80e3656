"""The audit log of conversations with a Crew (C6): every change — each message, each
request state reached, release, decline, cancel, expiry, pause, resume, close, delete — is an
entry that says who made it; account admins page through it (HTTP here; the CLI and MCP
read the same service), and everyone else reads what an unknown inbox reads."""

from __future__ import annotations

import time
from typing import Any

from agentworks import limits
from tests.integration.test_conversation_controls import control
from tests.integration.test_conversation_requests import (
    TERMINAL,
    ask,
    tick,
    wait_for_request,
)
from tests.integration.test_crew_messages import crew


def audit(api: Any, token: str, **query: Any) -> list[dict]:
    page = api("GET", "/v1/audit", token, query=query)
    assert page.status == 200, page.body
    return page.body["entries"]


def actions(entries: list[dict]) -> list[tuple]:
    return [(e["action"], e["state"], e["actor"]["kind"]) for e in entries]


def conn_id(stack: Any, token: str) -> str:
    return stack.principal(token).connection_id


def test_c6_a_reviewed_request_is_audited_from_its_sending_to_its_answer(api, stack, agents):
    crew(api, stack, "review")
    caller = agents.connection("caller")["token"]
    sent = ask(api, caller, "What does clause 3 say?").body
    released = api(
        "POST", "/v1/crews/contracts/release", stack.admin_token, {"message_id": sent["message_id"]}
    )
    assert released.status == 200, released.body
    assert wait_for_request(api, caller, sent, TERMINAL)["state"] == "answered"
    entries = audit(api, stack.admin_token, inbox_id=sent["inbox_id"])
    assert actions(entries) == [
        ("message_sent", None, "connection"),
        ("request_state", "waiting_for_review", "connection"),
        ("released", "in_progress", "connection"),
        ("message_sent", None, "run"),  # the run's output goes out as the reply
        ("request_state", "answered", "run"),
    ]
    asked, waiting, release, reply, answered = entries
    assert asked["actor"]["connection_id"] == conn_id(stack, caller)
    assert asked["kind"] == "request" and asked["message_id"] == sent["message_id"]
    assert waiting["message_id"] == sent["message_id"]
    assert release["actor"]["connection_id"] == conn_id(stack, stack.admin_token)
    run_id = released.body["run_id"]
    assert reply["kind"] == "reply" and reply["actor"]["run_id"] == run_id
    # A run acts as whoever started the work (C3): the caller's connection.
    assert answered["actor"] == {
        "kind": "run",
        "connection_id": conn_id(stack, caller),
        "run_id": run_id,
    }
    # No bodies in the audit: ids, states and kinds only.
    assert "clause" not in str(entries).lower()


def test_c6_decline_cancel_and_expiry_say_who(api, stack, agents):
    crew(api, stack, "review")
    caller = agents.connection("caller")["token"]
    declined = ask(api, caller, "Approve my raise.").body
    reply = api(
        "POST",
        "/v1/crews/contracts/decline",
        stack.admin_token,
        {"message_id": declined["message_id"], "reason": "Not ours to decide."},
    )
    assert reply.status == 200, reply.body
    inbox = declined["inbox_id"]
    cancelled = ask(api, caller, "Clause 9?", inbox_id=inbox).body
    assert api("POST", f"/v1/requests/{cancelled['message_id']}/cancel", caller, {}).status == 200
    expiring = ask(
        api,
        caller,
        "Clause 4?",
        inbox_id=inbox,
        deadline_seconds=limits.REQUEST_DEADLINE_MIN_SECONDS,
    ).body
    stack.clock.advance(limits.REQUEST_DEADLINE_MIN_SECONDS)
    assert tick()["requests_expired"] == 1
    entries = audit(api, stack.admin_token, inbox_id=inbox)
    by_action = {(e["action"], e["message_id"]): e for e in entries}
    decline = by_action[("declined", declined["message_id"])]
    assert decline["state"] == "declined"
    assert decline["actor"]["connection_id"] == conn_id(stack, stack.admin_token)
    assert "Not ours" not in str(decline)  # the reason's words stay out; its length is kept
    cancel = by_action[("cancelled", cancelled["message_id"])]
    assert cancel["actor"] == {
        "kind": "connection",
        "connection_id": conn_id(stack, caller),
        "run_id": None,
    }
    expiry = by_action[("expired", expiring["message_id"])]
    assert expiry["actor"]["kind"] == "platform" and expiry["state"] == "expired"


def test_c6_pause_resume_close_and_delete_are_audited(api, stack, agents):
    crew(api, stack, "review")
    caller = agents.connection("caller")["token"]
    sent = ask(api, caller, "Clause 2?").body
    inbox = sent["inbox_id"]
    assert control(api, caller, inbox, "pause").status == 200
    assert control(api, caller, inbox, "resume").status == 200
    assert control(api, caller, inbox, "close").status == 200
    assert api("DELETE", f"/v1/conversations/{inbox}", stack.admin_token).status == 200
    entries = audit(api, stack.admin_token, inbox_id=inbox)
    assert [a for a, _, _ in actions(entries)][-5:] == [
        "paused",
        "resumed",
        "closed",
        "cancelled",  # closing cancelled the open request, as the closer
        "deleted",
    ]
    paused, resumed, closed, cancelled, deleted = entries[-5:]
    caller_id = conn_id(stack, caller)
    assert {e["actor"]["connection_id"] for e in (paused, resumed, closed, cancelled)} == {
        caller_id
    }
    assert cancelled["message_id"] == sent["message_id"]
    assert deleted["actor"]["connection_id"] == conn_id(stack, stack.admin_token)


def test_c6_a_deleted_crew_closes_its_conversations_as_the_platform(api, stack, agents):
    crew(api, stack, "review")
    caller = agents.connection("caller")["token"]
    sent = ask(api, caller, "Clause 5?").body
    assert api("DELETE", "/v1/crews/contracts", stack.admin_token).status in (200, 204)
    entries = audit(api, stack.admin_token, inbox_id=sent["inbox_id"])
    closed = [e for e in entries if e["action"] == "closed"]
    assert closed and closed[0]["actor"]["kind"] == "platform"
    assert "deleted" in closed[0]["detail"]


def test_c6_admins_page_through_the_log_with_a_signed_cursor(api, stack, agents):
    crew(api, stack, "review")
    caller = agents.connection("caller")["token"]
    inbox = ask(api, caller, "Clause 1?").body["inbox_id"]
    for n in range(2, 5):
        assert ask(api, caller, f"Clause {n}?", inbox_id=inbox).status == 201
    everything = audit(api, stack.admin_token, inbox_id=inbox)
    assert len(everything) == 8  # each request: sent, then waiting for review
    seen, after = [], None
    while True:
        query = {"inbox_id": inbox, "limit": 3} | ({"after": after} if after else {})
        page = api("GET", "/v1/audit", stack.admin_token, query=query)
        assert page.status == 200, page.body
        seen += page.body["entries"]
        after = page.body["next_cursor"]
        if after is None:
            break
    assert [e["entry_id"] for e in seen] == [e["entry_id"] for e in everything]
    # Unfiltered, the account's whole log (the same entries here), oldest first.
    assert [e["at"] for e in audit(api, stack.admin_token)] == sorted(e["at"] for e in seen)
    # A cursor pages only what it was issued for.
    first = api("GET", "/v1/audit", stack.admin_token, query={"inbox_id": inbox, "limit": 1})
    cursor = first.body["next_cursor"]
    elsewhere = api("GET", "/v1/audit", stack.admin_token, query={"after": cursor})
    assert elsewhere.status == 400 and elsewhere.body["error"]["field"] == "after"
    forged = api("GET", "/v1/audit", stack.admin_token, query={"after": cursor[:-2] + "xx"})
    assert forged.status == 400
    assert api("GET", "/v1/audit", stack.admin_token, query={"limit": 0}).status == 400
    for bad in ("ibx_nope", "cnv_nope", "msg_x"):
        refused = api("GET", "/v1/audit", stack.admin_token, query={"inbox_id": bad})
        assert refused.status == 400 and refused.body["error"]["field"] == "inbox_id", bad
    # A conversation id filters the same entries as either of its inboxes.
    conversation = "cnv_" + inbox[4:-1]
    assert audit(api, stack.admin_token, inbox_id=conversation) == everything


def test_c6_only_account_admins_read_it_and_other_accounts_see_nothing(api, stack, agents):
    crew(api, stack, "review")
    caller = agents.connection("caller")["token"]
    inbox = ask(api, caller, "Clause 1?").body["inbox_id"]
    refused = api("GET", "/v1/audit", caller, query={"inbox_id": inbox})
    assert refused.status == 403 and refused.body["error"]["code"] == "forbidden"
    bounded = agents.connection("bounded", scopes=["admin"])["token"]
    other = stack.services.identity.bootstrap("other").token
    unknown_inbox = "ibx_" + "0" * 26 + "a"
    theirs = api("GET", "/v1/audit", other, query={"inbox_id": inbox})
    unknown = api("GET", "/v1/audit", other, query={"inbox_id": unknown_inbox})
    assert theirs.status == unknown.status == 200
    assert theirs.body == unknown.body == {"entries": [], "next_cursor": None}
    assert api("GET", "/v1/audit", other).body["entries"] == []
    assert api("GET", "/v1/audit", bounded).status == 200  # an admin without bounds


def test_c6_messages_between_named_agents_write_no_audit_entries(api, stack, agents):
    sender = agents.named("support")
    agents.named("billing")
    sent = api("POST", "/v1/messages", sender, {"target": "agent:billing", "message": "hi"})
    assert sent.status == 201, sent.body
    assert audit(api, stack.admin_token) == []


def test_c6_the_mcp_crews_tool_pages_the_audit_log(api, stack, agents):
    """Through the official MCP client: the output matches the tool's schema, and a caller
    without admin is refused in the one error shape."""
    import anyio

    from tests.integration.test_mcp_official_client import client_for

    crew(api, stack, "review")
    caller = agents.connection("caller")["token"]
    inbox = ask(api, caller, "Clause 1?").body["inbox_id"]

    async def scenario() -> None:
        async with client_for(stack, stack.admin_token, "auto") as admin:
            first = await admin.call_tool(
                "crews", {"action": "audit", "inbox_id": inbox, "limit": 1}
            )
            assert first.is_error is False, first
            page = first.structured_content
            assert [e["action"] for e in page["entries"]] == ["message_sent"]
            assert "message_sent" in first.content[0].text  # type: ignore[union-attr]
            rest = await admin.call_tool(
                "crews", {"action": "audit", "inbox_id": inbox, "after": page["next_cursor"]}
            )
            assert [e["state"] for e in rest.structured_content["entries"]] == [
                "waiting_for_review"
            ]
            stray = await admin.call_tool("crews", {"action": "audit", "name": "contracts"})
            assert stray.is_error is True
        async with client_for(stack, caller, "auto") as client:
            refused = await client.call_tool("crews", {"action": "audit"})
            assert refused.is_error is True
            assert refused.structured_content["error"]["code"] == "forbidden"

    anyio.run(scenario)


def test_c6_received_while_paused_and_couldnt_complete_are_audited(api, stack, agents):
    import copy

    from tests.integration.crew_support import CONTRACTS

    definition = copy.deepcopy(CONTRACTS)
    definition["adapter"]["rules"].insert(0, {"when": "explode", "fail": "The model broke."})
    assert api("POST", "/v1/crews", stack.admin_token, definition).status == 201
    caller = agents.connection("caller")["token"]
    failed = ask(api, caller, "Please explode.").body
    inbox = failed["inbox_id"]
    assert wait_for_request(api, caller, failed, TERMINAL)["state"] == "couldnt_complete"
    assert control(api, caller, inbox, "pause").status == 200
    held = ask(api, caller, "Clause 3?", inbox_id=inbox).body
    assert control(api, caller, inbox, "resume").status == 200
    assert wait_for_request(api, caller, held, TERMINAL)["state"] == "answered"
    # The entry follows the state it records: wait for it, then read the whole trail.
    deadline = time.monotonic() + 10
    while True:
        entries = audit(api, stack.admin_token, inbox_id=inbox)
        states = [e["state"] for e in entries if e["message_id"] == held["message_id"]]
        if "answered" in states or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    of_failed = [actions([e])[0] for e in entries if e["message_id"] == failed["message_id"]]
    assert of_failed == [
        ("message_sent", None, "connection"),
        ("request_state", "in_progress", "connection"),
        ("request_state", "couldnt_complete", "run"),
    ]
    of_held = [e for e in entries if e["message_id"] == held["message_id"]]
    assert [(e["action"], e["state"]) for e in of_held] == [
        ("message_sent", None),
        ("request_state", "received"),  # the conversation was paused
        ("request_state", "in_progress"),  # started by the resume, as the resumer
        ("request_state", "answered"),
    ]
    assert of_held[2]["actor"]["connection_id"] == conn_id(stack, caller)


def test_c6_a_failed_audit_write_leaves_the_change_standing(api, stack, agents, faults, capsys):
    """A decline is one conditional write; its entry follows it. When that write fails past
    botocore's retries, the decline still stands (and says so), the failure is counted."""
    from tests.support.faults import touches

    crew(api, stack, "review")
    caller = agents.connection("caller")["token"]
    sent = ask(api, caller, "Clause 1?").body
    broken = faults.exhaust(
        "PutItem", "ProvisionedThroughputExceededException", where=touches(pk="AUDIT#")
    )
    declined = api(
        "POST",
        "/v1/crews/contracts/decline",
        stack.admin_token,
        {"message_id": sent["message_id"]},
    )
    assert declined.status == 200, declined.body
    assert broken.injected == faults.max_attempts
    assert '"AuditWritesFailed"' in capsys.readouterr().out
    faults.clear()
    entries = audit(api, stack.admin_token, inbox_id=sent["inbox_id"])
    assert "declined" not in [e["action"] for e in entries]


def test_c6_a_release_and_its_entry_commit_together(api, stack, agents, faults):
    """A release is a transaction: its entry is an item of it, so a release that did not
    commit leaves no entry, and its retry writes one."""
    from tests.support.faults import touches

    crew(api, stack, "review")
    caller = agents.connection("caller")["token"]
    sent = ask(api, caller, "Clause 1?").body
    throttled = faults.exhaust(
        "TransactWriteItems",
        "ProvisionedThroughputExceededException",
        where=touches(pk="AUDIT#"),
    )
    release = {"message_id": sent["message_id"]}
    refused = api("POST", "/v1/crews/contracts/release", stack.admin_token, release)
    assert refused.status == 503, refused.body
    assert throttled.injected == faults.max_attempts
    faults.clear()
    assert "released" not in [
        e["action"] for e in audit(api, stack.admin_token, inbox_id=sent["inbox_id"])
    ]
    assert api("POST", "/v1/crews/contracts/release", stack.admin_token, release).status == 200
    released = [
        e
        for e in audit(api, stack.admin_token, inbox_id=sent["inbox_id"])
        if e["action"] == "released"
    ]
    assert len(released) == 1


def _entries(stack: Any, conversation: str, count: int, detail: str | None = None) -> None:
    """`count` entries of `conversation` in the admin's account, a millisecond apart, written
    as the services write them (seeded: moto slows with a request per entry)."""
    from agentworks.audit.audit_store import AuditStore
    from agentworks.audit.entries import PLATFORM, AuditEntry

    store = AuditStore(stack.client, stack.settings.work_table)
    account = stack.principal(stack.admin_token).account_id
    for _ in range(count):
        stack.clock.advance(0.001)
        entry = AuditEntry(account, conversation, "closed", PLATFORM, detail=detail)
        store.put(entry, int(stack.clock.now() * 1000))


def _conversation(stack: Any) -> str:
    from agentworks.ids import new_ulid

    stack.clock.advance(0.001)
    return new_ulid(stack.clock)


def test_c6_a_page_holds_limit_entries_and_the_next_page_the_rest(api, stack):
    """AUDIT_PAGE_MAX entries of more on a page, AUDIT_PAGE_DEFAULT without a limit."""
    _entries(stack, _conversation(stack), limits.AUDIT_PAGE_MAX + 1)
    admin = stack.admin_token
    full = api("GET", "/v1/audit", admin, query={"limit": limits.AUDIT_PAGE_MAX}).body
    assert len(full["entries"]) == limits.AUDIT_PAGE_MAX and full["next_cursor"]
    rest = api("GET", "/v1/audit", admin, query={"after": full["next_cursor"]}).body
    assert len(rest["entries"]) == 1 and rest["next_cursor"] is None
    assert rest["entries"][0]["at"] > full["entries"][-1]["at"]
    assert len(audit(api, admin)) == limits.AUDIT_PAGE_DEFAULT
    refused = api("GET", "/v1/audit", admin, query={"limit": limits.AUDIT_PAGE_MAX + 1})
    assert refused.status == 400, refused.body


def test_c6_a_filtered_read_examines_audit_filter_pages_then_hands_back_a_cursor(api, stack):
    """With a conversation filter, one read looks at AUDIT_FILTER_PAGES pages of the
    account's entries: an entry just past them comes on the next read, not lost."""
    admin = stack.admin_token
    other, mine = _conversation(stack), _conversation(stack)
    _entries(stack, other, limits.AUDIT_FILTER_PAGES - 1)
    _entries(stack, mine, 1)
    query = {"inbox_id": f"cnv_{mine}", "limit": 1}
    assert len(api("GET", "/v1/audit", admin, query=query).body["entries"]) == 1

    # The next conversation's entry has AUDIT_FILTER_PAGES entries of others before it: one
    # read examines those and hands back an empty page with a cursor to go on.
    later = _conversation(stack)
    _entries(stack, later, 1)
    query = {"inbox_id": f"cnv_{later}", "limit": 1}
    first = api("GET", "/v1/audit", admin, query=query).body
    assert first["entries"] == [] and first["next_cursor"]
    found = api("GET", "/v1/audit", admin, query={**query, "after": first["next_cursor"]}).body
    assert [e["conversation_id"] for e in found["entries"]] == [f"cnv_{later}"]


def test_c6_an_entrys_detail_is_cut_at_its_bound(api, stack):
    conversation = _conversation(stack)
    _entries(stack, conversation, 1, detail="d" * limits.AUDIT_DETAIL_MAX_CHARS)
    _entries(stack, conversation, 1, detail="e" * (limits.AUDIT_DETAIL_MAX_CHARS + 1))
    details = [e["detail"] for e in audit(api, stack.admin_token)]
    assert details == ["d" * limits.AUDIT_DETAIL_MAX_CHARS, "e" * limits.AUDIT_DETAIL_MAX_CHARS]


def test_c6_an_entry_is_shown_for_audit_retention_seconds(api, stack):
    _entries(stack, _conversation(stack), 1)
    stack.clock.advance(limits.AUDIT_RETENTION_SECONDS - 1)
    assert len(audit(api, stack.admin_token)) == 1
    stack.clock.advance(1)
    assert audit(api, stack.admin_token) == []  # TTL lags: a present entry is not shown
