"""Data access for conversations, their messages and mailboxes.

A conversation's messages form one chain: `M#<seq>`, gapless, both directions. Each
message carries the conversation's state as of itself (the sliding rate window and the
per-side delivery counts), so a send is one strongly consistent Query (META + the newest
message) and one conditional PutItem of the next message (`attribute_not_exists`). The
put only succeeds if nobody wrote that seq first, and seq N is written only after seq N-1
was read, so sequence numbers commit in order: a reader that has seen message N has seen
every message before it. A first contact stays one transaction (conversation, message 1,
mailbox entry, counters).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from botocore.exceptions import ClientError

from agentworks import limits
from agentworks.dynamo import (
    TransactionCancelled,
    condition_failed,
    from_item,
    to_item,
    transact_write,
)
from agentworks.ids import Side
from agentworks.messaging import keys
from agentworks.messaging.cursors import InboxPosition
from agentworks.messaging.lifecycle_store import admission_items, idle_key, live_attributes
from agentworks.messaging.models import (
    PENDING_RECEIPT,
    Conversation,
    Head,
    MailboxEntry,
    Party,
    Registration,
    StoredMessage,
)
from agentworks.messaging.submission_store import SubmissionBindings, live_item

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# A page read examines at most this many items per Query (DynamoDB also stops at 1 MB).
_MAX_EXAMINED = 1_000
# Sparse index of the conversations whose target is a Crew (M8 state), newest first.
BY_CREW = "ByCrew"


class WriteConflict(Exception):
    """Someone else wrote first (the next message, or the mailbox): read again and retry."""


class CapReached(Exception):
    """The initiating account ("account") or the store ("store") holds its maximum of live
    conversations (M11)."""

    def __init__(self, scope: str) -> None:
        super().__init__(scope)
        self.scope = scope


class EvictionBlocked(Exception):
    """The oldest message is still being delivered, so the inbox is full (M11)."""


class ConversationExists(Exception):
    """A first contact's conversation id is taken (an earlier attempt of this very send
    committed): retrying cannot help."""


def _ttl(ms: int, seconds: int) -> int:
    return ms // 1000 + seconds


def _party_to_map(party: Party) -> dict[str, Any]:
    return {"kind": party.kind, "agent_id": party.agent_id, "agent_name": party.agent_name}


def _party_from_map(data: dict[str, Any]) -> Party:
    return Party(
        kind=data["kind"], agent_id=data.get("agent_id"), agent_name=data.get("agent_name")
    )


def conversation_ttl(last_activity_ms: int) -> int:
    """META outlives the idle period by the expired-lookup period (M11)."""
    return _ttl(last_activity_ms, limits.INBOX_IDLE_SECONDS + limits.EXPIRED_LOOKUP_SECONDS)


def crew_key(account_id: str, crew_id: str) -> str:
    """The ByCrew partition of one Crew's conversations."""
    return f"{account_id}#{crew_id}"


def conversation_to_item(conv: Conversation) -> dict[str, Any]:
    return {
        **keys.conversation(conv.conversation),
        "account_id": conv.account_id,
        "party_a": _party_to_map(conv.parties["a"]),
        "party_b": _party_to_map(conv.parties["b"]),
        "created_at": conv.created_at,
        "last_activity": conv.last_activity,
        "activity_hour": conv.activity_hour,
        "evicted_at": conv.evicted_at,
        keys.TTL_ATTRIBUTE: conversation_ttl(conv.last_activity),
    }


def conversation_from_item(data: dict[str, Any]) -> Conversation:
    return Conversation(
        conversation=data["pk"].removeprefix("CONV#"),
        account_id=data["account_id"],
        parties={"a": _party_from_map(data["party_a"]), "b": _party_from_map(data["party_b"])},
        created_at=int(data["created_at"]),
        last_activity=int(data["last_activity"]),
        activity_hour=int(data.get("activity_hour", 0)),
        evicted_at=data.get("evicted_at"),
    )


def message_to_item(msg: StoredMessage) -> dict[str, Any]:
    return {
        **keys.message(msg.conversation, msg.seq),
        "to_side": msg.side,
        "sender": msg.sender,
        "body": msg.body,
        "created_at": msg.created_at,
        "receipt": msg.receipt,
        "rate": msg.window,
        "n_a": msg.counts["a"],
        "n_b": msg.counts["b"],
        "submission_id": msg.submission_id,
        keys.TTL_ATTRIBUTE: _ttl(msg.created_at, limits.MESSAGE_RETENTION_SECONDS),
    }


def message_from_item(data: dict[str, Any]) -> StoredMessage:
    ttl = data.get(keys.TTL_ATTRIBUTE)
    return StoredMessage(
        conversation=data["pk"].removeprefix("CONV#"),
        side=cast(Side, data["to_side"]),
        seq=keys.message_seq(data["sk"]),
        sender=data.get("sender", ""),
        body=data.get("body", ""),
        created_at=int(data["created_at"]),
        receipt=data.get("receipt", "stored"),
        window=[int(t) for t in data.get("rate", [])],
        counts={"a": int(data.get("n_a", 0)), "b": int(data.get("n_b", 0))},
        submission_id=data.get("submission_id"),
        expires_ttl=int(ttl) if ttl is not None else None,
    )


def _first_contact_refusal(cancelled: TransactionCancelled) -> Exception:
    """What a first contact's failed condition means (conflicts and throttling were
    retried by `transact_write` and never get here)."""
    if cancelled.failed("account_cap"):
        return CapReached("account")
    if cancelled.failed("store_cap"):
        return CapReached("store")
    if cancelled.failed("conversation"):
        return ConversationExists()
    if cancelled.failed("mailbox_seq") or cancelled.failed("mailbox"):
        return WriteConflict()  # the target's mailbox moved (or the name changed): read again
    return cancelled


@dataclass(frozen=True)
class PageResult:
    messages: list[StoredMessage]
    position: InboxPosition  # where the next read of this inbox starts


def _examine_budget(total_after: int, mine_after: int | None, wanted: int) -> int:
    """How many items one Query should examine to find `wanted` messages of this side
    among `total_after` newer ones of which `mine_after` are this side's: all of them when
    that is needed anyway, else the expected stretch (messages interleave) plus a margin."""
    if mine_after is None:
        budget = 2 * wanted
    elif mine_after <= wanted:
        budget = total_after
    else:
        budget = -(-total_after * wanted // mine_after) + 2
    return max(1, min(budget, _MAX_EXAMINED))


class ConversationStore(SubmissionBindings):
    """Conversations, their message chain and mailboxes; submission bindings (M2) come
    from `SubmissionBindings`."""

    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._db = client
        self._table = table

    # ---- reads ----

    def head(self, conversation: str, now_ms: int) -> Head:
        """META and the newest message in one strongly consistent Query: `M#…` sorts
        before `META`, so reading backwards from the top returns META, then message N."""
        response = self._db.query(
            TableName=self._table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues=to_item({":pk": keys.conversation(conversation)["pk"]}),
            ScanIndexForward=False,
            Limit=2,
            ConsistentRead=True,
        )
        conv: Conversation | None = None
        latest: StoredMessage | None = None
        for raw in response.get("Items", []):
            data = from_item(raw) or {}
            if data["sk"] == "META":
                meta = live_item(data, now_ms)
                conv = conversation_from_item(meta) if meta else None
            elif keys.is_message(data["sk"]) and latest is None:
                # Kept even past its TTL: the chain continues from its seq and window.
                latest = message_from_item(data)
        return Head(conv, latest)

    def get_conversation(self, conversation: str, now_ms: int) -> Conversation | None:
        response = self._db.get_item(
            TableName=self._table,
            Key=to_item(keys.conversation(conversation)),
            ConsistentRead=True,
        )
        data = live_item(from_item(response.get("Item")), now_ms)
        return conversation_from_item(data) if data else None

    def inbox_page(
        self,
        conversation: str,
        side: Side,
        after: InboxPosition,
        page_size: int,
        head: Head,
        now_ms: int,
    ) -> PageResult:
        """Up to `page_size` messages delivered to `side` after `after`, oldest first.

        The newest message's per-side count says how many are waiting, so an inbox with
        nothing new costs no Query at all, and the Query examines about as many items as
        it needs (the other side's messages sit between this side's). It filters on
        `to_side` and stops below META. The next position is the last item *examined*,
        so the other side's messages are not examined again."""
        latest = head.latest
        if latest is None or latest.seq <= after.seq:
            return PageResult([], after)
        mine_after = None if after.count is None else latest.counts[side] - after.count
        if mine_after is not None and mine_after <= 0:
            return PageResult([], after)
        total_after = latest.seq - after.seq
        found: list[StoredMessage] = []
        position = after
        query: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk AND sk BETWEEN :first AND :last",
            "FilterExpression": "to_side = :side",
            "ExpressionAttributeValues": to_item(
                {
                    ":pk": keys.conversation(conversation)["pk"],
                    ":first": keys.message_sk(after.seq + 1),
                    ":last": keys.message_sk(keys.LAST_SEQ),
                    ":side": side,
                }
            ),
            "ConsistentRead": True,
        }
        mine_seen = 0  # this side's messages examined, expired ones included
        while True:
            waiting = None if mine_after is None else mine_after - mine_seen
            remaining = max(1, total_after - (position.seq - after.seq))
            query["Limit"] = _examine_budget(remaining, waiting, page_size - len(found))
            response = self._db.query(**query)
            for raw in response.get("Items", []):
                msg = message_from_item(from_item(raw) or {})
                mine_seen += 1
                # Expired-but-present messages are passed over, never shown.
                if msg.is_live(now_ms):
                    found.append(msg)
                position = InboxPosition(msg.seq, msg.counts[side])
            last_key = response.get("LastEvaluatedKey")
            if not last_key:
                # Examined to the end: everything up to the newest message of the head.
                if position.seq < latest.seq:
                    position = InboxPosition(latest.seq, latest.counts[side])
                break
            # Only the other side's messages lie between the last one kept and this key.
            examined = keys.message_seq((from_item(last_key) or {})["sk"])
            position = InboxPosition(max(position.seq, examined), position.count)
            if (
                len(found) >= page_size
                or position.seq >= latest.seq
                or (mine_after is not None and mine_seen >= mine_after)
            ):
                break  # a full page, or all the head announced for this side
            query["ExclusiveStartKey"] = last_key
        if len(found) > page_size:
            found = found[:page_size]
            position = InboxPosition(found[-1].seq, found[-1].counts[side])
        return PageResult(found, position)

    def sent_records(self, conversation: str, peer: Side, limit: int) -> list[StoredMessage]:
        """The newest messages delivered to `peer` — what the other side sent — no bodies."""
        query: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
            "FilterExpression": "to_side = :side",
            "ExpressionAttributeValues": to_item(
                {
                    ":pk": keys.conversation(conversation)["pk"],
                    ":prefix": keys.MESSAGE_PREFIX,
                    ":side": peer,
                }
            ),
            "ProjectionExpression": "pk, sk, to_side, created_at, receipt, sender, n_a, n_b",
            "ScanIndexForward": False,
            "Limit": 2 * limit,
            "ConsistentRead": True,
        }
        records: list[StoredMessage] = []
        while len(records) < limit:
            response = self._db.query(**query)
            records += [message_from_item(from_item(i) or {}) for i in response["Items"]]
            if "LastEvaluatedKey" not in response:
                break
            query["ExclusiveStartKey"] = response["LastEvaluatedKey"]
        return records[:limit]

    def oldest_live(self, conversation: str, now_ms: int) -> StoredMessage | None:
        """The oldest message still retained (evictions and TTL remove from the front)."""
        query: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
            "ExpressionAttributeValues": to_item(
                {":pk": keys.conversation(conversation)["pk"], ":prefix": keys.MESSAGE_PREFIX}
            ),
            "ProjectionExpression": "pk, sk, to_side, created_at, n_a, n_b, expires_ttl",
            "Limit": 10,
            "ConsistentRead": True,
        }
        while True:
            response = self._db.query(**query)
            for raw in response["Items"]:
                msg = message_from_item(from_item(raw) or {})
                if msg.is_live(now_ms):
                    return msg
            if "LastEvaluatedKey" not in response:
                return None
            query["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def find_submission(
        self, conversation: str, sender: str, submission_id: str, since_ms: int
    ) -> StoredMessage | None:
        """The message of a conversation stored under `submission_id` by `sender` since
        `since_ms`, if any — only needed to recover a send that stopped between storing its
        message and naming it on its binding (rare: reads up to the whole history)."""
        query: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
            "FilterExpression": (
                "submission_id = :sid AND sender = :sender AND created_at >= :since"
            ),
            "ExpressionAttributeValues": to_item(
                {
                    ":pk": keys.conversation(conversation)["pk"],
                    ":prefix": keys.MESSAGE_PREFIX,
                    ":sid": submission_id,
                    ":sender": sender,
                    ":since": since_ms,
                }
            ),
            "ScanIndexForward": False,
            "ConsistentRead": True,
        }
        while True:
            response = self._db.query(**query)
            for raw in response["Items"]:
                return message_from_item(from_item(raw) or {})
            if "LastEvaluatedKey" not in response:
                return None
            query["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def mailbox_page(
        self, agent_id: str, after_seq: int, limit: int, now_ms: int
    ) -> list[MailboxEntry]:
        response = self._db.query(
            TableName=self._table,
            KeyConditionExpression="pk = :pk AND sk > :after",
            ExpressionAttributeValues=to_item(
                {
                    ":pk": keys.mailbox(agent_id, 0)["pk"],
                    ":after": keys.seq_key(after_seq),
                }
            ),
            Limit=limit,
            ConsistentRead=True,
        )
        entries = []
        for raw in response.get("Items", []):
            data = live_item(from_item(raw), now_ms)
            if data is None:
                continue
            entries.append(
                MailboxEntry(
                    agent_id=agent_id,
                    seq=int(data["sk"]),
                    message_id=data["message_id"],
                    conversation_id=data["conversation_id"],
                    reply_inbox_id=data["reply_inbox_id"],
                    sender=data["sender"],
                    body=data["body"],
                    created_at=int(data["created_at"]),
                )
            )
        return entries

    def get_message(self, conversation: str, seq: int, now_ms: int) -> StoredMessage | None:
        response = self._db.get_item(
            TableName=self._table,
            Key=to_item(keys.message(conversation, seq)),
            ConsistentRead=True,
        )
        data = live_item(from_item(response.get("Item")), now_ms)
        return message_from_item(data) if data else None

    def crew_conversations(
        self, account_id: str, crew_id: str, before: str | None, limit: int
    ) -> tuple[list[str], bool]:
        """A page of the Crew's conversations, newest first, starting below `before` (a
        conversation ulid); and whether more follow."""
        query: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": BY_CREW,
            "KeyConditionExpression": "crew_key = :crew"
            + (" AND crew_sort < :before" if before else ""),
            "ExpressionAttributeValues": to_item(
                {":crew": crew_key(account_id, crew_id), ":before": before}
            ),
            "ScanIndexForward": False,
            "Limit": limit + 1,
        }
        response = self._db.query(**query)
        found = [(from_item(i) or {})["pk"].removeprefix("CONV#") for i in response["Items"]]
        return found[:limit], len(found) > limit

    def get_receipt(self, conversation: str, side: Side, seq: int, now_ms: int) -> str | None:
        """The receipt of message `seq` if it was delivered to `side` (else None)."""
        response = self._db.get_item(
            TableName=self._table,
            Key=to_item(keys.message(conversation, seq)),
            ProjectionExpression="receipt, to_side, expires_ttl",
            ConsistentRead=True,
        )
        data = live_item(from_item(response.get("Item")), now_ms)
        if not data or data.get("to_side") != side:
            return None
        return str(data["receipt"])

    # ---- writes ----

    def create(
        self,
        conv: Conversation,
        message: StoredMessage,
        mailbox: MailboxEntry,
        target: Registration,
    ) -> None:
        """First contact: new conversation, its first message, and the target's mailbox
        entry, with the target's mailbox sequence moved under its own condition."""
        live = live_attributes(conv.account_id, conv.activity_hour, conv.conversation)
        account_cap, store_cap = admission_items(self._table, conv.account_id)
        items: dict[str, dict[str, Any]] = {
            "conversation": self._put(
                conversation_to_item(conv) | live, "attribute_not_exists(pk)"
            ),
            "message": self._put(message_to_item(message), "attribute_not_exists(pk)"),
            "mailbox": self._put(
                {
                    **keys.mailbox(mailbox.agent_id, mailbox.seq),
                    "message_id": mailbox.message_id,
                    "conversation_id": mailbox.conversation_id,
                    "reply_inbox_id": mailbox.reply_inbox_id,
                    "sender": mailbox.sender,
                    "body": mailbox.body,
                    "created_at": mailbox.created_at,
                    keys.TTL_ATTRIBUTE: _ttl(mailbox.created_at, limits.MESSAGE_RETENTION_SECONDS),
                },
                "attribute_not_exists(pk)",
            ),
            "mailbox_seq": {
                "Update": {
                    "TableName": self._table,
                    "Key": to_item(keys.agent(target.account_id, target.name)),
                    "UpdateExpression": "SET mailbox_seq = :next",
                    "ConditionExpression": "agent_id = :id AND mailbox_seq = :seen",
                    "ExpressionAttributeValues": to_item(
                        {
                            ":next": mailbox.seq,
                            ":id": target.agent_id,
                            ":seen": target.mailbox_seq,
                        }
                    ),
                }
            },
            "account_cap": account_cap,
            "store_cap": store_cap,
        }
        try:
            transact_write(self._db, items)
        except TransactionCancelled as cancelled:
            raise _first_contact_refusal(cancelled) from None

    def create_direct(self, conv: Conversation, message: StoredMessage) -> None:
        """First contact with a Crew: the conversation and its first message, counted by the
        inbox caps like any other, with no mailbox (the platform receives for the Crew). The
        conversation joins the Crew's ByCrew index."""
        target = conv.parties["b"]
        assert target.kind == "crew" and target.agent_id
        live = live_attributes(conv.account_id, conv.activity_hour, conv.conversation)
        indexed = {
            "crew_key": crew_key(conv.account_id, target.agent_id),
            "crew_sort": conv.conversation,
        }
        account_cap, store_cap = admission_items(self._table, conv.account_id)
        items: dict[str, dict[str, Any]] = {
            "conversation": self._put(
                conversation_to_item(conv) | live | indexed, "attribute_not_exists(pk)"
            ),
            "message": self._put(message_to_item(message), "attribute_not_exists(pk)"),
            "account_cap": account_cap,
            "store_cap": store_cap,
        }
        try:
            transact_write(self._db, items)
        except TransactionCancelled as cancelled:
            raise _first_contact_refusal(cancelled) from None

    def append(self, message: StoredMessage) -> None:
        """Puts the next message of the chain; `WriteConflict` when that seq is taken."""
        item = to_item(message_to_item(message))
        try:
            self._db.put_item(
                TableName=self._table,
                Item=item,
                ConditionExpression="attribute_not_exists(pk)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if not condition_failed(error):
                raise
            if cast(dict[str, Any], error.response).get("Item") != item:
                raise WriteConflict() from None
            # The seq holds this very message: an earlier attempt committed and botocore,
            # not seeing the answer, sent it again. Stored once.

    def evict(self, conversation: str, seq: int) -> None:
        """Deletes message `seq` to keep the history bound (M11), unless it is still being
        delivered (`admitted`, not yet processed): then `EvictionBlocked`."""
        try:
            self._db.delete_item(
                TableName=self._table,
                Key=to_item(keys.message(conversation, seq)),
                ConditionExpression="attribute_not_exists(pk) OR receipt <> :pending",
                ExpressionAttributeValues=to_item({":pending": PENDING_RECEIPT}),
            )
        except ClientError as error:
            if condition_failed(error):
                raise EvictionBlocked() from None
            raise

    def move_activity(self, conversation: str, hour: int, now_ms: int) -> bool:
        """Moves a live conversation to a later activity hour in the idle indexes (and its
        META expiry): at most once an hour per conversation. False when it was retired or
        someone already moved it at least as far."""
        try:
            self._db.update_item(
                TableName=self._table,
                Key=to_item(keys.conversation(conversation)),
                UpdateExpression=(
                    "SET activity_hour = :hour, idle_key = :idle, last_activity = :now, "
                    f"{keys.TTL_ATTRIBUTE} = :ttl"
                ),
                ConditionExpression="attribute_exists(idle_store) AND activity_hour < :hour",
                ExpressionAttributeValues=to_item(
                    {
                        ":hour": hour,
                        ":idle": idle_key(hour, conversation),
                        ":now": now_ms,
                        ":ttl": conversation_ttl(now_ms),
                    }
                ),
            )
        except ClientError as error:
            if condition_failed(error):
                return False
            raise
        return True

    def set_receipt(
        self,
        conversation: str,
        side: Side,
        seq: int,
        receipt: str,
        allowed_from: list[str],
        now_ms: int,
    ) -> bool:
        """Moves a receipt forward; False when the message is gone, was not delivered to
        `side`, or is already further."""
        names = {f":from{i}": state for i, state in enumerate(allowed_from)}
        try:
            self._db.update_item(
                TableName=self._table,
                Key=to_item(keys.message(conversation, seq)),
                UpdateExpression="SET receipt = :receipt, receipt_at = :now",
                ConditionExpression="attribute_exists(pk) AND to_side = :side AND receipt IN ("
                + ", ".join(names)
                + ")",
                ExpressionAttributeValues=to_item(
                    {":receipt": receipt, ":now": now_ms, ":side": side, **names}
                ),
            )
        except ClientError as error:
            if condition_failed(error):
                return False
            raise
        return True

    # ---- helpers ----

    def _put(self, item: dict[str, Any], condition: str) -> dict[str, Any]:
        return {
            "Put": {
                "TableName": self._table,
                "Item": to_item(item),
                "ConditionExpression": condition,
            }
        }
