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

from typing import TYPE_CHECKING, Any, cast

from botocore.exceptions import ClientError

from agentworks import limits
from agentworks.dynamo import (
    TransactionCancelled,
    applied,
    condition_failed,
    from_item,
    live_item,
    to_item,
    transact_write,
)
from agentworks.ids import Side
from agentworks.messaging import keys
from agentworks.messaging.conversation_items import (
    conversation_from_item,
    conversation_to_item,
    conversation_ttl,
    crew_key,
    message_from_item,
    message_to_item,
    named_keys,
    ttl_after,
)
from agentworks.messaging.lifecycle_store import admission_items, idle_key, live_attributes
from agentworks.messaging.message_page_store import MessagePages
from agentworks.messaging.models import (
    PENDING_RECEIPT,
    Conversation,
    Head,
    MailboxEntry,
    Registration,
    StoredMessage,
)
from agentworks.messaging.submission_store import SubmissionBindings

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

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


class ConversationStore(MessagePages, SubmissionBindings):
    """Conversations, their message chain and mailboxes; the page reads come from
    `MessagePages`, submission bindings (M2) from `SubmissionBindings`."""

    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._db = client
        self._table = table

    # ---- reads ----

    def head(self, conversation: str, now_ms: int, consistent: bool = True) -> Head:
        """META and the newest message in one Query (strongly consistent unless told):
        `M#…` sorts before `META`, so reading backwards from the top returns META, then
        message N."""
        response = self._db.query(
            TableName=self._table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues=to_item({":pk": keys.conversation(conversation)["pk"]}),
            ScanIndexForward=False,
            Limit=2,
            ConsistentRead=consistent,
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
        return Head(conv, latest, consistent)

    def get_conversation(self, conversation: str, now_ms: int) -> Conversation | None:
        response = self._db.get_item(
            TableName=self._table,
            Key=to_item(keys.conversation(conversation)),
            ConsistentRead=True,
        )
        data = live_item(from_item(response.get("Item")), now_ms)
        return conversation_from_item(data) if data else None

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
        entry, with the target's mailbox sequence moved under its own condition. The
        conversation joins its account's NamedByAccount index (the Messages view)."""
        live = live_attributes(conv.account_id, conv.activity_hour, conv.conversation)
        account_cap, store_cap = admission_items(self._table, conv.account_id)
        items: dict[str, dict[str, Any]] = {
            "conversation": self._put(
                conversation_to_item(conv) | live | named_keys(conv), "attribute_not_exists(pk)"
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
                    keys.TTL_ATTRIBUTE: ttl_after(
                        mailbox.created_at, limits.MESSAGE_RETENTION_SECONDS
                    ),
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
        return applied(
            self._db.update_item,
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
        return applied(
            self._db.update_item,
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

    # ---- status (C4) ----

    def set_status(self, conversation: str, status: str, from_statuses: tuple[str, ...]) -> bool:
        """Moves the conversation to `status` (active is stored as no status) from one of
        `from_statuses`; False when it is elsewhere or gone."""
        allowed = {f":from{i}": s for i, s in enumerate(x for x in from_statuses if x != "active")}
        checks = [f"#status IN ({', '.join(allowed)})"] if allowed else []
        if "active" in from_statuses:
            checks.append("attribute_not_exists(#status)")
        request: dict[str, Any] = {
            "TableName": self._table,
            "Key": to_item(keys.conversation(conversation)),
            "ConditionExpression": f"attribute_exists(pk) AND ({' OR '.join(checks)})",
            "ExpressionAttributeNames": {"#status": "status"},
        }
        if status == "active":
            request["UpdateExpression"] = "REMOVE #status"
        else:
            request["UpdateExpression"] = "SET #status = :status"
            allowed[":status"] = status
        if allowed:
            request["ExpressionAttributeValues"] = to_item(allowed)
        return applied(self._db.update_item, **request)

    def delete_messages(self, conversation: str) -> int:
        """Deletes every message of the conversation (its META stays, closed); how many."""
        query: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
            "ExpressionAttributeValues": to_item(
                {":pk": keys.conversation(conversation)["pk"], ":prefix": keys.MESSAGE_PREFIX}
            ),
            "ProjectionExpression": "pk, sk",
        }
        deleted = 0
        while True:
            page = self._db.query(**query)
            for key in page["Items"]:
                self._db.delete_item(TableName=self._table, Key=key)
                deleted += 1
            if "LastEvaluatedKey" not in page:
                return deleted
            query["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    # ---- helpers ----

    def _put(self, item: dict[str, Any], condition: str) -> dict[str, Any]:
        return {
            "Put": {
                "TableName": self._table,
                "Item": to_item(item),
                "ConditionExpression": condition,
            }
        }
