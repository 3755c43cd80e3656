"""The bridge journal's bounds (issue 10): 2,000 messages per attachment and 32 MiB of
bodies in all, each at the limit and just past it; bodies dropped once offered."""

from __future__ import annotations

from pathlib import Path

from agentworks_cli.bridge import journal as journal_module
from agentworks_cli.bridge.journal import Incoming, Journal

MIB = 1024 * 1024
CONV = "01JZ0000000000000000000000"


def _messages(count: int, body: str = "hi", conv: str = CONV, start: int = 1) -> list[Incoming]:
    return [
        Incoming(f"msg_{conv}b{seq:010d}", f"ibx_{conv}b", seq, "agent:worker", body)
        for seq in range(start, start + count)
    ]


def _journal(tmp_path: Path) -> Journal:
    journal = Journal(tmp_path / "bridge" / "journal.sqlite3")
    for session in ("claude:a", "claude:b"):
        journal.attach(session, "claude", session[-1], "config.json")
    return journal


def test_at_most_2000_messages_per_attachment(tmp_path):
    journal = _journal(tmp_path)
    limit = journal_module.MESSAGES_PER_ATTACHMENT
    assert journal.take_in("claude:a", _messages(limit)).new == limit
    past = journal.take_in("claude:a", _messages(1, start=limit + 1))
    assert (past.new, past.full) == (0, True)  # left on the server for later
    assert journal.watermark("claude:a", f"ibx_{CONV}b") == limit  # not raised past it
    # Offered messages make room (their metadata goes first), queued ones never do.
    offered = journal.take_offers("claude:a", 1)
    journal.emitted("claude:a", [offered[0].message_id])
    assert journal.take_in("claude:a", _messages(1, start=limit + 1)).new == 1
    assert journal.queued("claude:a") == limit


def test_at_most_32_mib_of_bodies_in_all(tmp_path):
    journal = _journal(tmp_path)
    body = "x" * MIB
    half = journal_module.BODY_BYTES_TOTAL // MIB // 2
    assert journal.take_in("claude:a", _messages(half, body)).new == half
    assert journal.take_in("claude:b", _messages(half, body)).new == half  # exactly 32 MiB
    past = journal.take_in("claude:b", _messages(1, body, start=half + 1))
    assert past.full and past.new == 0
    # Offering drops the body: room again.
    offered = journal.take_offers("claude:a", 1)
    journal.emitted("claude:a", [offered[0].message_id])
    assert journal.take_in("claude:b", _messages(1, body, start=half + 1)).new == 1


def test_a_body_is_kept_until_it_is_offered(tmp_path):
    journal = _journal(tmp_path)
    journal.take_in("claude:a", _messages(2, "secret"))
    [first] = journal.take_offers("claude:a", 1)
    assert first.body == "secret"
    journal.emitted("claude:a", [first.message_id])
    bodies = journal._db.execute("SELECT body FROM messages ORDER BY seq").fetchall()
    assert [row["body"] for row in bodies] == [None, "secret"]


def test_a_journal_of_an_earlier_release_gains_the_read_position_column(tmp_path):
    import sqlite3

    path = tmp_path / "bridge" / "journal.sqlite3"
    path.parent.mkdir()
    old_schema = journal_module._SCHEMA.replace("    read_after TEXT,", "")
    with sqlite3.connect(path) as db:
        db.executescript(old_schema)
    journal = Journal(path)
    journal.attach("claude:a", "claude", "a", "config.json")
    assert journal.take_in("claude:a", _messages(1), read_after="cursor-1").new == 1
    [channeled] = [o.message_id for o in journal.take_channel_offers("claude:a", 5)]
    assert journal.channeled("claude:a")[0].read_after == "cursor-1"
    assert journal.states("claude:a") == {"channeled": 1}
    # Not final: the next Stop's batch takes it again; an acknowledgement would have ended it.
    assert [o.message_id for o in journal.take_offers("claude:a", 5)] == [channeled]
