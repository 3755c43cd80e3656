"""What a listener follows, and where its item lives so one Query finds it.

A listener follows a whole name (every inbox of it, first contacts in its mailbox
included), one inbox, or its account's runs (the web console's pages, C5). Its item lives in
the partition of the side it listens on: the name's (`agent:<agent_id>`) for a named side,
the inbox's (`inbox:<inbox_id>`) for an unnamed one, the account's (`console:<account_id>`)
for the console. A stored message names its receiving side's agent (`to_agent`), so the
notifier reads exactly one partition per message and keeps the listeners whose scope
covers the inbox. A re-created name is a new identity: its old listeners hear nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

WHOLE_NAME = "*"


@dataclass(frozen=True)
class Follow:
    partition: str  # agent:<agent_id> or inbox:<inbox_id>
    scope: str  # WHOLE_NAME, or the one inbox_id heard

    def hears(self, inbox_id: str) -> bool:
        return self.scope in (WHOLE_NAME, inbox_id)

    @property
    def agent_id(self) -> str | None:
        """The name's identity, for a listener on a named side."""
        return (
            self.partition.removeprefix("agent:") if self.partition.startswith("agent:") else None
        )


def console(account_id: str) -> Follow:
    """The account's console: a notice when one of its runs (a function call, a workflow run
    or step, a Relay run) changes."""
    return Follow(f"console:{account_id}", WHOLE_NAME)


def whole_name(agent_id: str) -> Follow:
    return Follow(f"agent:{agent_id}", WHOLE_NAME)


def one_inbox(inbox_id: str, agent_id: str | None) -> Follow:
    """An inbox, held by the name `agent_id` (None: an unnamed side)."""
    return Follow(partition_of(inbox_id, agent_id), inbox_id)


def partition_of(inbox_id: str, agent_id: str | None) -> str:
    """Where the listeners of a message delivered to `inbox_id` (held by `agent_id`) live."""
    return f"agent:{agent_id}" if agent_id else f"inbox:{inbox_id}"
