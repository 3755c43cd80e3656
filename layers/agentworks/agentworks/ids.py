"""Identifiers: sortable ULIDs with a readable prefix, and the ids derived from them.

An inbox id names one side of a conversation (`a` = the initiator, `b` = the target);
a message id names one slot of an inbox; a wakeup id, one wakeup in a conversation. All
are parsed back to exact keys, so no lookup item is needed. Ids grant nothing (A4): every
use is authorized.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from ulid import ULID

from agentworks.clock import Clock
from agentworks.errors import InvalidInput, Unavailable

Side = Literal["a", "b"]

_ULID = r"[0-9A-HJKMNP-TV-Z]{26}"
_INBOX_RE = re.compile(rf"^ibx_({_ULID})([ab])$")
_CONVERSATION_RE = re.compile(rf"^cnv_({_ULID})$")
_MESSAGE_RE = re.compile(rf"^msg_({_ULID})([ab])(\d{{10}})$")
_WAKEUP_RE = re.compile(rf"^wku_({_ULID})({_ULID})$")


def new_ulid(clock: Clock) -> str:
    return str(ULID.from_timestamp(clock.now()))


def new_id(prefix: str, clock: Clock) -> str:
    return f"{prefix}_{new_ulid(clock)}"


def other_side(side: Side) -> Side:
    return "b" if side == "a" else "a"


@dataclass(frozen=True)
class InboxRef:
    conversation: str  # the bare ULID
    side: Side

    @property
    def inbox_id(self) -> str:
        return f"ibx_{self.conversation}{self.side}"

    @property
    def conversation_id(self) -> str:
        return f"cnv_{self.conversation}"

    @property
    def peer(self) -> InboxRef:
        return InboxRef(self.conversation, other_side(self.side))


@dataclass(frozen=True)
class MessageRef:
    conversation: str
    side: Side  # the receiving side
    seq: int

    @property
    def message_id(self) -> str:
        return f"msg_{self.conversation}{self.side}{self.seq:010d}"

    @property
    def inbox(self) -> InboxRef:
        return InboxRef(self.conversation, self.side)


def parse_inbox_id(value: str) -> InboxRef:
    match = _INBOX_RE.match(value.strip())
    if not match:
        raise InvalidInput(
            "inbox_id is not a valid inbox id (expected ibx_… as returned by send).",
            field="inbox_id",
        )
    side: Side = "a" if match.group(2) == "a" else "b"
    return InboxRef(match.group(1), side)


def parse_conversation_id(value: str) -> str:
    match = _CONVERSATION_RE.match(value.strip())
    if not match:
        raise InvalidInput(
            "conversation_id is not a valid conversation id.", field="conversation_id"
        )
    return match.group(1)


def parse_message_id(value: str) -> MessageRef:
    match = _MESSAGE_RE.match(value.strip())
    if not match:
        # A malformed id can't name anything this caller may see.
        raise Unavailable()
    side: Side = "a" if match.group(2) == "a" else "b"
    return MessageRef(match.group(1), side, int(match.group(3)))


def parse_wakeup_id(value: str) -> tuple[str, str]:
    """wku_<conversation><wake> → (conversation, wake): the key, no lookup. A malformed id
    names nothing (`unavailable`)."""
    found = _WAKEUP_RE.match(value.strip())
    if not found:
        raise Unavailable()
    return found.group(1), found.group(2)
