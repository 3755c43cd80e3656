"""Reading the audit log (C6): account admins page through their account's entries, oldest
first, optionally one conversation's. The cursor is signed and names the account and the
filter it pages, so it can't be replayed elsewhere."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentworks import limits
from agentworks.audit.entries import AuditEntry
from agentworks.audit.models import AuditActor, AuditEntryView, AuditPage
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.errors import InvalidInput
from agentworks.ids import parse_conversation_id, parse_inbox_id
from agentworks.messaging.models import iso

if TYPE_CHECKING:
    from agentworks.audit.audit_store import AuditStore
    from agentworks.identity.models import Principal
    from agentworks.signing import Signer

_PURPOSE = "audit-cursor/v1"


def entry_view(entry: AuditEntry) -> AuditEntryView:
    return AuditEntryView(
        entry_id=entry.entry_id,
        at=iso(entry.at) or "",
        conversation_id=f"cnv_{entry.conversation}",
        inbox_id=entry.inbox_id,
        action=entry.action,
        actor=AuditActor(
            kind=entry.actor.kind,
            connection_id=entry.actor.connection_id,
            run_id=entry.actor.run_id,
        ),
        message_id=entry.message_id,
        state=entry.state,
        kind=entry.kind,
        detail=entry.detail,
    )


class AuditLog:
    def __init__(self, store: AuditStore, signer: Signer, clock: Clock = SYSTEM_CLOCK) -> None:
        self._store = store
        self._signer = signer
        self._clock = clock

    def entries(
        self,
        principal: Principal,
        inbox_id: str | None = None,
        after: str | None = None,
        limit: int | None = None,
    ) -> AuditPage:
        """A page of the caller's account's audit entries. Another account's conversation
        reads exactly like an unknown one: an empty page."""
        principal.require_account_admin()
        page = limits.AUDIT_PAGE_DEFAULT if limit is None else limit
        if not 1 <= page <= limits.AUDIT_PAGE_MAX:
            raise InvalidInput(f"limit must be 1–{limits.AUDIT_PAGE_MAX}.", field="limit")
        conversation = None
        if inbox_id is not None:
            try:
                conversation = (
                    parse_conversation_id(inbox_id)
                    if inbox_id.startswith("cnv_")
                    else parse_inbox_id(inbox_id).conversation
                )
            except InvalidInput:
                raise InvalidInput(
                    "inbox_id is not an inbox id (ibx_…) or a conversation id (cnv_…).",
                    field="inbox_id",
                ) from None
        scope = f"{principal.account_id}/{conversation or '*'}"
        after_sk = self._open(after, scope)
        found, last = self._store.page(principal.account_id, conversation, after_sk, page)
        oldest = int(self._clock.now() * 1000) - limits.AUDIT_RETENTION_SECONDS * 1000
        return AuditPage(
            entries=[entry_view(e) for e in found if e.at > oldest],  # TTL lags: not shown
            next_cursor=self._signer.seal(_PURPOSE, {"s": scope, "k": last}) if last else None,
        )

    def _open(self, cursor: str | None, scope: str) -> str | None:
        if cursor is None or cursor.strip() in {"", "0"}:
            return None
        if len(cursor) > 512:
            raise InvalidInput("after is not a cursor issued by this server.", field="after")
        data = self._signer.open(_PURPOSE, cursor.strip(), what="after")
        key = data.get("k")
        if data.get("s") != scope or not isinstance(key, str):
            raise InvalidInput(
                "after was issued for another account or another inbox_id filter.",
                field="after",
            )
        return key
