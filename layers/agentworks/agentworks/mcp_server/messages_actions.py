"""The `messages` MCP tool's actions (M1–M9, C1–C2): its arguments as one `MessagesCall`,
and one row of `ACTIONS` per action (which arguments it takes, which it needs, how it runs,
how its text reads), so adding one is a new row plus its name in `Action`. The rules live
in the domain services, exactly as behind the HTTP API; this module only maps arguments
and results.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from mcp.types import CallToolResult
from pydantic import BaseModel

from agentworks.conversations.models import (
    CrewState,
    RequestList,
    RequestView,
    RescheduleWakeup,
    ReviewOutcome,
    ScheduleWakeup,
    WakeupView,
)
from agentworks.crews.access import parse_crew_target
from agentworks.errors import InvalidInput
from agentworks.identity.models import Principal
from agentworks.mcp_server.actions import ActionSpec, run_action, services
from agentworks.mcp_server.actions import text as text_argument
from agentworks.mcp_server.read_text import read_text
from agentworks.mcp_server.results import build_model
from agentworks.messaging.message_kinds import MessageKind
from agentworks.messaging.models import (
    AckResult,
    AgentView,
    InboxState,
    ReadPage,
    RegisterAgent,
    SendMessage,
    SendReceipt,
)

Action = Literal[
    "send",
    "read",
    "state",
    "register",
    "unregister",
    "list_agents",
    "ack",
    "wakeup",
    "request",
    "reply",
    "note",
    "requests",
    "cancel_request",
    "decline",
]
Delivery = Literal["typed", "admitted", "processed"]
WakeupAction = Literal["schedule", "cancel", "reschedule"]


class AgentList(BaseModel):
    agents: list[AgentView]


class Unregistered(BaseModel):
    agent_name: str
    unregistered: bool


@dataclass(frozen=True)
class MessagesCall:
    """The tool's arguments, after the SDK checked their types against the input schema."""

    action: Action
    agent_name: str | None = None
    target: str | None = None
    inbox_id: str | None = None
    message: str | None = None
    submission_id: str | None = None
    after: str | None = None
    wait_seconds: float | None = None
    limit: int | None = None
    message_id: str | None = None
    delivery: Delivery | None = None
    purpose: str | None = None
    provider: str | None = None
    allowed_connection_ids: list[str] | None = None
    wakeup_action: WakeupAction | None = None
    wakeup_id: str | None = None
    at: str | None = None
    delay_seconds: int | None = None
    deadline_seconds: int | None = None
    handoff: bool | None = None
    in_reply_to: str | None = None
    reason: str | None = None

    def text(self, name: str) -> str | None:
        """A string argument, blank meaning absent."""
        return text_argument(self, name)


# ---------------------------------------------------------------- actions


def _send(principal: Principal, call: MessagesCall, kind: MessageKind = "message") -> SendReceipt:
    fields = {}
    if kind != "message":
        fields = {
            "kind": kind,
            "deadline_seconds": call.deadline_seconds,
            "handoff": bool(call.handoff),
            "in_reply_to": call.text("in_reply_to"),
        }
    request = build_model(
        SendMessage,
        message=call.message,
        target=call.text("target"),
        inbox_id=call.text("inbox_id"),
        agent_name=call.text("agent_name"),
        submission_id=call.text("submission_id"),
        **fields,
    )
    return services().messaging.send(principal, request)


def _request(principal: Principal, call: MessagesCall) -> SendReceipt:
    return _send(principal, call, "request")


def _reply(principal: Principal, call: MessagesCall) -> SendReceipt:
    return _send(principal, call, "reply")


def _note(principal: Principal, call: MessagesCall) -> SendReceipt:
    return _send(principal, call, "note")


def _requests(principal: Principal, call: MessagesCall) -> RequestList:
    return services().crews.requests.of_inbox(
        principal, str(call.inbox_id), call.text("agent_name")
    )


def _cancel_request(principal: Principal, call: MessagesCall) -> RequestView:
    return services().crews.requests.cancel(
        principal, str(call.message_id), call.text("agent_name")
    )


def _decline(principal: Principal, call: MessagesCall) -> ReviewOutcome:
    """C5: a person who can edit the Crew turns down a request waiting for review."""
    return services().crews.inboxes.decline(
        principal,
        parse_crew_target(str(call.target)),
        str(call.message_id),
        call.text("reason"),
    )


def _read(principal: Principal, call: MessagesCall) -> ReadPage:
    return services().messaging.read(
        principal,
        inbox_id=call.text("inbox_id"),
        agent_name=call.text("agent_name"),
        after=call.text("after"),
        wait_seconds=call.wait_seconds,
        limit=call.limit,
    )


def _state(principal: Principal, call: MessagesCall) -> InboxState | CrewState:
    target, inbox_id = call.text("target"), call.text("inbox_id")
    if (target is None) == (inbox_id is None):
        raise InvalidInput(
            "action=state needs inbox_id (an inbox) or target=crew:NAME (a Crew's inboxes).",
            field="inbox_id",
        )
    if target is not None:
        if call.text("agent_name"):
            raise InvalidInput("action=state with target takes no agent_name.", field="agent_name")
        return services().crews.inboxes.state(
            principal, parse_crew_target(target), call.text("after"), call.limit
        )
    if call.text("after") or call.limit is not None:
        raise InvalidInput("after and limit page a Crew's state (target=crew:NAME).", field="after")
    return services().messaging.inbox_state(principal, str(inbox_id), call.text("agent_name"))


def _wakeup(principal: Principal, call: MessagesCall) -> WakeupView:
    wakeups = services().crews.wakeups
    if call.wakeup_action == "schedule":
        if call.text("wakeup_id"):
            raise InvalidInput("schedule makes a new wakeup: no wakeup_id.", field="wakeup_id")
        if not call.text("inbox_id"):
            raise InvalidInput("wakeup_action=schedule needs inbox_id.", field="inbox_id")
        scheduled = build_model(
            ScheduleWakeup,
            inbox_id=call.text("inbox_id"),
            agent_name=call.text("agent_name"),
            at=call.text("at"),
            delay_seconds=call.delay_seconds,
        )
        return wakeups.schedule(principal, scheduled)
    wakeup_id = call.text("wakeup_id")
    if wakeup_id is None:
        raise InvalidInput(
            f"wakeup_action={call.wakeup_action} needs wakeup_id.", field="wakeup_id"
        )
    if call.text("inbox_id") or call.text("agent_name"):
        raise InvalidInput("The wakeup_id names the wakeup: no inbox_id or agent_name.")
    if call.wakeup_action == "cancel":
        if call.text("at") or call.delay_seconds is not None:
            raise InvalidInput("cancel takes only wakeup_id.", field="at")
        return wakeups.cancel(principal, wakeup_id)
    request = build_model(RescheduleWakeup, at=call.text("at"), delay_seconds=call.delay_seconds)
    return wakeups.reschedule(principal, wakeup_id, request)


def _register(principal: Principal, call: MessagesCall) -> AgentView:
    request = build_model(
        RegisterAgent,
        agent_name=call.agent_name,
        purpose=call.purpose,
        provider=call.provider,
        allowed_connection_ids=call.allowed_connection_ids,
    )
    return services().directory.register(principal, request)


def _unregister(principal: Principal, call: MessagesCall) -> Unregistered:
    services().directory.unregister(principal, str(call.agent_name))
    return Unregistered(agent_name=str(call.agent_name), unregistered=True)


def _list_agents(principal: Principal, call: MessagesCall) -> AgentList:
    return AgentList(agents=services().directory.list(principal))


def _ack(principal: Principal, call: MessagesCall) -> AckResult:
    return services().messaging.ack(principal, str(call.message_id), str(call.delivery))


ACTIONS: dict[str, ActionSpec[MessagesCall]] = {
    "send": ActionSpec(
        _send,
        frozenset({"message", "target", "inbox_id", "agent_name", "submission_id"}),
        required=("message",),
        operation="Send",
    ),
    "read": ActionSpec(
        _read,
        frozenset({"inbox_id", "agent_name", "after", "wait_seconds", "limit"}),
        text=read_text,
    ),
    "state": ActionSpec(_state, frozenset({"inbox_id", "agent_name", "target", "after", "limit"})),
    "register": ActionSpec(
        _register,
        frozenset({"agent_name", "purpose", "provider", "allowed_connection_ids"}),
        required=("agent_name",),
    ),
    "unregister": ActionSpec(_unregister, frozenset({"agent_name"}), required=("agent_name",)),
    "list_agents": ActionSpec(_list_agents),
    "ack": ActionSpec(
        _ack, frozenset({"message_id", "delivery"}), required=("message_id", "delivery")
    ),
    "wakeup": ActionSpec(
        _wakeup,
        frozenset({"wakeup_action", "wakeup_id", "inbox_id", "agent_name", "at", "delay_seconds"}),
        required=("wakeup_action",),
    ),
    "request": ActionSpec(
        _request,
        frozenset(
            {"message", "target", "inbox_id", "agent_name", "submission_id", "deadline_seconds"}
        )
        | {"handoff"},
        required=("message",),
        operation="Send",
    ),
    "reply": ActionSpec(
        _reply,
        frozenset({"message", "inbox_id", "agent_name", "submission_id", "in_reply_to"}),
        required=("message", "inbox_id", "in_reply_to"),
        operation="Send",
    ),
    "note": ActionSpec(
        _note,
        frozenset({"message", "target", "inbox_id", "agent_name", "submission_id"}),
        required=("message",),
        operation="Send",
    ),
    "requests": ActionSpec(
        _requests, frozenset({"inbox_id", "agent_name"}), required=("inbox_id",)
    ),
    "cancel_request": ActionSpec(
        _cancel_request, frozenset({"message_id", "agent_name"}), required=("message_id",)
    ),
    "decline": ActionSpec(
        _decline, frozenset({"message_id", "target", "reason"}), required=("message_id", "target")
    ),
}
assert set(ACTIONS) == set(get_args(Action)), "every action needs a row in ACTIONS"


def run_messages(call: MessagesCall) -> CallToolResult:
    """Runs one action as the request's principal; domain errors become error results."""
    result = run_action(call, ACTIONS[call.action])
    assert isinstance(result, CallToolResult)  # no messages action asks the user
    return result
