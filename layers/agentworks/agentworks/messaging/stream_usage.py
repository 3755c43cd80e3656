"""Usage counted from the messages table's stream (the notifier's batches), so a send
makes no request for it: each stored message counts as sent, with its stored size, for
the account its conversation belongs to; the notifier adds the notices it posted and the
listeners it dropped. One `ADD` per account-day per batch, whatever the batch holds.

A message item does not name its account (bytes on every send); its conversation does,
and never changes it: one GetItem of the conversation per process and conversation.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agentworks import limits, prices
from agentworks.item_size import item_size
from agentworks.messaging import keys
from agentworks.observability import count, logger
from agentworks.usage.counts import Counts, day_of, shard_of
from agentworks.usage.usage_store import UsageStore

# conversation ulid -> the account it belongs to (None: no longer stored)
AccountOf = Callable[[str], str | None]


@dataclass(frozen=True)
class StoredMessage:
    """A message the stream says was stored: where, when and how big."""

    conversation: str
    created_ms: int
    stored_bytes: int
    event_id: str


def stored_messages(records: Iterable[Mapping[str, Any]]) -> list[StoredMessage]:
    """The `CONV#…/M#…` INSERTs of a batch (modifies, removes and other items count nothing)."""
    found = []
    for record in records:
        image = (record.get("dynamodb") or {}).get("NewImage") or {}
        pk = str((image.get("pk") or {}).get("S", ""))
        sk = str((image.get("sk") or {}).get("S", ""))
        if record.get("eventName") != "INSERT" or not pk.startswith("CONV#"):
            continue
        if not keys.is_message(sk):
            continue
        created = (image.get("created_at") or {}).get("N")
        found.append(
            StoredMessage(
                conversation=pk.removeprefix("CONV#"),
                created_ms=int(created) if created is not None else 0,
                stored_bytes=item_size(image) + prices.DYNAMODB_ITEM_OVERHEAD_BYTES,
                event_id=str(record.get("eventID") or pk + sk),
            )
        )
    return found


class AccountCache:
    """`account_of` with memory: a conversation's account is fixed at its creation."""

    def __init__(self, account_of: AccountOf, size: int = limits.USAGE_ACCOUNT_CACHE) -> None:
        self._account_of = account_of
        self._size = size
        self._known: OrderedDict[str, str] = OrderedDict()

    def __call__(self, conversation: str) -> str | None:
        if conversation in self._known:
            self._known.move_to_end(conversation)
            return self._known[conversation]
        account = self._account_of(conversation)
        if account is not None:
            self._known[conversation] = account
            if len(self._known) > self._size:
                self._known.popitem(last=False)
        return account


class StreamUsage:
    def __init__(self, store: UsageStore, account_of: AccountOf) -> None:
        self._store = store
        self._account_of = AccountCache(account_of)

    def count(
        self,
        records: Iterable[Mapping[str, Any]],
        also: Mapping[tuple[str, str], Counts] | None = None,
    ) -> int:
        """Adds a batch's sends (and `also`: {(account, day): counts} the notifier
        gathered) to the counters; returns how many account-days it wrote.

        Runs after the batch's notices: a failed write is dropped and counted
        (UsageWritesDropped), never raised, because a retried batch would post every
        notice again and add the account-days already written a second time."""
        totals: dict[tuple[str, str], Counts] = dict(also or {})
        shards: dict[tuple[str, str], int] = {}
        for message in stored_messages(records):
            account = self._account_of(message.conversation)
            if account is None:
                continue  # retired and deleted before this batch ran: nobody to bill
            at = (account, day_of(message.created_ms / 1000))
            sent = Counts(messages_sent=1, stored_bytes=message.stored_bytes)
            totals[at] = totals.get(at, Counts()) + sent
            shards.setdefault(at, shard_of(message.event_id))
        written = 0
        for (account, day), counts in totals.items():
            try:
                self._store.add(account, day, shards.get((account, day), 0), counts)
                written += 1
            except Exception:
                logger.exception("usage write dropped", extra={"account_id": account})
                count("UsageWritesDropped")
        return written
