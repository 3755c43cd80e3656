"""What one account used on one day (UTC): the counters the platform keeps, and the
arithmetic on them. No storage here (usage_store.py) and no prices (costs.py)."""

from __future__ import annotations

import zlib
from dataclasses import dataclass, fields
from datetime import UTC, datetime, timedelta

from agentworks import limits


@dataclass
class Counts:
    """Counters of one account-day; every field only ever grows (DynamoDB `ADD`)."""

    messages_sent: int = 0  # message items stored (first contacts and answers included)
    stored_bytes: int = 0  # their stored size, item overhead included; each is kept 7 days
    messages_read: int = 0  # messages returned by read pages (inbox and mailbox)
    read_requests: int = 0  # the pages that returned them (empty pages are not counted)
    function_calls: int = 0  # Crew function calls and Relay run executions that ended
    # States entered by those executions, Crews' message runs and workflow runs.
    state_transitions: int = 0
    push_seconds: int = 0  # WebSocket connection time of the push channel's listeners
    push_notices: int = 0  # notices posted to those listeners
    # Attached MCP servers' tools called by Crews' turns and workflow steps (issue 28).
    mcp_tool_calls: int = 0
    relay_mcp_tool_calls: int = 0  # by relay code, through the API (issue 28)

    def __add__(self, other: Counts) -> Counts:
        return Counts(**{f: getattr(self, f) + getattr(other, f) for f in COUNTERS})

    def __bool__(self) -> bool:
        return any(getattr(self, f) for f in COUNTERS)

    def nonzero(self) -> dict[str, int]:
        """The counters to add, by attribute name (a zero would only cost bytes)."""
        return {f: getattr(self, f) for f in COUNTERS if getattr(self, f)}


COUNTERS: tuple[str, ...] = tuple(f.name for f in fields(Counts))


def day_of(epoch_seconds: float) -> str:
    """The UTC day (YYYY-MM-DD) an instant falls on: the counters' unit of time."""
    return datetime.fromtimestamp(epoch_seconds, UTC).date().isoformat()


def days_back(today: str, days: int) -> list[str]:
    """`today` and the `days - 1` days before it, oldest first."""
    last = datetime.fromisoformat(today).date()
    return [(last - timedelta(days=n)).isoformat() for n in range(days - 1, -1, -1)]


def day_end(day: str) -> int:
    """Epoch seconds at the end of `day` (UTC)."""
    start = datetime.fromisoformat(day).replace(tzinfo=UTC)
    return int((start + timedelta(days=1)).timestamp())


def shard_of(key: str) -> int:
    """Which of an account-day's items a writer adds to: spread by something the writer
    knows (a call id, a connection id), stable so a retried write lands on the same one."""
    return zlib.crc32(key.encode()) % limits.USAGE_SHARDS
