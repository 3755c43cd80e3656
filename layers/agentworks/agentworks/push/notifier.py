"""From stored messages to notices on the listeners' WebSockets (the messages table's
stream feeds it, see functions/notifier).

A notice says only "inbox X has messages up to message_id Y"; the listener reads them
through the API with its own cursor, so a lost, late or repeated notice costs a read, never
a message, and authorization stays with the reads. The stream record alone names who
listens (its keys, `to_side` and `to_agent`): one Query per inbox that got messages.
Before posting, each listener's connection is read again: a revoked connection, or one no
longer allowed to act as the name it follows, hears nothing more and its socket is closed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.identity.models import Connection
from agentworks.ids import InboxRef, MessageRef, Side
from agentworks.messaging import keys
from agentworks.observability import count
from agentworks.push.channel import PushChannel
from agentworks.push.listener_store import Listener, ListenerStore
from agentworks.push.subjects import partition_of
from agentworks.usage.counts import Counts, day_of

# account_id, connection_id -> the connection as stored now (None: gone)
ConnectionOf = Callable[[str, str], Connection | None]


@dataclass(frozen=True)
class Delivered:
    """A message the stream says was stored, and the name on its receiving side."""

    message: MessageRef
    to_agent: str | None

    @property
    def inbox(self) -> InboxRef:
        return InboxRef(self.message.conversation, self.message.side)


@dataclass
class NoticeReport:
    inboxes: int = 0  # inboxes that got new messages in the batch
    posted: int = 0  # notices sent
    dropped: int = 0  # listeners removed (gone, revoked, no longer allowed)
    # (account, day) -> notices posted to its listeners and minutes of those it dropped
    usage: dict[tuple[str, str], Counts] = field(default_factory=dict)

    def add_usage(self, account_id: str, now: float, counts: Counts) -> None:
        at = (account_id, day_of(now))
        self.usage[at] = self.usage.get(at, Counts()) + counts


def _text(image: Mapping[str, Any], name: str) -> str:
    return str((image.get(name) or {}).get("S", ""))


def delivered_messages(records: Iterable[Mapping[str, Any]]) -> list[Delivered]:
    """The messages a batch of the messages table's stream records stored (INSERTs of
    `CONV#…/M#…` items; everything else on that table wakes nobody)."""
    found = []
    for record in records:
        change = record.get("dynamodb") or {}
        image = change.get("NewImage") or {}
        pk, sk, side = _text(image, "pk"), _text(image, "sk"), _text(image, "to_side")
        if record.get("eventName") != "INSERT" or not pk.startswith("CONV#"):
            continue
        if not keys.is_message(sk) or side not in ("a", "b"):
            continue
        message = MessageRef(pk.removeprefix("CONV#"), cast(Side, side), keys.message_seq(sk))
        found.append(Delivered(message, _text(image, "to_agent") or None))
    return found


def notice(message: MessageRef) -> bytes:
    inbox = InboxRef(message.conversation, message.side)
    return json.dumps(
        {
            "type": "messages",
            "inbox_id": inbox.inbox_id,
            "conversation_id": inbox.conversation_id,
            "message_id": message.message_id,
        },
        separators=(",", ":"),
    ).encode()


def _still_allowed(listener: Listener, connection: Connection | None, now: float) -> bool:
    if connection is None or not connection.is_live(now):
        return False
    agent_id = listener.follow.agent_id
    return agent_id is None or any(c.agent_id == agent_id for c in connection.consents.values())


class Notifier:
    def __init__(
        self,
        listeners: ListenerStore,
        channel: PushChannel,
        connection_of: ConnectionOf,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._listeners = listeners
        self._channel = channel
        self._connection_of = connection_of
        self._clock = clock

    def notify(self, delivered: Iterable[Delivered]) -> NoticeReport:
        """One notice per receiving inbox for a batch (its newest message)."""
        newest: dict[InboxRef, Delivered] = {}
        for item in delivered:
            known = newest.get(item.inbox)
            if known is None or known.message.seq < item.message.seq:
                newest[item.inbox] = item
        report = NoticeReport(inboxes=len(newest))
        for inbox, item in newest.items():
            self._notify_inbox(inbox, item, report)
        count("PushNotices", report.posted)
        return report

    def _notify_inbox(self, inbox: InboxRef, item: Delivered, report: NoticeReport) -> None:
        now = self._clock.now()
        partition = partition_of(inbox.inbox_id, item.to_agent)
        listeners = self._listeners.of_partition(partition, now, limits.PUSH_LISTENERS_PER_SUBJECT)
        hearing = [listener for listener in listeners if listener.follow.hears(inbox.inbox_id)]
        self.post(hearing, notice(item.message), report)

    def post(self, listeners: Iterable[Listener], data: bytes, report: NoticeReport) -> None:
        """`data` to each listener whose connection still allows it; the others, and those
        whose socket is gone, are removed (and a refused one's socket closed)."""
        now = self._clock.now()
        for listener in listeners:
            connection = self._connection_of(listener.account_id, listener.connection_id)
            allowed = _still_allowed(listener, connection, now)
            try:
                posted = allowed and self._channel.post(listener.ws_id, data)
            except Exception:
                # Not a closed socket (that is False): API Gateway refused or failed. The
                # batch is retried, then named in its failure queue (template.yaml).
                count("PushNoticesFailed")
                raise
            if posted:
                report.posted += 1
                report.add_usage(listener.account_id, now, Counts(push_notices=1))
                continue
            # Gone (closed by API Gateway), or refused; its minutes count once, here or
            # in its `$disconnect`, whichever removes it.
            if self._listeners.remove(listener):
                seconds = Counts(push_seconds=listener.connected_seconds(now))
                report.add_usage(listener.account_id, now, seconds)
            if not allowed:
                self._channel.close(listener.ws_id)
            report.dropped += 1
