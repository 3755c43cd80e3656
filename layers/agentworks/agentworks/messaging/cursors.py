"""Read cursors (M3, M6): opaque, signed, and bound to what they page.

A conversation cursor names one inbox; a mailbox cursor names one agent identity.
Passing one where the other belongs, or for another inbox, is a 400.
`"0"` (or nothing) means "from the beginning".
"""

from __future__ import annotations

from agentworks.errors import InvalidInput
from agentworks.signing import Signer

_PURPOSE = "cursor/v1"


class Cursors:
    def __init__(self, signer: Signer) -> None:
        self._signer = signer

    def inbox(self, inbox_id: str, seq: int) -> str:
        return self._signer.seal(_PURPOSE, {"k": "inbox", "s": inbox_id, "q": seq})

    def mailbox(self, agent_id: str, seq: int) -> str:
        return self._signer.seal(_PURPOSE, {"k": "mailbox", "s": agent_id, "q": seq})

    def open_inbox(self, cursor: str | None, inbox_id: str) -> int:
        return self._open(cursor, "inbox", inbox_id)

    def open_mailbox(self, cursor: str | None, agent_id: str) -> int:
        return self._open(cursor, "mailbox", agent_id)

    def _open(self, cursor: str | None, kind: str, scope: str) -> int:
        if cursor is None or cursor.strip() in {"", "0"}:
            return 0
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
        return seq
