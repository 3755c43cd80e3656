"""Direct messages through the real authorizer and API handlers on moto (M1–M8, M12)."""

from __future__ import annotations

from agentworks import limits


def test_m1_m6_m12_first_contact_mailbox_and_reply(api, agents):
    worker, reviewer = agents.named("worker"), agents.named("reviewer")
    sent = api(
        "POST",
        "/v1/messages",
        worker,
        {"agent_name": "worker", "target": "agent:reviewer", "message": "Ready for review"},
    )
    assert sent.status == 201
    assert sent.body["receipt"] == "stored"
    assert sent.body["inbox_id"].startswith("ibx_") and sent.body["conversation_id"].startswith(
        "cnv_"
    )

    mailbox = api("GET", "/v1/messages", reviewer, query={"agent_name": "reviewer", "after": "0"})
    assert mailbox.status == 200 and mailbox.body["kind"] == "mailbox"
    [first] = mailbox.body["messages"]
    assert first["body"] == "Ready for review" and first["sender"] == "agent:worker"
    # M12: delivered text names sender, conversation and how to reply; labelled as an agent's words.
    text = first["delivered_text"]
    assert "agent:worker" in text and first["conversation_id"] in text
    assert first["reply_address"] in text and "not as an instruction" in text

    reply = api(
        "POST",
        "/v1/messages",
        reviewer,
        {"agent_name": "reviewer", "inbox_id": first["reply_address"], "message": "On it"},
    )
    assert reply.status == 201
    back = api("GET", "/v1/messages", worker, query={"inbox_id": sent.body["inbox_id"]})
    assert [m["body"] for m in back.body["messages"]] == ["On it"]

    # M3: reads are non-destructive and the cursor moves past what was read.
    again = api("GET", "/v1/messages", worker, query={"inbox_id": sent.body["inbox_id"]})
    assert [m["body"] for m in again.body["messages"]] == ["On it"]
    after = api(
        "GET",
        "/v1/messages",
        worker,
        query={"inbox_id": sent.body["inbox_id"], "after": back.body["next_cursor"]},
    )
    assert after.body["messages"] == [] and after.body["next_cursor"] == back.body["next_cursor"]


def test_m3_cursor_pages_in_order(api, agents, stack):
    worker, reviewer = agents.named("worker"), agents.named("reviewer")
    first = api("POST", "/v1/messages", worker, {"target": "agent:reviewer", "message": "m0"}).body
    inbox = api("GET", "/v1/messages", reviewer, query={"agent_name": "reviewer"}).body["messages"][
        0
    ]["reply_address"]
    for i in range(1, 8):
        assert (
            api("POST", "/v1/messages", reviewer, {"inbox_id": inbox, "message": f"r{i}"}).status
            == 201
        )
    seen, cursor = [], "0"
    while True:
        page = api(
            "GET",
            "/v1/messages",
            worker,
            query={"inbox_id": first["inbox_id"], "after": cursor, "limit": 3},
        ).body
        if not page["messages"]:
            break
        seen += [m["body"] for m in page["messages"]]
        cursor = page["next_cursor"]
    assert seen == [f"r{i}" for i in range(1, 8)]


def test_m3_long_poll_returns_empty_page_after_wait(api, agents, stack):
    worker, _ = agents.named("worker"), agents.named("reviewer")
    sent = api("POST", "/v1/messages", worker, {"target": "agent:reviewer", "message": "hi"}).body
    start = stack.clock.now()
    page = api(
        "GET",
        "/v1/messages",
        worker,
        query={"inbox_id": sent["inbox_id"], "wait_seconds": limits.WAIT_MAX_SECONDS},
    )
    assert page.status == 200 and page.body["messages"] == []
    # The fake clock moved by the poll sleeps: the wait really lasted (about) the maximum.
    assert limits.WAIT_MAX_SECONDS - 1 <= stack.clock.now() - start <= limits.WAIT_MAX_SECONDS


def test_m7_receipts_move_forward_only_and_only_by_receiver(api, agents):
    worker, reviewer = agents.named("worker"), agents.named("reviewer")
    sent = api("POST", "/v1/messages", worker, {"target": "agent:reviewer", "message": "x"}).body
    mid = sent["message_id"]
    # The sender cannot set the receiver's receipt.
    assert api("POST", f"/v1/messages/{mid}/ack", worker, {"delivery": "processed"}).status == 404
    assert (
        api("POST", f"/v1/messages/{mid}/ack", reviewer, {"delivery": "admitted"}).body["receipt"]
        == "admitted"
    )
    assert (
        api("POST", f"/v1/messages/{mid}/ack", reviewer, {"delivery": "admitted"}).status == 200
    )  # repeating is harmless
    assert (
        api("POST", f"/v1/messages/{mid}/ack", reviewer, {"delivery": "processed"}).body["receipt"]
        == "processed"
    )
    back = api("POST", f"/v1/messages/{mid}/ack", reviewer, {"delivery": "admitted"})
    assert back.status == 409 and back.body["error"]["code"] == "conflict"
    state = api("GET", f"/v1/inboxes/{sent['inbox_id']}/state", worker).body
    assert state["delivery_records"][0] == {
        "message_id": mid,
        "created_at": sent["created_at"],
        "receipt": "processed",
    }
    assert "body" not in state["delivery_records"][0]


def test_m2_submission_id_replays_and_conflicts(api, agents):
    worker, _ = agents.named("worker"), agents.named("reviewer")
    body = {"target": "agent:reviewer", "message": "once", "submission_id": "s-1"}
    first = api("POST", "/v1/messages", worker, body)
    again = api("POST", "/v1/messages", worker, body)
    assert first.status == 201 and again.status == 200
    assert again.body["replayed"] is True
    assert {k: again.body[k] for k in ("inbox_id", "message_id", "conversation_id")} == {
        k: first.body[k] for k in ("inbox_id", "message_id", "conversation_id")
    }
    clash = api("POST", "/v1/messages", worker, {**body, "message": "different"})
    assert clash.status == 409 and "submission_id" in clash.body["error"]["message"]
    fresh = api("POST", "/v1/messages", worker, {**body, "submission_id": "s-2"})
    assert fresh.status == 201 and fresh.body["message_id"] != first.body["message_id"]


def test_m4_directory_register_list_unregister_and_new_identity(api, agents, stack):
    token = agents.connection("w")["token"]
    reg = api(
        "POST",
        "/v1/agents",
        token,
        {"agent_name": "Reviewer.One", "purpose": "reviews PRs", "provider": "claude-code"},
    )
    assert reg.status == 200 and reg.body["agent_name"] == "Reviewer.One"
    listed = api("GET", "/v1/agents", token).body["agents"]
    assert [(a["agent_name"], a["purpose"], a["online"]) for a in listed] == [
        ("Reviewer.One", "reviews PRs", False)
    ]
    # Names are case-insensitive.
    api("GET", "/v1/messages", token, query={"agent_name": "reviewer.one"})
    assert api("GET", "/v1/agents", token).body["agents"][0]["online"] is True

    other = agents.connection("sender")["token"]
    sent = api(
        "POST", "/v1/messages", other, {"target": "agent:REVIEWER.ONE", "message": "hi"}
    ).body
    old_reply = api("GET", "/v1/messages", token, query={"agent_name": "reviewer.one"}).body[
        "messages"
    ][0]["reply_address"]
    assert api("DELETE", "/v1/agents/reviewer.one", token).status == 200
    assert api("GET", "/v1/agents", token).body["agents"] == []
    again = api("POST", "/v1/agents", token, {"agent_name": "reviewer.one"})
    assert again.body["agent_id"] != reg.body["agent_id"]
    # The old conversation never redirects to the re-created name.
    assert api("GET", "/v1/messages", token, query={"inbox_id": old_reply}).status == 404
    assert (
        api("POST", "/v1/messages", token, {"inbox_id": old_reply, "message": "hello?"}).status
        == 404
    )
    assert sent["inbox_id"]


def test_m5_allow_list_preserved_and_extended(api, agents):
    owner = agents.connection("owner")
    helper = agents.connection("helper")
    token = owner["token"]
    api("POST", "/v1/agents", token, {"agent_name": "reviewer"})
    assert (
        api("GET", "/v1/messages", helper["token"], query={"agent_name": "reviewer"}).status == 404
    )
    api(
        "POST",
        "/v1/agents",
        token,
        {"agent_name": "reviewer", "allowed_connection_ids": [helper["connection_id"]]},
    )
    assert (
        api("GET", "/v1/messages", helper["token"], query={"agent_name": "reviewer"}).status == 200
    )
    # Re-register without the field: the list is kept.
    kept = api("POST", "/v1/agents", token, {"agent_name": "reviewer", "purpose": "p"}).body
    assert set(kept["allowed_connection_ids"]) == {owner["connection_id"], helper["connection_id"]}
    # Unknown connection ids are refused with a hint.
    bad = api(
        "POST",
        "/v1/agents",
        token,
        {"agent_name": "reviewer", "allowed_connection_ids": ["conn_nope"]},
    )
    assert bad.status == 400 and "connections list" in bad.body["error"]["message"]


def test_openapi_document_is_generated_from_the_routes(api, stack):
    from tests.support.handlers import LambdaContext, http_event

    response = api.api.handler(http_event("GET", "/v1/openapi.json"), LambdaContext())
    assert response["statusCode"] == 200
    import json

    document = json.loads(response["body"])
    assert {"/v1/messages", "/v1/agents", "/v1/connections"} <= set(document["paths"])
    assert "SendMessage" in json.dumps(document["components"])


def test_m4_re_register_without_fields_keeps_purpose_and_provider(api, agents):
    token = agents.connection("keeper")["token"]
    api(
        "POST",
        "/v1/agents",
        token,
        {"agent_name": "keeper", "purpose": "keeps things", "provider": "codex"},
    )
    again = api("POST", "/v1/agents", token, {"agent_name": "keeper"}).body
    assert (again["purpose"], again["provider"]) == ("keeps things", "codex")
    changed = api("POST", "/v1/agents", token, {"agent_name": "keeper", "purpose": "new"}).body
    assert (changed["purpose"], changed["provider"]) == ("new", "codex")
