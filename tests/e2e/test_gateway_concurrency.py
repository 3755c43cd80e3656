"""The local gateway under a burst of connections (`agentworks dev` over real TCP): 60
racing senders keep the M11 rate limit exact, and 128 connections open at once are all
answered. Every client opens its own connection at the same moment, so the listen backlog
(not only the handlers) is what is tested: a short one drops or resets some of them.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass
from http.client import HTTPConnection, HTTPException
from typing import Any
from urllib.parse import urlencode, urlsplit

import pytest

from agentworks import limits
from tests.e2e.api_helpers import api as _call
from tests.e2e.api_helpers import named_agent, read_all, seq_of
from tests.e2e.conftest import LocalStack

pytestmark = pytest.mark.e2e

SENDERS = 60
OPEN_CONNECTIONS = 128
# A connect the kernel answers at once takes milliseconds; a SYN dropped by a full accept
# queue is retransmitted after 1 s, so a slower connect means the backlog overflowed.
CONNECT_SECONDS = 0.9
# The racers retry against each other in the stack (one commit per round), so the last
# answer comes after seconds, not milliseconds.
TIMEOUT = 120.0


@dataclass
class Outcome:
    """One client's answer, or why it got none (a reset, a timeout …)."""

    status: int | None = None
    body: Any = None
    headers: dict[str, str] | None = None
    error: str | None = None
    connect_seconds: float = 0.0


def _connection(local_stack: LocalStack) -> HTTPConnection:
    split = urlsplit(local_stack.url)
    return HTTPConnection(split.hostname or "127.0.0.1", split.port, timeout=TIMEOUT)


def _headers(token: str, body: bytes | None) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {token}", "Connection": "close"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    return headers


def _answer(connection: HTTPConnection, outcome: Outcome) -> None:
    response = connection.getresponse()
    raw = response.read()
    outcome.status = response.status
    outcome.headers = {k.lower(): v for k, v in response.getheaders()}
    outcome.body = json.loads(raw) if raw else None


def _failed(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def _race(local_stack: LocalStack, requests: list[tuple[str, str, str, Any]]) -> list[Outcome]:
    """Each (method, path, token, body) from its own thread over its own new TCP connection,
    all released together by a barrier (the connect happens after it)."""
    outcomes = [Outcome() for _ in requests]
    barrier = threading.Barrier(len(requests))

    def run(index: int) -> None:
        method, path, token, body = requests[index]
        outcome = outcomes[index]
        data = None if body is None else json.dumps(body).encode()
        connection = _connection(local_stack)
        try:
            barrier.wait(TIMEOUT)
            started = time.monotonic()
            connection.connect()
            outcome.connect_seconds = time.monotonic() - started
            connection.request(method, path, body=data, headers=_headers(token, data))
            _answer(connection, outcome)
        except (OSError, HTTPException, ValueError) as error:
            outcome.error = _failed(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(requests))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT * 2)
    assert not any(thread.is_alive() for thread in threads)
    return outcomes


def _assert_all_connected(outcomes: list[Outcome]) -> None:
    errors = [o.error for o in outcomes if o.error]
    assert errors == [], f"{len(errors)} of {len(outcomes)} clients got no answer"
    slow = [round(o.connect_seconds, 2) for o in outcomes if o.connect_seconds > CONNECT_SECONDS]
    assert slow == [], f"{len(slow)} connects waited for a SYN retransmit (accept queue full)"


def test_sixty_racing_senders_over_http_admit_exactly_the_rate_limit(
    local_stack: LocalStack,
) -> None:
    """M11 over real HTTP: one conversation opened, then 60 sends into it (both directions)
    from 60 threads, each on a new TCP connection at the same moment. The conversation
    admits exactly RATE_LIMIT_MESSAGES (the opening message included): 39 of the racers get
    201, the other 21 a 429 in the API's error shape, and no connection is reset."""
    suffix = uuid.uuid4().hex[:8]
    worker_name, reviewer_name = f"worker-{suffix}", f"reviewer-{suffix}"
    worker = named_agent(local_stack, worker_name)
    reviewer = named_agent(local_stack, reviewer_name)
    status, first, _ = _call(
        local_stack,
        "POST",
        "/v1/messages",
        worker,
        {"target": f"agent:{reviewer_name}", "message": "0"},
    )
    assert status == 201, first
    status, mailbox, _ = _call(
        local_stack, "GET", f"/v1/messages?{urlencode({'agent_name': reviewer_name})}", reviewer
    )
    assert status == 200, mailbox
    reply_to = mailbox["messages"][0]["reply_address"]

    requests = [
        (
            ("POST", "/v1/messages", worker, {"inbox_id": first["inbox_id"], "message": f"w{i}"})
            if i % 2
            else ("POST", "/v1/messages", reviewer, {"inbox_id": reply_to, "message": f"r{i}"})
        )
        for i in range(SENDERS)
    ]
    outcomes = _race(local_stack, requests)

    _assert_all_connected(outcomes)
    cap = limits.RATE_LIMIT_MESSAGES
    admitted = [o for o in outcomes if o.status == 201]
    refused = [o for o in outcomes if o.status == 429]
    assert (len(admitted), len(refused)) == (cap - 1, SENDERS - (cap - 1)), sorted(
        str(o.status) for o in outcomes
    )
    for answer in refused:
        error = answer.body["error"]
        assert error["code"] == "rate_limited"
        assert isinstance(error["message"], str) and error["message"]
        assert isinstance(error["retry_after"], int) and error["retry_after"] >= 1
        assert answer.headers is not None
        assert answer.headers["retry-after"] == str(error["retry_after"])

    # Read back through the API: both inboxes together hold exactly the admitted messages,
    # seq 1..cap without a gap, each receipt naming its own stored message.
    stored = read_all(local_stack, worker, first["inbox_id"]) + read_all(
        local_stack, reviewer, reply_to
    )
    assert sorted(seq_of(m) for m in stored) == list(range(1, cap + 1))
    receipts = {first["message_id"]} | {o.body["message_id"] for o in admitted}
    assert receipts == set(stored)


def test_128_connections_open_at_once_are_all_answered(local_stack: LocalStack) -> None:
    """128 TCP connections are opened, back to back, before any of them sends; then each
    sends an authenticated GET. All are answered, none reset or kept waiting."""
    connections = [_connection(local_stack) for _ in range(OPEN_CONNECTIONS)]
    outcomes = [Outcome() for _ in connections]
    try:
        for connection, outcome in zip(connections, outcomes, strict=True):
            started = time.monotonic()
            try:
                connection.connect()
            except OSError as error:
                outcome.error = _failed(error)
            outcome.connect_seconds = time.monotonic() - started
        headers = _headers(local_stack.admin_token, None)
        for connection, outcome in zip(connections, outcomes, strict=True):
            if outcome.error is None:
                try:
                    connection.request("GET", "/v1/whoami", headers=headers)
                except OSError as error:
                    outcome.error = _failed(error)
        for connection, outcome in zip(connections, outcomes, strict=True):
            if outcome.error is None:
                try:
                    _answer(connection, outcome)
                except (OSError, HTTPException, ValueError) as error:
                    outcome.error = _failed(error)
    finally:
        for connection in connections:
            connection.close()

    _assert_all_connected(outcomes)
    assert [o.status for o in outcomes] == [200] * OPEN_CONNECTIONS
    account = json.loads(local_stack.admin_config.read_text())["account_id"]
    assert {o.body["account_id"] for o in outcomes} == {account}
