"""Reading an attachment's messages from the server into the journal.

Catch-up (after a start or a reconnect) reads oldest first, in batches of 20: the name's
mailbox (first contacts) from its saved cursor, then every inbox the attachment knows from
its own. A notice from the push channel reads just the inbox it names (or the mailbox, for
an inbox not known yet). A read position is saved only after its page is in the journal,
so a crash re-reads a page, and the watermark drops what was taken in already.
"""

from __future__ import annotations

from typing import Any, Protocol

from agentworks_cli.bridge.journal import Attachment, Incoming, Journal, message_seq

BATCH = 20


class Server(Protocol):
    def read(
        self, *, agent_name: str, inbox_id: str | None, after: str | None, limit: int
    ) -> dict[str, Any]:
        """One page of GET /v1/messages (a ReadPage)."""
        ...


def _incoming(message: dict[str, Any]) -> Incoming:
    return Incoming(
        message_id=str(message["message_id"]),
        inbox_id=str(message["inbox_id"]),
        seq=message_seq(str(message["message_id"])),
        sender=str(message["sender"]),
        body=str(message["body"]),
    )


class Intake:
    def __init__(self, journal: Journal, server_of: Any) -> None:
        self._journal = journal
        self._server_of = server_of  # Attachment -> Server (its config's connection)

    def _drain(self, attachment: Attachment, inbox_id: str | None, cursor: str | None) -> int:
        """Reads pages until one comes back short; saves the cursor after each page."""
        server: Server = self._server_of(attachment)
        taken = 0
        while True:
            page = server.read(
                agent_name=attachment.agent_name, inbox_id=inbox_id, after=cursor, limit=BATCH
            )
            messages = page.get("messages") or []
            # Where to read it again for its receipt (a first contact: its inbox's start).
            read_after = cursor if inbox_id is not None else None
            result = self._journal.take_in(
                attachment.session, [_incoming(m) for m in messages], read_after
            )
            taken += result.new
            if result.full:
                return taken  # the read position stays: the rest is read once there is room
            cursor = str(page["next_cursor"])
            if inbox_id is None:
                self._journal.save_mailbox_cursor(attachment.session, cursor)
            else:
                self._journal.save_inbox_cursor(attachment.session, inbox_id, cursor)
            if len(messages) < BATCH:
                return taken

    def catch_up(self, attachment: Attachment) -> int:
        """Everything waiting for the attachment since its saved positions; how many new."""
        taken = self._drain(attachment, None, attachment.mailbox_cursor)
        for inbox_id, cursor in self._journal.inboxes(attachment.session).items():
            taken += self._drain(attachment, inbox_id, cursor)
        return taken

    def receipts(self, attachment: Attachment, inbox_id: str, after: str | None) -> dict[str, str]:
        """message id -> the agent's receipt, for the inbox's page after `after`, again."""
        server: Server = self._server_of(attachment)
        page = server.read(
            agent_name=attachment.agent_name, inbox_id=inbox_id, after=after, limit=BATCH
        )
        return {
            str(m["message_id"]): str(m.get("receipt") or "") for m in page.get("messages") or []
        }

    def on_notice(self, attachment: Attachment, notice: dict[str, Any]) -> int:
        inbox_id = str(notice.get("inbox_id") or "")
        known = self._journal.inboxes(attachment.session)
        if inbox_id in known:
            return self._drain(attachment, inbox_id, known[inbox_id])
        fresh = self._journal.attachment(attachment.session) or attachment
        return self._drain(fresh, None, fresh.mailbox_cursor)
