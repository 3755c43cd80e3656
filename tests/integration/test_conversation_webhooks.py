"""Outbound webhooks for conversation events (C6): subscribed per account to agent asked,
request needs review, request answered and conversation closed; fed by the work table's
stream of new audit entries to the webhooks function; signed like workflow webhooks,
retried with backoff (the test's clock), each attempt visible; none for a conversation
with a private agent, none for an event nobody subscribed to."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentworks import limits
from agentworks.identity.models import ALL_SCOPES
from agentworks.workflows.webhooks import SIGNATURE_HEADER, verify
from tests.integration.test_conversation_controls import control
from tests.integration.test_conversation_requests import TERMINAL, ask, wait_for_request
from tests.integration.test_crew_messages import crew
from tests.integration.test_crew_owners import private_crew
from tests.integration.test_write_faults import items
from tests.support.faults import touches
from tests.support.handlers import LambdaContext, load_handler
from tests.support.signature_oracle import documented_signature_matches
from tests.support.streams import StreamReader

EVERY_EVENT = ["agent_asked", "request_needs_review", "request_answered", "conversation_closed"]


class Receiver:
    """A local HTTP endpoint: answers the statuses queued in `answers` (then 200), and
    keeps what it received."""

    def __init__(self) -> None:
        self.received: list[tuple[dict[str, str], bytes]] = []
        self.answers: list[int] = []
        self.location = ""  # where a 3xx answer points
        # A path of its own: a port freed by another test's receiver is given out again, and
        # that test's stack may still be retrying a delivery to it.
        self.path = f"/hook-{uuid.uuid4().hex}"
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.path != receiver.path:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                receiver.received.append(({k.lower(): v for k, v in self.headers.items()}, body))
                status = receiver.answers.pop(0) if receiver.answers else 200
                self.send_response(status)
                if receiver.location:
                    self.send_header("Location", receiver.location)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}{self.path}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def events(self) -> list[dict]:
        return [json.loads(body) for _, body in self.received]


@pytest.fixture
def receiver(allow_loopback_webhooks: None) -> Iterator[Receiver]:
    """A receiver on 127.0.0.1, allowed as `agentworks dev --allow-loopback-webhooks` does."""
    found = Receiver()
    yield found
    found.server.shutdown()


@pytest.fixture
def webhooks(stack: Any) -> Iterator[Any]:
    """The webhooks function fed from the work table's stream on demand (Lambda's poller
    on AWS; `agentworks dev`'s locally), with the test's clock and signing key."""
    from agentworks import runtime
    from agentworks.signing import Signer

    runtime.install_webhook_delivery(
        runtime.build_webhook_delivery(
            stack.settings, stack.client, Signer(b"test-signing-key-0123456789"), stack.clock
        )
    )
    stream = StreamReader(stack.client, stack.settings.work_table)

    def deliver() -> dict:
        return load_handler("webhooks").handler({"Records": stream.records()}, LambdaContext())

    try:
        yield deliver
    finally:
        runtime.install_webhook_delivery(None)


def subscribe(api: Any, token: str, url: str, events: list[str]) -> dict:
    made = api("POST", "/v1/webhooks", token, {"url": url, "events": events})
    assert made.status == 201, made.body
    return made.body


def account_key(api: Any, token: str) -> str:
    reply = api("GET", "/v1/workflows/webhook-key", token)
    assert reply.status == 200, reply.body
    return reply.body["key"]


def test_c6_events_are_signed_and_carry_ids_never_bodies(api, stack, agents, receiver, webhooks):
    hook = subscribe(api, stack.admin_token, receiver.url, EVERY_EVENT)
    crew(api, stack, "review")
    caller = agents.connection("caller")["token"]
    sent = ask(api, caller, "What does clause 3 say?").body
    release = {"message_id": sent["message_id"]}
    assert api("POST", "/v1/crews/contracts/release", stack.admin_token, release).status == 200
    assert wait_for_request(api, caller, sent, TERMINAL)["state"] == "answered"
    assert control(api, caller, sent["inbox_id"], "close").status == 200
    report = webhooks()
    assert report["sent"] == 4 and report["failed"] == 0, report
    events = receiver.events()
    assert [e["event"] for e in events] == [
        "agent_asked",
        "request_needs_review",
        "request_answered",
        "conversation_closed",
    ]
    assert {e["conversation_id"] for e in events} == {sent["conversation_id"]}
    assert events[0]["message_id"] == sent["message_id"]
    key = account_key(api, stack.admin_token)
    for headers, body in receiver.received:
        signed = headers[SIGNATURE_HEADER.lower()]
        assert verify(key, signed, body, now=stack.clock.now(), max_age=60)
        assert not verify("another-key", signed, body)
        assert documented_signature_matches(key, signed, body)  # as documented, not as coded
        assert not documented_signature_matches("another-key", signed, body)
        assert b"clause" not in body.lower()
    listed = api("GET", f"/v1/webhooks/{hook['webhook_id']}/deliveries", stack.admin_token)
    assert listed.status == 200, listed.body
    assert [d["state"] for d in listed.body["deliveries"]] == ["delivered"] * 4
    # A retried stream batch sends nothing twice: each delivery was claimed first.
    assert webhooks()["sent"] == 0 and len(receiver.received) == 4


def test_c6_a_delivery_whose_claim_answer_was_lost_is_still_sent_once(
    api, stack, agents, receiver, webhooks, faults
):
    """The claim's put committed and botocore sent it again after a 500: the retry's
    condition finds the delivery's item — this claim's own — so it is sent, not skipped."""
    subscribe(api, stack.admin_token, receiver.url, ["agent_asked"])
    crew(api, stack, "review")
    sent = ask(api, agents.connection("caller")["token"], "What does clause 3 say?").body
    lost = faults.fail(
        "PutItem", "InternalServerError", where=touches(sk="DLV#"), commit_first=True
    )
    report = webhooks()
    assert lost.injected == 1
    assert report["sent"] == 1 and report["failed"] == 0, report
    assert [e["message_id"] for e in receiver.events()] == [sent["message_id"]]
    # A retried stream batch still sends nothing twice.
    assert webhooks()["sent"] == 0 and len(receiver.received) == 1


def test_c6_a_failing_receiver_is_retried_with_backoff_and_each_attempt_shows(
    api, stack, agents, receiver, webhooks
):
    hook = subscribe(api, stack.admin_token, receiver.url, ["agent_asked"])
    crew(api, stack, "review")
    caller = agents.connection("caller")["token"]
    receiver.answers = [500, 503]
    before = stack.clock.now()
    ask(api, caller, "Clause 1?")
    assert webhooks()["sent"] == 1
    assert len(receiver.received) == 3
    # Paused 1 s, then 2 s (the test's clock is what the function sleeps on).
    pauses = limits.CONVERSATION_WEBHOOK_BACKOFF_SECONDS * 3
    assert stack.clock.now() - before >= pauses
    [delivery] = api(
        "GET", f"/v1/webhooks/{hook['webhook_id']}/deliveries", stack.admin_token
    ).body["deliveries"]
    assert delivery["state"] == "delivered" and delivery["event"] == "agent_asked"
    assert [a["status_code"] for a in delivery["attempts"]] == [500, 503, 200]
    assert delivery["attempts"][0]["error"] == "HTTP 500"
    assert delivery["attempts"][-1]["error"] is None


def test_c6_a_delivery_is_shown_for_its_retention_and_not_after(
    api, stack, agents, receiver, webhooks
):
    """A delivery is kept CONVERSATION_WEBHOOK_DELIVERY_SECONDS from when it was made: shown
    until its last second, then no longer, though DynamoDB (up to two days late) and the
    test's store still hold the item."""
    hook = subscribe(api, stack.admin_token, receiver.url, ["agent_asked"])
    crew(api, stack, "review")
    ask(api, agents.connection("caller")["token"], "Clause 1?")
    assert webhooks()["sent"] == 1
    path = f"/v1/webhooks/{hook['webhook_id']}/deliveries"
    [item] = items(stack, stack.settings.work_table, pk="WEBHOOK#", sk="DLV#")
    made_s = int(item["created_at"]) // 1000
    assert int(item["expires_ttl"]) == made_s + limits.CONVERSATION_WEBHOOK_DELIVERY_SECONDS
    last_second = made_s + limits.CONVERSATION_WEBHOOK_DELIVERY_SECONDS - 1
    stack.clock.advance(last_second - stack.clock.now())
    assert len(api("GET", path, stack.admin_token).body["deliveries"]) == 1
    stack.clock.advance(1)
    assert api("GET", path, stack.admin_token).body["deliveries"] == []
    assert items(stack, stack.settings.work_table, pk="WEBHOOK#", sk="DLV#") == [item]


def test_c6_a_receiver_that_never_answers_2xx_fails_after_every_attempt(
    api, stack, agents, receiver, webhooks
):
    hook = subscribe(api, stack.admin_token, receiver.url, ["request_needs_review"])
    crew(api, stack, "review")
    receiver.answers = [500] * limits.CONVERSATION_WEBHOOK_ATTEMPTS
    ask(api, agents.connection("caller")["token"], "Clause 1?")
    assert webhooks()["failed"] == 1
    [delivery] = api(
        "GET", f"/v1/webhooks/{hook['webhook_id']}/deliveries", stack.admin_token
    ).body["deliveries"]
    assert delivery["state"] == "failed"
    assert len(delivery["attempts"]) == limits.CONVERSATION_WEBHOOK_ATTEMPTS


def test_c6_none_for_a_conversation_with_a_private_agent(api, stack, agents, receiver, webhooks):
    owner = agents.connection("owner", scopes=sorted(ALL_SCOPES))["token"]
    subscribe(api, stack.admin_token, receiver.url, EVERY_EVENT)
    private_crew(api, owner)
    sent = ask(api, owner, "Clause 3?", target="crew:secret-counsel").body
    assert control(api, owner, sent["inbox_id"], "close").status == 200
    report = webhooks()
    assert report["skipped_private"] >= 2 and report["sent"] == 0, report
    assert receiver.received == []


def test_c6_none_for_events_nobody_subscribed_to(api, stack, agents, receiver, webhooks):
    subscribe(api, stack.admin_token, receiver.url, ["conversation_closed"])
    crew(api, stack, "on")
    caller = agents.connection("caller")["token"]
    sent = ask(api, caller, "Clause 3?").body
    assert wait_for_request(api, caller, sent, TERMINAL)["state"] == "answered"
    assert webhooks()["sent"] == 0 and receiver.received == []
    assert control(api, caller, sent["inbox_id"], "close").status == 200
    assert webhooks()["sent"] == 1
    assert [e["event"] for e in receiver.events()] == ["conversation_closed"]


def test_c6_subscriptions_are_account_admins_and_bounded(api, stack, agents, receiver):
    caller = agents.connection("caller")["token"]
    body = {"url": receiver.url, "events": ["agent_asked"]}
    assert api("POST", "/v1/webhooks", caller, body).status == 403
    assert api("GET", "/v1/webhooks", caller).status == 403
    made = [subscribe(api, stack.admin_token, receiver.url, ["agent_asked"])]
    made += [
        subscribe(api, stack.admin_token, f"https://example.com/{n}", EVERY_EVENT)
        for n in range(1, limits.CONVERSATION_WEBHOOKS_MAX)
    ]
    full = api("POST", "/v1/webhooks", stack.admin_token, body)
    assert full.status == 409, full.body
    listed = api("GET", "/v1/webhooks", stack.admin_token).body
    assert len(listed["webhooks"]) == limits.CONVERSATION_WEBHOOKS_MAX
    assert listed["signature_header"] == SIGNATURE_HEADER
    # Another account's webhook reads like an unknown one.
    other = stack.services.identity.bootstrap("other").token
    webhook_id = made[0]["webhook_id"]
    unknown = api("DELETE", "/v1/webhooks/whk_" + "0" * 26, other)
    for path in (f"/v1/webhooks/{webhook_id}", f"/v1/webhooks/{webhook_id}/deliveries"):
        method = "DELETE" if path.count("/") == 3 else "GET"
        theirs = api(method, path, other)
        assert (theirs.status, theirs.body) == (unknown.status, unknown.body) == (404, unknown.body)
    assert api("GET", "/v1/webhooks", other).body["webhooks"] == []
    # Deleting frees a place.
    assert api("DELETE", f"/v1/webhooks/{webhook_id}", stack.admin_token).status == 200
    assert api("DELETE", f"/v1/webhooks/{webhook_id}", stack.admin_token).status == 404
    assert api("POST", "/v1/webhooks", stack.admin_token, body).status == 201


@pytest.mark.parametrize(
    "body",
    [
        {"url": "http://example.com/hook", "events": ["agent_asked"]},  # http off this machine
        {"url": "ftp://127.0.0.1/hook", "events": ["agent_asked"]},
        {"url": "https://user:pw@example.com/", "events": ["agent_asked"]},
        {"url": "https://example.com/", "events": []},
        {"url": "https://example.com/", "events": ["run_started"]},
        {"url": "https://example.com/", "events": ["agent_asked"], "secret": "x"},
        {
            "url": "https://example.com/" + "a" * limits.CONVERSATION_WEBHOOK_URL_MAX_CHARS,
            "events": ["agent_asked"],
        },
        {"events": ["agent_asked"]},
    ],
)
def test_c6_a_bad_subscription_is_a_400_never_a_500(api, stack, body):
    refused = api("POST", "/v1/webhooks", stack.admin_token, body)
    assert refused.status == 400, refused.body
    assert refused.body["error"]["code"] == "invalid_request"


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    body=st.dictionaries(
        st.sampled_from(["url", "events", "extra"]),
        st.one_of(
            st.text(max_size=40),
            st.lists(st.text(max_size=20), max_size=5),
            st.integers(),
            st.none(),
        ),
    )
)
def test_c6_any_subscription_body_is_answered_without_a_500(api, stack, body):
    reply = api("POST", "/v1/webhooks", stack.admin_token, body)
    assert reply.status in (201, 400, 409), reply.body


def test_c6_the_event_source_passes_only_new_audit_entries(stack, webhooks):
    """The template's FilterCriteria (applied by Lambda on AWS, by `agentworks dev`'s poller
    locally): of the work table's writes, only INSERTs under AUDIT# reach the function."""
    import json as json_module

    from agentworks_local.stream_poller import matches
    from agentworks_local.template import load_template

    event = load_template()["Resources"]["WebhooksFunction"]["Properties"]["Events"]
    [pattern] = [
        json_module.loads(f["Pattern"])
        for f in event["AuditEntries"]["Properties"]["FilterCriteria"]["Filters"]
    ]

    def record(name: str, pk: str) -> dict:
        return {"eventName": name, "dynamodb": {"Keys": {"pk": {"S": pk}, "sk": {"S": "x"}}}}

    assert matches(pattern, record("INSERT", "AUDIT#acct_1"))
    assert not matches(pattern, record("MODIFY", "AUDIT#acct_1"))
    assert not matches(pattern, record("REMOVE", "AUDIT#acct_1"))  # TTL deletes
    assert not matches(pattern, record("INSERT", "CREWCONV#x"))
    assert not matches(pattern, record("INSERT", "WEBHOOK#acct_1"))  # its own writes


def test_c6_webhooks_are_signed_with_the_accounts_one_webhook_key():
    from agentworks.conversation_webhooks.delivery import ACCOUNT_WEBHOOK_PURPOSE
    from agentworks.workflows.webhooks import WEBHOOK_PURPOSE

    assert ACCOUNT_WEBHOOK_PURPOSE == WEBHOOK_PURPOSE  # `agentworks workflow webhook-key`


# ---- Checked when used, not only when saved (issue 24 §3) ----


def test_c6_a_url_that_resolves_private_by_delivery_time_is_refused_then(
    api, stack, agents, webhooks, monkeypatch
):
    """Saved while its name answered a public address; by the delivery it answers the
    metadata service's: one attempt, `refused address`, nothing connected to."""
    import socket

    from tests.unit.test_outbound_urls import PUBLIC_V4, Resolver

    dns = Resolver({"hooks.example.test": [PUBLIC_V4]})
    monkeypatch.setattr(socket, "getaddrinfo", dns)
    hook = subscribe(api, stack.admin_token, "https://hooks.example.test/aw", ["agent_asked"])
    crew(api, stack, "review")
    dns.answers["hooks.example.test"] = ["169.254.169.254"]
    connected: list[Any] = []
    monkeypatch.setattr(socket.socket, "connect", lambda _s, a: connected.append(a))
    ask(api, agents.connection("caller")["token"], "Clause 1?")
    assert webhooks()["failed"] == 1
    [delivery] = api(
        "GET", f"/v1/webhooks/{hook['webhook_id']}/deliveries", stack.admin_token
    ).body["deliveries"]
    assert delivery["state"] == "failed"
    assert [(a["status_code"], a["error"]) for a in delivery["attempts"]] == [
        (None, "refused address")
    ]  # a refused URL is not retried
    assert connected == []


def test_c6_a_redirect_is_recorded_never_followed(api, stack, agents, receiver, webhooks):
    """A receiver answering 302 to another (both on this machine, allowed by the local
    stack's option): the second gets nothing, each attempt reads `HTTP 302`."""
    first = Receiver()
    try:
        hook = subscribe(api, stack.admin_token, first.url, ["agent_asked"])
        first.answers = [302] * limits.CONVERSATION_WEBHOOK_ATTEMPTS
        first.location = receiver.url
        crew(api, stack, "review")
        ask(api, agents.connection("caller")["token"], "Clause 1?")
        assert webhooks()["failed"] == 1
    finally:
        first.server.shutdown()
    [delivery] = api(
        "GET", f"/v1/webhooks/{hook['webhook_id']}/deliveries", stack.admin_token
    ).body["deliveries"]
    attempts = [(a["status_code"], a["error"]) for a in delivery["attempts"]]
    assert attempts == [(302, "HTTP 302")] * limits.CONVERSATION_WEBHOOK_ATTEMPTS
    assert len(first.received) == limits.CONVERSATION_WEBHOOK_ATTEMPTS
    assert receiver.received == []  # the webhooks function returned: nothing followed


def test_c6_a_failed_connection_shows_its_category_never_the_library_text(
    api, stack, agents, webhooks, allow_loopback_webhooks
):
    with socket_closed() as port:
        hook = subscribe(api, stack.admin_token, f"http://127.0.0.1:{port}/h", ["agent_asked"])
    crew(api, stack, "review")
    ask(api, agents.connection("caller")["token"], "Clause 1?")
    assert webhooks()["failed"] == 1
    [delivery] = api(
        "GET", f"/v1/webhooks/{hook['webhook_id']}/deliveries", stack.admin_token
    ).body["deliveries"]
    errors = {a["error"] for a in delivery["attempts"]}
    assert errors == {"connection failed"}, errors  # never "[Errno 111] Connection refused"
    assert len(delivery["attempts"]) == limits.CONVERSATION_WEBHOOK_ATTEMPTS


@contextmanager
def socket_closed() -> Iterator[int]:
    """A port on 127.0.0.1 nothing listens on (bound, then closed)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    yield port


def test_c6_a_subscription_shows_its_newest_deliveries_each_sent_within_the_timeout(
    api, stack, agents, receiver, webhooks, monkeypatch
):
    """C6: a subscription's view shows its newest CONVERSATION_WEBHOOK_DELIVERIES_SHOWN
    deliveries, newest first; each attempt is bounded by CONVERSATION_WEBHOOK_TIMEOUT_SECONDS.

    The shown bound is lowered to 2 for speed: the view reads
    `limits.CONVERSATION_WEBHOOK_DELIVERIES_SHOWN` when asked, so the rule is the same."""
    from agentworks.conversation_webhooks import delivery

    monkeypatch.setattr(limits, "CONVERSATION_WEBHOOK_DELIVERIES_SHOWN", 2)
    timeouts: list[float] = []
    real_post = delivery.post_signed

    def timed(url: str, keys: Any, body: bytes, timestamp: int, timeout: float) -> Any:
        timeouts.append(timeout)
        return real_post(url, keys, body, timestamp, timeout)

    monkeypatch.setattr(delivery, "post_signed", timed)
    hook = subscribe(api, stack.admin_token, receiver.url, ["agent_asked"])
    crew(api, stack, "review")
    caller = agents.connection("caller")["token"]
    sent = []
    for n in range(limits.CONVERSATION_WEBHOOK_DELIVERIES_SHOWN + 1):
        stack.clock.advance(1)
        sent.append(ask(api, caller, f"Clause {n}?").body["message_id"])
    assert webhooks()["sent"] == len(sent)
    shown = api("GET", f"/v1/webhooks/{hook['webhook_id']}/deliveries", stack.admin_token)
    assert [d["message_id"] for d in shown.body["deliveries"]] == sent[:0:-1]
    assert timeouts == [limits.CONVERSATION_WEBHOOK_TIMEOUT_SECONDS] * len(sent)
