"""The bridge's outbox: sends made while the server was unreachable, each with its
submission id (an outage delays a send, never doubles it). Kept in the journal's file.
"""

from __future__ import annotations

import json
from typing import Any

from agentworks_cli.bridge.journal_db import Database, locked

SCHEMA = """
CREATE TABLE IF NOT EXISTS outbox (
    submission_id TEXT PRIMARY KEY,
    session TEXT NOT NULL,
    request TEXT NOT NULL,              -- the send's JSON body, submission id included
    queued_at REAL NOT NULL,
    sent_at REAL,
    receipt TEXT
);
"""


class Outbox(Database):
    @locked
    def queue_send(self, session: str, request: dict[str, Any]) -> None:
        self._db.execute(
            "INSERT OR IGNORE INTO outbox (submission_id, session, request, queued_at) "
            "VALUES (?, ?, ?, ?)",
            (request["submission_id"], session, json.dumps(request), self._clock()),
        )

    @locked
    def unsent(self) -> list[tuple[str, dict[str, Any]]]:
        rows = self._db.execute(
            "SELECT session, request FROM outbox WHERE sent_at IS NULL ORDER BY queued_at"
        ).fetchall()
        return [(r["session"], json.loads(r["request"])) for r in rows]

    @locked
    def sent(self, submission_id: str, receipt: dict[str, Any]) -> None:
        self._db.execute(
            "UPDATE outbox SET sent_at = ?, receipt = ? WHERE submission_id = ?",
            (self._clock(), json.dumps(receipt), submission_id),
        )
