"""Every chat whose hook ran on this computer, attached or not: what a bare `agentworks
attach` picks from (discovery.py). Kept in the journal's file; never sent anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentworks_cli.bridge.journal_db import Database, locked

SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions_seen (
    session TEXT PRIMARY KEY,           -- every chat whose hook ran, attached or not: what
    provider TEXT NOT NULL,             -- `agentworks attach` picks from (never sent anywhere)
    cwd TEXT NOT NULL,
    cli_pid INTEGER,                    -- the CLI process that ran the hook, and its start
    cli_started REAL,                   -- time (a pid alone may be reused)
    event TEXT NOT NULL,
    seen_at REAL NOT NULL
);
"""


@dataclass(frozen=True)
class Sighting:
    """A chat whose hook ran on this computer."""

    session: str
    provider: str
    cwd: str
    cli_pid: int | None
    cli_started: float | None
    event: str
    seen_at: float


SESSIONS_SEEN_MAX = 200  # the oldest sightings go past this


class ChatsSeen(Database):
    @locked
    def saw(self, sighting: Sighting) -> None:
        with self._transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO sessions_seen (session, provider, cwd, cli_pid, "
                "cli_started, event, seen_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (sighting.session, sighting.provider, sighting.cwd, sighting.cli_pid,
                 sighting.cli_started, sighting.event, sighting.seen_at),
            )  # fmt: skip
            db.execute(
                "DELETE FROM sessions_seen WHERE session NOT IN (SELECT session FROM "
                "sessions_seen ORDER BY seen_at DESC LIMIT ?)",
                (SESSIONS_SEEN_MAX,),
            )

    @locked
    def sightings(self) -> list[Sighting]:
        rows = self._db.execute("SELECT * FROM sessions_seen ORDER BY seen_at DESC").fetchall()
        return [Sighting(**dict(r)) for r in rows]
