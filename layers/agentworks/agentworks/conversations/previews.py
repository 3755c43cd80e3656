"""A conversation's newest message as a list shows it (the Inbox, the Messages view)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentworks import limits
from agentworks.conversations.inbox_models import MessagePreview
from agentworks.messaging.models import iso

if TYPE_CHECKING:
    from agentworks.messaging.conversation_store import ConversationStore


def latest_preview(
    conversations: ConversationStore, ulid: str, now_ms: int
) -> MessagePreview | None:
    """The newest live message's first line: one eventually consistent Query (a preview may
    lag a moment behind)."""
    newest = conversations.head(ulid, now_ms, consistent=False).latest
    if newest is None or not newest.is_live(now_ms):
        return None
    first_line = (newest.body.strip().splitlines() or [""])[0]
    return MessagePreview(
        sender=newest.sender,
        kind=newest.framing.kind,
        first_line=first_line[: limits.MESSAGE_PREVIEW_MAX_CHARS],
        created_at=iso(newest.created_at) or "",
    )
