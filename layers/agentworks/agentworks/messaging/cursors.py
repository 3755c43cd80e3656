"""Read cursors (M3, M6): opaque, signed, and bound to what they page.

A conversation cursor names one inbox; a mailbox cursor names one agent identity.
Passing one where the other belongs, or for another inbox, is a 400.
`"0"` (or nothing) means "from the beginning".

An inbox cursor holds a position in the conversation's one sequence (`seq`, the last
message examined, either side's) and how many messages of that inbox had been delivered
up to it (`count`), so a read can tell from the newest message alone whether anything new
is waiting for this side and how far to look.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentworks.errors import InvalidInput
from agentworks.signing import Signer

_PURPOSE = "cursor/v1"


@dataclass(frozen=True)
class InboxPosition:
    seq: int
    count: int | None  # None: unknown (a cursor that didn't carry it)


START = InboxPosition(0, 0)


class Cursors:
    def __init__(self, signer: Signer) -> None:
        self._signer = signer

    def inbox(self, inbox_id: str, seq: int, count: int | None = None) -> str:
        data: dict[str, Any] = {"k": "inbox", "s": inbox_id, "q": seq}
        if count is not None:
            data["n"] = count
        return self._signer.seal(_PURPOSE, data)

    def inbox_at(self, inbox_id: str, position: InboxPosition) -> str:
        return self.inbox(inbox_id, position.seq, position.count)

    def mailbox(self, agent_id: str, seq: int) -> str:
        return self._signer.seal(_PURPOSE, {"k": "mailbox", "s": agent_id, "q": seq})

    def open_inbox(self, cursor: str | None, inbox_id: str) -> int:
        return self.open_inbox_position(cursor, inbox_id).seq

    def open_inbox_position(self, cursor: str | None, inbox_id: str) -> InboxPosition:
        data = self._open(cursor, "inbox", inbox_id)
        if data is None:
            return START
        count = data.get("n")
        valid = isinstance(count, int) and 0 <= count <= data["q"]
        return InboxPosition(data["q"], count if valid else None)

    def open_mailbox(self, cursor: str | None, agent_id: str) -> int:
        data = self._open(cursor, "mailbox", agent_id)
        return 0 if data is None else int(data["q"])

    def _open(self, cursor: str | None, kind: str, scope: str) -> dict[str, Any] | None:
        if cursor is None or cursor.strip() in {"", "0"}:
            return None
        if len(cursor) > 512:
            raise InvalidInput("after is not a cursor issued by this server.", field="after")
        data = self._signer.open(_PURPOSE, cursor.strip(), what="after")
        if data.get("k") != kind:
            other = "mailbox" if kind == "inbox" else "conversation"
            raise InvalidInput(
                f"after is a {other} cursor; this read needs a "
                f"{'conversation' if kind == 'inbox' else 'mailbox'} cursor.",
                field="after",
            )
        seq = data.get("q")
        if data.get("s") != scope or not isinstance(seq, int) or seq < 0:
            raise InvalidInput("after was issued for a different inbox or agent.", field="after")
        return data
