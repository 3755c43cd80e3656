"""Messages to Crews, wakeups and the mailbox adapter over MCP (M8–M10, §8, SPEC §10):
`messages` action=send target=crew:NAME, action=state target=crew:NAME, action=wakeup;
`crews` action=release|decline; `functions` action=complete."""

from __future__ import annotations

import copy
import time
from types import ModuleType
from typing import Any

import pytest

from tests.integration.crew_support import CONTRACTS
from tests.integration.test_mailbox_adapter import DELEGATOR
from tests.integration.test_mcp_crews_tools import Tools, as_admin
from tests.integration.test_mcp_handler import load_handler_module
from tests.support.handlers import LambdaContext, load_handler


@pytest.fixture(scope="module")
def mcp_app() -> ModuleType:
    return load_handler_module()


def as_connection(stack: Any, app: ModuleType, name: str, register: str | None = None) -> Tools:
    """A connection of the account (acting as `register`, when given) as an MCP client."""
    admin = stack.principal(stack.admin_token)
    token = stack.services.identity.create_connection(admin, name).token
    if register:
        Tools(app, token).ok("messages", action="register", agent_name=register)
    # Authentication reads the connection on every request: consents included.
    return Tools(app, token)


def wait_read(tools: Tools, inbox_id: str, count: int = 1, timeout: float = 30) -> list[dict]:
    deadline = time.monotonic() + timeout
    while True:
        page = tools.ok("messages", action="read", inbox_id=inbox_id)
        if len(page["messages"]) >= count:
            return page["messages"]
        assert time.monotonic() < deadline, page
        time.sleep(0.05)


def test_m10_review_release_and_decline_over_mcp(stack, mcp_app):
    admin = as_admin(stack, mcp_app)
    admin.ok("crews", action="create", definition=dict(CONTRACTS, messaging="review"))
    caller = as_connection(stack, mcp_app, "caller")
    first = caller.ok("messages", action="send", target="crew:contracts", message="clause 3?")
    second = caller.ok("messages", action="send", target="crew:contracts", message="clause 4?")
    state = admin.ok("messages", action="state", target="crew:contracts")
    waiting = {
        r["message_id"]: r["run_state"] for i in state["inboxes"] for r in i["delivery_records"]
    }
    assert waiting == dict.fromkeys([first["message_id"], second["message_id"]], "pending_review")
    # Owners only, and one of inbox_id or target.
    assert caller.error("messages", action="state", target="crew:contracts")["code"] == "forbidden"
    assert admin.error("messages", action="state")["code"] == "invalid_request"
    released = admin.ok("crews", action="release", name="contracts", message_id=first["message_id"])
    assert released["state"] == "running"
    [answer] = wait_read(caller, first["inbox_id"])
    assert answer["body"] == "Clause 3 covers termination."
    declined = admin.ok(
        "crews", action="decline", name="contracts", message_id=second["message_id"], reason="No."
    )
    assert declined["state"] == "declined" and declined["reason"] == "No."
    [notice] = wait_read(caller, second["inbox_id"])
    assert "declined" in notice["body"]
    assert caller.error(
        "crews", action="release", name="contracts", message_id=second["message_id"]
    )["code"] == "forbidden"  # fmt: skip


def test_m10_off_is_refused_with_the_reason_over_mcp(stack, mcp_app):
    admin = as_admin(stack, mcp_app)
    admin.ok("crews", action="create", definition=dict(CONTRACTS, messaging="off"))
    caller = as_connection(stack, mcp_app, "caller")
    error = caller.error("messages", action="send", target="crew:contracts", message="hi")
    assert error["code"] == "messaging_off" and "account admin" in error["message"]


def test_m9_wakeup_schedule_reschedule_cancel_over_mcp(stack, mcp_app):
    admin = as_admin(stack, mcp_app)
    admin.ok("crews", action="create", definition=dict(CONTRACTS, messaging="review"))
    caller = as_connection(stack, mcp_app, "caller")
    sent = caller.ok("messages", action="send", target="crew:contracts", message="later")
    kept = caller.ok(
        "messages",
        action="wakeup",
        wakeup_action="schedule",
        inbox_id=sent["inbox_id"],
        delay_seconds=120,
    )
    dropped = caller.ok(
        "messages",
        action="wakeup",
        wakeup_action="schedule",
        inbox_id=sent["inbox_id"],
        delay_seconds=120,
    )
    moved = caller.ok(
        "messages",
        action="wakeup",
        wakeup_action="reschedule",
        wakeup_id=kept["wakeup_id"],
        delay_seconds=300,
    )
    assert moved["due_at"] > kept["due_at"]
    cancelled = caller.ok(
        "messages", action="wakeup", wakeup_action="cancel", wakeup_id=dropped["wakeup_id"]
    )
    assert cancelled["state"] == "cancelled"
    too_soon = caller.error(
        "messages",
        action="wakeup",
        wakeup_action="schedule",
        inbox_id=sent["inbox_id"],
        delay_seconds=30,
    )
    assert too_soon["code"] == "invalid_request"
    assert caller.error("messages", action="wakeup", wakeup_action="cancel")["field"] == "wakeup_id"
    tick = load_handler("tick").handler
    stack.clock.advance(301)
    assert tick({}, LambdaContext())["wakeups_fired"] == 1
    [answer] = wait_read(caller, sent["inbox_id"])
    assert answer["sender"] == "crew:contracts"


def test_s8_mailbox_round_trip_over_mcp(stack, mcp_app):
    admin = as_admin(stack, mcp_app)
    admin.ok("crews", action="create", definition=copy.deepcopy(DELEGATOR))
    worker = as_connection(stack, mcp_app, "worker-conn", register="worker")
    caller = as_connection(stack, mcp_app, "caller")
    call_id = caller.ok(
        "functions",
        action="call",
        target="crew:delegator",
        function="summarize",
        args={"text": "Rent is due monthly."},
    )["call_id"]
    deadline = time.monotonic() + 30
    while True:
        mailbox = worker.ok("messages", action="read", agent_name="worker")["messages"]
        if mailbox:
            break
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert call_id in mailbox[0]["body"] and mailbox[0]["sender"] == "crew:delegator"
    invalid = worker.error(
        "functions", action="complete", call_id=call_id, agent_name="worker", result={"x": 1}
    )
    assert invalid["code"] == "invalid_result"
    done = worker.ok(
        "functions",
        action="complete",
        call_id=call_id,
        agent_name="worker",
        result={"summary": "Monthly rent."},
    )
    assert done["call_id"] == call_id
    final = caller.poll(call_id, {"succeeded", "failed", "interrupted"})
    assert final["state"] == "succeeded" and final["result"] == {"summary": "Monthly rent."}
