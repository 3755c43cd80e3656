"""Page reads of a conversation's chain and of a name's mailbox (M3, M4).

An inbox page filters one side's messages out of the conversation's single chain; the
newest message's per-side counts (from the head) say how many are waiting, so the Query
examines about as many items as it needs and an inbox with nothing new costs no Query.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentworks.dynamo import from_item, live_item, to_item
from agentworks.ids import Side
from agentworks.messaging import keys
from agentworks.messaging.conversation_items import message_from_item
from agentworks.messaging.cursors import InboxPosition
from agentworks.messaging.models import Head, MailboxEntry, StoredMessage

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# A page read examines at most this many items per Query (DynamoDB also stops at 1 MB).
_MAX_EXAMINED = 1_000


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


class MessagePages:
    """The page reads of `ConversationStore` (which holds `_db` and `_table`)."""

    _db: DynamoDBClient
    _table: str

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

    def received_before(
        self, conversation: str, side: Side, seq: int, limit: int
    ) -> list[StoredMessage]:
        """Up to `limit` messages delivered to `side` before message `seq`, newest first,
        with their bodies (the notes a Crew's run reads with a request, C1)."""
        if seq <= 1:
            return []
        response = self._db.query(
            TableName=self._table,
            KeyConditionExpression="pk = :pk AND sk BETWEEN :first AND :before",
            FilterExpression="to_side = :side",
            ExpressionAttributeValues=to_item(
                {
                    ":pk": keys.conversation(conversation)["pk"],
                    ":first": keys.message(conversation, max(1, seq - 2 * limit))["sk"],
                    ":before": keys.message(conversation, max(1, seq - 1))["sk"],
                    ":side": side,
                }
            ),
            ScanIndexForward=False,
            ConsistentRead=True,
        )
        return [message_from_item(from_item(i) or {}) for i in response["Items"]][:limit]

    def mailbox_page(
        self, agent_id: str, after_seq: int, limit: int, now_ms: int
    ) -> list[MailboxEntry]:
        response = self._db.query(
            TableName=self._table,
            KeyConditionExpression="pk = :pk AND sk > :after",
            ExpressionAttributeValues=to_item(
                {
                    ":pk": keys.mailbox_pk(agent_id),
                    ":after": keys.seq_key(after_seq),
                }
            ),
            Limit=limit,
            ConsistentRead=True,
        )
        entries = []
        for raw in response["Items"]:
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
