"""The bridge's durable state on this computer: one SQLite file, private to the person.

What it keeps, per attachment (an exact provider session attached to a name):
- the read position on the server (the mailbox cursor, one cursor per known inbox);
- a monotonic **receive watermark** per inbox (the highest seq ever taken in). A message at
  or below it is never taken in again, whatever cleanup removed, so no path (push, hook,
  catch-up, restart) can start a second turn for it;
- the **offer journal**: each message taken in is `queued`; the Stop hook's batch is marked
  `offering` in the same transaction that hands it out (persisted before anything is
  emitted); `offered` once the hook says it printed it. A crash between the two leaves it
  `offering`: ambiguous, never offered again automatically, still readable on the server.
  A message the Claude channel wrote is `channeled`: not final, since Claude drops channel
  events it never registered. It becomes `offered` when the agent acknowledged it on the
  server (`admitted` or `processed`, checked by re-reading its inbox from `read_after`), or
  is offered again by the next Stop;
- the outbox (outbox.py) and the chats seen (chats_seen.py), in the same file (journal_db.py).

Bounds (the seed's): at most 2,000 messages per attachment and 32 MiB of bodies in all.
Bodies are dropped once offered; offered metadata goes after 7 days, or first when an
attachment is full; queued bodies stay until offered (a full attachment stops taking in,
and the server keeps the rest for the next catch-up).
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentworks_cli.bridge import chats_seen, outbox
from agentworks_cli.bridge.chats_seen import ChatsSeen, Sighting
from agentworks_cli.bridge.journal_db import locked
from agentworks_cli.bridge.outbox import Outbox

__all__ = ["Journal", "Sighting"]

MESSAGES_PER_ATTACHMENT = 2_000
BODY_BYTES_TOTAL = 32 * 1024 * 1024
OFFERED_KEPT_SECONDS = 7 * 24 * 3600

_SCHEMA = """
CREATE TABLE IF NOT EXISTS attachments (
    session TEXT PRIMARY KEY,          -- "<provider>:<session id>"
    provider TEXT NOT NULL,
    agent_name TEXT NOT NULL,
    config_path TEXT NOT NULL,         -- the CLI config whose connection acts as the name
    state TEXT NOT NULL,               -- attached | offline
    purpose TEXT,
    purpose_at REAL,                   -- when the purpose last changed (once a minute)
    attached_at REAL NOT NULL,
    mailbox_cursor TEXT,
    blocks INTEGER NOT NULL DEFAULT 0, -- consecutive Stop-hook continuations (loop guard)
    guidance_at REAL                   -- when full messaging guidance was last handed out
);
CREATE TABLE IF NOT EXISTS inboxes (
    session TEXT NOT NULL,
    inbox_id TEXT NOT NULL,
    cursor TEXT,
    watermark INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (session, inbox_id)
);
CREATE TABLE IF NOT EXISTS messages (
    session TEXT NOT NULL,
    message_id TEXT NOT NULL,
    inbox_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    sender TEXT NOT NULL,
    body TEXT,                          -- NULL once offered
    body_hash TEXT NOT NULL,            -- kept: a prompt repeating it is delivered text
    size INTEGER NOT NULL DEFAULT 0,    -- bytes of body held
    state TEXT NOT NULL,                -- queued | channeled | offering | offered
    taken_at REAL NOT NULL,
    offered_at REAL,
    read_after TEXT,                    -- the inbox cursor it was read after (NULL: start;
                                        -- a first contact, read from the mailbox, is first)
    PRIMARY KEY (session, message_id)
);
CREATE INDEX IF NOT EXISTS messages_by_state ON messages (session, state, taken_at);
CREATE INDEX IF NOT EXISTS messages_by_body ON messages (body_hash);
"""


@dataclass(frozen=True)
class Attachment:
    session: str
    provider: str
    agent_name: str
    config_path: str
    state: str
    purpose: str | None
    purpose_at: float | None
    attached_at: float
    mailbox_cursor: str | None
    blocks: int
    guidance_at: float | None


@dataclass(frozen=True)
class Incoming:
    """A message read from the server for an attachment."""

    message_id: str
    inbox_id: str  # the receiving side's (the attached name's) inbox
    seq: int
    sender: str
    body: str


@dataclass(frozen=True)
class TakenIn:
    new: int  # messages queued
    full: bool  # stopped at a bound: don't move the read position past what was left


@dataclass(frozen=True)
class Offer:
    message_id: str
    inbox_id: str
    sender: str
    body: str


@dataclass(frozen=True)
class Channeled:
    """A message the channel wrote, and where to read it again for its receipt."""

    message_id: str
    inbox_id: str
    read_after: str | None


def body_hash(text: str) -> str:
    return hashlib.sha256(text.strip().encode()).hexdigest()


def message_seq(message_id: str) -> int:
    """msg_<26-char conversation><side><10-digit seq>."""
    return int(message_id[-10:])


class Journal(ChatsSeen, Outbox):
    def __init__(self, path: Path, clock: Any = time.time) -> None:
        super().__init__(path, _SCHEMA + chats_seen.SCHEMA + outbox.SCHEMA, clock)
        self._add_missing_columns()

    def _add_missing_columns(self) -> None:
        """A journal written by an earlier release lacks the newer columns (all nullable)."""
        have = {row["name"] for row in self._db.execute("PRAGMA table_info(messages)")}
        if "read_after" not in have:
            self._db.execute("ALTER TABLE messages ADD COLUMN read_after TEXT")

    # ---- attachments ----

    @locked
    def attach(self, session: str, provider: str, agent_name: str, config_path: str,
               purpose: str | None = None) -> Attachment:  # fmt: skip
        """Attaches (or re-attaches) an exact session; its journal and watermarks stay."""
        with self._transaction() as db:
            db.execute(
                "INSERT INTO attachments (session, provider, agent_name, config_path, state, "
                "purpose, purpose_at, attached_at) VALUES (?, ?, ?, ?, 'attached', ?, ?, ?) "
                "ON CONFLICT (session) DO UPDATE SET state = 'attached', agent_name = "
                "excluded.agent_name, config_path = excluded.config_path, purpose = "
                "COALESCE(excluded.purpose, attachments.purpose), purpose_at = CASE WHEN "
                "excluded.purpose IS NOT NULL AND excluded.purpose IS NOT attachments.purpose "
                "THEN excluded.purpose_at ELSE attachments.purpose_at END, blocks = 0",
                (
                    session,
                    provider,
                    agent_name,
                    config_path,
                    purpose,
                    self._clock() if purpose else None,
                    self._clock(),
                ),
            )
        found = self.attachment(session)
        assert found is not None
        return found

    @locked
    def attachment(self, session: str) -> Attachment | None:
        row = self._db.execute("SELECT * FROM attachments WHERE session = ?", (session,)).fetchone()
        return Attachment(**dict(row)) if row else None

    @locked
    def attachments(self) -> list[Attachment]:
        rows = self._db.execute("SELECT * FROM attachments ORDER BY attached_at").fetchall()
        return [Attachment(**dict(r)) for r in rows]

    @locked
    def set_state(self, session: str, state: str) -> None:
        self._db.execute("UPDATE attachments SET state = ? WHERE session = ?", (state, session))

    @locked
    def take_name(self, session: str) -> None:
        """The name moves to this session: another chat attached as it goes offline."""
        self._db.execute(
            "UPDATE attachments SET state = 'offline' WHERE session != ? AND state = "
            "'attached' AND agent_name = (SELECT agent_name FROM attachments WHERE session = ?)",
            (session, session),
        )

    @locked
    def detach(self, session: str) -> None:
        """Explicit detach removes the attachment's local state (watermarks included)."""
        with self._transaction() as db:
            for table in ("attachments", "inboxes", "messages", "outbox"):
                db.execute(f"DELETE FROM {table} WHERE session = ?", (session,))

    @locked
    def set_guidance_at(self, session: str, at: float) -> None:
        self._db.execute("UPDATE attachments SET guidance_at = ? WHERE session = ?", (at, session))

    @locked
    def set_blocks(self, session: str, blocks: int) -> None:
        self._db.execute("UPDATE attachments SET blocks = ? WHERE session = ?", (blocks, session))

    # ---- read positions ----

    @locked
    def save_mailbox_cursor(self, session: str, cursor: str) -> None:
        self._db.execute(
            "UPDATE attachments SET mailbox_cursor = ? WHERE session = ?", (cursor, session)
        )

    @locked
    def inboxes(self, session: str) -> dict[str, str | None]:
        rows = self._db.execute(
            "SELECT inbox_id, cursor FROM inboxes WHERE session = ?", (session,)
        ).fetchall()
        return {r["inbox_id"]: r["cursor"] for r in rows}

    @locked
    def know_inbox(self, session: str, inbox_id: str) -> None:
        self._db.execute(
            "INSERT OR IGNORE INTO inboxes (session, inbox_id) VALUES (?, ?)", (session, inbox_id)
        )

    @locked
    def save_inbox_cursor(self, session: str, inbox_id: str, cursor: str) -> None:
        self.know_inbox(session, inbox_id)
        self._db.execute(
            "UPDATE inboxes SET cursor = ? WHERE session = ? AND inbox_id = ?",
            (cursor, session, inbox_id),
        )

    @locked
    def watermark(self, session: str, inbox_id: str) -> int:
        row = self._db.execute(
            "SELECT watermark FROM inboxes WHERE session = ? AND inbox_id = ?", (session, inbox_id)
        ).fetchone()
        return int(row["watermark"]) if row else 0

    # ---- taking messages in ----

    @locked
    def take_in(
        self,
        session: str,
        incoming: list[Incoming],
        read_after: str | None = None,
    ) -> TakenIn:
        """Queues the messages past their inbox's watermark (raising it) in one transaction.
        Stops at the attachment's bound: the rest stay on the server (`full`). `read_after`:
        the inbox cursor the page was read after (None for the mailbox's first contacts)."""
        taken, full = 0, False
        with self._transaction() as db:
            self._reclaim(db, session)
            room = MESSAGES_PER_ATTACHMENT - self._count(db, session)
            body_room = BODY_BYTES_TOTAL - self._body_bytes(db)
            for message in incoming:
                db.execute(
                    "INSERT OR IGNORE INTO inboxes (session, inbox_id) VALUES (?, ?)",
                    (session, message.inbox_id),
                )
                mark = db.execute(
                    "SELECT watermark FROM inboxes WHERE session = ? AND inbox_id = ?",
                    (session, message.inbox_id),
                ).fetchone()["watermark"]
                if message.seq <= mark:
                    continue  # taken in before (perhaps offered and cleaned up since)
                size = len(message.body.encode())
                if room <= 0 or size > body_room:
                    full = True  # the server keeps it; a later catch-up reads it again
                    break
                db.execute(
                    "INSERT INTO messages (session, message_id, inbox_id, seq, sender, body, "
                    "body_hash, size, state, taken_at, read_after) VALUES "
                    "(?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?)",
                    (session, message.message_id, message.inbox_id, message.seq,
                     message.sender, message.body, body_hash(message.body), size,
                     self._clock(), read_after),
                )  # fmt: skip
                db.execute(
                    "UPDATE inboxes SET watermark = ? WHERE session = ? AND inbox_id = ?",
                    (message.seq, session, message.inbox_id),
                )
                room, body_room, taken = room - 1, body_room - size, taken + 1
        return TakenIn(taken, full)

    def _count(self, db: sqlite3.Connection, session: str) -> int:
        row = db.execute("SELECT COUNT(*) AS n FROM messages WHERE session = ?", (session,))
        return int(row.fetchone()["n"])

    def _body_bytes(self, db: sqlite3.Connection) -> int:
        return int(db.execute("SELECT COALESCE(SUM(size), 0) AS s FROM messages").fetchone()["s"])

    def _reclaim(self, db: sqlite3.Connection, session: str) -> None:
        """Offered metadata older than 7 days goes; then, if the attachment is full, the
        oldest offered. Watermarks stay, so nothing reclaimed can come back as new."""
        db.execute(
            "DELETE FROM messages WHERE state != 'queued' AND offered_at < ?",
            (self._clock() - OFFERED_KEPT_SECONDS,),
        )
        excess = self._count(db, session) - MESSAGES_PER_ATTACHMENT + 1
        if excess > 0:
            db.execute(
                "DELETE FROM messages WHERE rowid IN (SELECT rowid FROM messages WHERE "
                "session = ? AND state != 'queued' ORDER BY offered_at LIMIT ?)",
                (session, excess),
            )

    @locked
    def holds_body(self, text: str) -> bool:
        """Whether `text` is the body of a message taken in for any attachment."""
        row = self._db.execute(
            "SELECT 1 FROM messages WHERE body_hash = ? LIMIT 1", (body_hash(text),)
        ).fetchone()
        return row is not None

    # ---- offering ----

    @locked
    def queued(self, session: str) -> int:
        row = self._db.execute(
            "SELECT COUNT(*) AS n FROM messages WHERE session = ? AND state = 'queued'", (session,)
        )
        return int(row.fetchone()["n"])

    @locked
    def take_offers(self, session: str, limit: int) -> list[Offer]:
        """The oldest messages not yet final (queued, or written by a channel and not
        acknowledged), marked `offering` before they are returned."""
        return self._take(session, limit, ("queued", "channeled"), "offering")

    @locked
    def take_channel_offers(self, session: str, limit: int) -> list[Offer]:
        """The oldest queued messages, marked `channeled` before the channel writes them."""
        return self._take(session, limit, ("queued",), "channeled")

    def _take(self, session: str, limit: int, states: tuple[str, ...], to: str) -> list[Offer]:
        """The oldest `limit` messages in `states`, moved to `to` in the same transaction."""
        marks = ", ".join("?" for _ in states)
        with self._transaction() as db:
            rows = db.execute(
                "SELECT message_id, inbox_id, sender, body FROM messages WHERE session = ? AND "
                f"state IN ({marks}) ORDER BY taken_at, rowid LIMIT ?",
                (session, *states, limit),
            ).fetchall()
            offers = [Offer(r["message_id"], r["inbox_id"], r["sender"], r["body"]) for r in rows]
            db.executemany(
                "UPDATE messages SET state = ?, offered_at = ? WHERE session = ? AND "
                "message_id = ?",
                [(to, self._clock(), session, o.message_id) for o in offers],
            )
        return offers

    @locked
    def channeled(self, session: str) -> list[Channeled]:
        rows = self._db.execute(
            "SELECT message_id, inbox_id, read_after FROM messages WHERE session = ? AND "
            "state = 'channeled' ORDER BY taken_at, rowid",
            (session,),
        ).fetchall()
        return [Channeled(r["message_id"], r["inbox_id"], r["read_after"]) for r in rows]

    @locked
    def acknowledged(self, session: str, message_ids: list[str]) -> None:
        """The agent acknowledged these channel messages on the server: final."""
        self._db.executemany(
            "UPDATE messages SET state = 'offered', body = NULL, size = 0 WHERE session = ? "
            "AND message_id = ? AND state = 'channeled'",
            [(session, m) for m in message_ids],
        )

    @locked
    def emitted(self, session: str, message_ids: list[str]) -> None:
        """The hook printed them: offered, and their bodies are no longer kept."""
        self._db.executemany(
            "UPDATE messages SET state = 'offered', body = NULL, size = 0 WHERE session = ? "
            "AND message_id = ? AND state = 'offering'",
            [(session, m) for m in message_ids],
        )

    @locked
    def states(self, session: str) -> dict[str, int]:
        rows = self._db.execute(
            "SELECT state, COUNT(*) AS n FROM messages WHERE session = ? GROUP BY state",
            (session,),
        ).fetchall()
        return {r["state"]: int(r["n"]) for r in rows}
