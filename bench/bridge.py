"""Duplicate turns under crashes (issue 10; target 0), and messages lost across routes
(issue 25; target 0).

The bridge's journal and intake over a server that serves one name's inbox from a list
(cursor = how many were read, as the API's opaque cursor is to the bridge). Messages keep
arriving; at random moments the "process" dies — after taking in but before saving its
read position, after journaling an offer but before the hook printed it, or after — and a
new bridge opens the same journal file. Every turn started is counted per message.

Across routes: the same, with the Claude channel taking messages too — Claude shows some of
its events and drops the rest (as under `-p`); the agent acknowledges some shown ones on the
server — and chats that end (SessionEnd) and resume. A message is lost if no Stop handed it
out and the channel never showed it.
"""

from __future__ import annotations

import json
import random
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from agentworks_cli.bridge.journal import Journal
from agentworks_cli.bridge.service import Bridge

CONV = "01JZ0000000000000000000000"
SESSION_ID = "bench-session"
MESSAGES = 300


class ListServer:
    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    def add(self) -> None:
        seq = len(self.messages) + 1
        self.messages.append(
            {"message_id": f"msg_{CONV}b{seq:010d}", "inbox_id": f"ibx_{CONV}b",
             "sender": "agent:worker", "body": f"message {seq}"}
        )  # fmt: skip

    def read(self, *, agent_name: str, inbox_id: str | None, after: str | None, limit: int) -> Any:
        start = int(after or 0)
        page = self.messages[start : start + limit]
        return {"messages": [dict(m) for m in page], "next_cursor": str(start + len(page))}

    def acknowledge(self, message_id: str) -> None:
        for message in self.messages:
            if message["message_id"] == message_id:
                message["receipt"] = "admitted"

    def register(self, *_: Any) -> dict[str, Any]:
        return {"allowed_connection_ids": []}

    def create_connection(self, body: dict[str, Any]) -> dict[str, Any]:
        return {"token": "aw1.bench", "connection_id": "conn_bench", "name": body["name"]}


def measure(seed: int = 7) -> dict[str, float]:
    rng = random.Random(seed)
    server = ListServer()
    turns: Counter[str] = Counter()
    crashes = 0
    with tempfile.TemporaryDirectory(prefix="agentworks-bridge-") as scratch:
        path = Path(scratch) / "journal.sqlite3"
        person = Path(scratch) / "person.json"
        person.write_text(json.dumps({"url": "http://bench", "token": "aw1.person"}))

        def open_bridge() -> Bridge:
            return Bridge(Journal(path), lambda _: server, str(person))

        bridge = open_bridge()
        bridge.attach("claude", SESSION_ID, "reviewer", None)
        while len(server.messages) < MESSAGES or bridge.journal.queued(f"claude:{SESSION_ID}"):
            for _ in range(rng.randint(0, 5)):
                if len(server.messages) < MESSAGES:
                    server.add()
            session = bridge.journal.attachment(f"claude:{SESSION_ID}")
            assert session is not None
            bridge.intake.catch_up(session)
            point = rng.random()
            if point < 0.1:  # died before the read position was saved
                bridge.journal.save_mailbox_cursor(session.session, "")
                bridge.journal._db.execute("UPDATE inboxes SET cursor = NULL")
            answer = bridge.handle(
                {"op": "hook", "provider": "claude", "event": "stop",
                 "payload": {"session_id": SESSION_ID}}
            )  # fmt: skip
            for message_id in answer.get("message_ids", []):
                turns[message_id] += 1  # the turn starts when the hook hands it out
            if answer.get("message_ids") and point > 0.2:
                bridge.handle({"op": "emitted", "session": answer["session"],
                               "message_ids": answer["message_ids"]})  # fmt: skip
            bridge.journal.set_blocks(session.session, 0)
            if point < 0.35:
                crashes += 1
                bridge.journal.close()
                bridge = open_bridge()
        bridge.journal.close()
    return {
        "bridge_duplicate_turns": float(sum(n - 1 for n in turns.values() if n > 1)),
        "bridge_crashes_injected": float(crashes),
        "bridge_messages_offered": float(len(turns)),
    }


def measure_routes(seed: int = 11) -> dict[str, float]:
    rng = random.Random(seed)
    server = ListServer()
    stop_turns: Counter[str] = Counter()
    shown_on_channel: set[str] = set()
    session = f"claude:{SESSION_ID}"
    hook = {"op": "hook", "provider": "claude", "payload": {"session_id": SESSION_ID}}
    with tempfile.TemporaryDirectory(prefix="agentworks-bridge-") as scratch:
        person = Path(scratch) / "person.json"
        person.write_text(json.dumps({"url": "http://bench", "token": "aw1.person"}))
        bridge = Bridge(Journal(Path(scratch) / "journal.sqlite3"), lambda _: server, str(person))
        bridge.attach("claude", SESSION_ID, "reviewer", None)
        while len(server.messages) < MESSAGES or bridge.journal.queued(session):
            for _ in range(rng.randint(0, 5)):
                if len(server.messages) < MESSAGES:
                    server.add()
            attachment = bridge.journal.attachment(session)
            assert attachment is not None
            if attachment.state == "attached":
                bridge.intake.catch_up(attachment)
            if rng.random() < 0.4:  # the channel child polls and writes what waits
                taken = bridge.handle({"op": "channel-take", "provider": "claude",
                                       "session_id": SESSION_ID})  # fmt: skip
                for message in taken.get("messages", []):
                    if rng.random() < 0.5:  # Claude showed it (interactive, channels on)
                        shown_on_channel.add(message["message_id"])
                        if rng.random() < 0.7:
                            server.acknowledge(message["message_id"])
            if rng.random() < 0.15:  # a `claude -p` run ends; the next turn resumes it
                bridge.handle({**hook, "event": "session-end"})
                bridge.handle({**hook, "event": "session-start"})
            answer = bridge.handle({**hook, "event": "stop"})
            for message_id in answer.get("message_ids", []):
                stop_turns[message_id] += 1
            if answer.get("message_ids"):
                bridge.handle({"op": "emitted", "session": answer["session"],
                               "message_ids": answer["message_ids"]})  # fmt: skip
            bridge.journal.set_blocks(session, 0)
        bridge.journal.close()
    every = {m["message_id"] for m in server.messages}
    lost = every - set(stop_turns) - shown_on_channel
    return {
        "bridge_messages_lost_across_routes": float(len(lost)),
        "bridge_stop_duplicate_turns_across_routes": float(
            sum(n - 1 for n in stop_turns.values() if n > 1)
        ),
        "bridge_channel_shown_then_stop_offered": float(len(shown_on_channel & set(stop_turns))),
    }
