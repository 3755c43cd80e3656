"""Data access for conversations, their messages, mailboxes and submission bindings.

Every send is one TransactWriteItems: the conversation item moves forward under its
version (sequence numbers, rate window, counts) and the message is put beside it, so
a send is never half written and sequence numbers commit in order — a reader that has
seen message N has seen every message before it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from botocore.exceptions import ClientError

from agentworks import limits
from agentworks.dynamo import (
    cancellation_reasons,
    error_code,
    from_item,
    is_conditional_failure,
    to_item,
)
from agentworks.ids import MessageRef, Side
from agentworks.messaging import keys
from agentworks.messaging.agent_store import registration_from_item
from agentworks.messaging.lifecycle_store import admission_items, idle_key, live_attributes
from agentworks.messaging.models import (
    PENDING_RECEIPT,
    Conversation,
    MailboxEntry,
    Party,
    Registration,
    StoredMessage,
    SubmissionBinding,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class WriteConflict(Exception):
    """Someone else moved the conversation (or mailbox) first: read again and retry."""


class BindingExists(Exception):
    def __init__(self, binding: SubmissionBinding) -> None:
        super().__init__(binding.message_id)
        self.binding = binding


class CapReached(Exception):
    """The initiating account ("account") or the store ("store") holds its maximum of live
    conversations (M11)."""

    def __init__(self, scope: str) -> None:
        super().__init__(scope)
        self.scope = scope


class EvictionBlocked(Exception):
    """The oldest message is still being delivered, so the inbox is full (M11)."""


@dataclass(frozen=True)
class Submission:
    account_id: str
    sender: str
    submission_id: str
    binding: SubmissionBinding


def _ttl(ms: int, seconds: int) -> int:
    return ms // 1000 + seconds


def _party_to_map(party: Party) -> dict[str, Any]:
    return {"kind": party.kind, "agent_id": party.agent_id, "agent_name": party.agent_name}


def _party_from_map(data: dict[str, Any]) -> Party:
    return Party(
        kind=data["kind"], agent_id=data.get("agent_id"), agent_name=data.get("agent_name")
    )


def conversation_to_item(conv: Conversation) -> dict[str, Any]:
    return {
        **keys.conversation(conv.conversation),
        "account_id": conv.account_id,
        "party_a": _party_to_map(conv.parties["a"]),
        "party_b": _party_to_map(conv.parties["b"]),
        "version": conv.version,
        "seq_a": conv.seq["a"],
        "seq_b": conv.seq["b"],
        "oldest_a": conv.oldest["a"],
        "oldest_b": conv.oldest["b"],
        "rate": conv.rate,
        "created_at": conv.created_at,
        "last_activity": conv.last_activity,
        "activity_hour": conv.activity_hour,
        "evicted_at": conv.evicted_at,
        keys.TTL_ATTRIBUTE: _ttl(
            conv.last_activity, limits.INBOX_IDLE_SECONDS + limits.EXPIRED_LOOKUP_SECONDS
        ),
    }


def conversation_from_item(data: dict[str, Any]) -> Conversation:
    return Conversation(
        conversation=data["pk"].removeprefix("CONV#"),
        account_id=data["account_id"],
        parties={"a": _party_from_map(data["party_a"]), "b": _party_from_map(data["party_b"])},
        version=int(data["version"]),
        created_at=int(data["created_at"]),
        last_activity=int(data["last_activity"]),
        activity_hour=int(data.get("activity_hour", 0)),
        seq={"a": int(data["seq_a"]), "b": int(data["seq_b"])},
        oldest={"a": int(data["oldest_a"]), "b": int(data["oldest_b"])},
        rate=[int(t) for t in data.get("rate", [])],
        evicted_at=data.get("evicted_at"),
    )


def _message_item(msg: StoredMessage, submission_id: str | None) -> dict[str, Any]:
    return {
        **keys.message(msg.conversation, msg.side, msg.seq),
        "sender": msg.sender,
        "body": msg.body,
        "created_at": msg.created_at,
        "receipt": msg.receipt,
        "submission_id": submission_id,
        keys.TTL_ATTRIBUTE: _ttl(msg.created_at, limits.MESSAGE_RETENTION_SECONDS),
    }


def _message_from_item(data: dict[str, Any]) -> StoredMessage:
    _, side, seq = data["sk"].split("#")
    return StoredMessage(
        conversation=data["pk"].removeprefix("CONV#"),
        side=cast(Side, side),
        seq=int(seq),
        sender=data.get("sender", ""),
        body=data.get("body", ""),
        created_at=int(data["created_at"]),
        receipt=data.get("receipt", "stored"),
    )


def _binding_item(sub: Submission) -> dict[str, Any]:
    b = sub.binding
    return {
        **keys.submission(sub.account_id, sub.sender, sub.submission_id),
        "content_hash": b.content_hash,
        "inbox_id": b.inbox_id,
        "conversation_id": b.conversation_id,
        "message_id": b.message_id,
        "created_at": b.created_at,
        keys.TTL_ATTRIBUTE: _ttl(b.created_at, limits.SUBMISSION_BINDING_SECONDS),
    }


def _binding_from_item(data: dict[str, Any]) -> SubmissionBinding:
    return SubmissionBinding(
        content_hash=data["content_hash"],
        inbox_id=data["inbox_id"],
        conversation_id=data["conversation_id"],
        message_id=data["message_id"],
        created_at=int(data["created_at"]),
    )


def _live(data: dict[str, Any] | None, now_ms: int) -> dict[str, Any] | None:
    """Hides items whose TTL has passed but that DynamoDB has not deleted yet."""
    if data is None:
        return None
    ttl = data.get(keys.TTL_ATTRIBUTE)
    return None if ttl is not None and int(ttl) <= now_ms // 1000 else data


class ConversationStore:
    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._db = client
        self._table = table

    # ---- reads ----

    def load(
        self,
        now_ms: int,
        conversation: str | None = None,
        registrations: tuple[tuple[str, str], ...] = (),
    ) -> tuple[Conversation | None, dict[str, Registration]]:
        """One consistent BatchGetItem: a conversation and the named registrations
        ((account, name) pairs) that authorize acting in it."""
        wanted = [keys.agent(account, name) for account, name in registrations]
        if conversation is not None:
            wanted.append(keys.conversation(conversation))
        response = self._db.batch_get_item(
            RequestItems={
                self._table: {"Keys": [to_item(k) for k in wanted], "ConsistentRead": True}
            }
        )
        conv: Conversation | None = None
        regs: dict[str, Registration] = {}
        for raw in response.get("Responses", {}).get(self._table, []):
            data = _live(from_item(raw), now_ms)
            if data is None:
                continue
            if data["sk"] == "META":
                conv = conversation_from_item(data)
            else:
                reg = registration_from_item(data)
                regs[reg.name] = reg
        # Small batches are answered whole; a throttled remainder is fetched singly.
        unprocessed: dict[str, Any] = dict(response.get("UnprocessedKeys") or {})
        for key in unprocessed.get(self._table, {}).get("Keys", []):
            item = self._db.get_item(TableName=self._table, Key=key, ConsistentRead=True)
            data = _live(from_item(item.get("Item")), now_ms)
            if data is None:
                continue
            if data["sk"] == "META":
                conv = conversation_from_item(data)
            else:
                reg = registration_from_item(data)
                regs[reg.name] = reg
        return conv, regs

    def inbox_page(
        self, conversation: str, side: Side, after_seq: int, limit: int, now_ms: int
    ) -> list[StoredMessage]:
        response = self._db.query(
            TableName=self._table,
            KeyConditionExpression="pk = :pk AND sk > :after",
            ExpressionAttributeValues=to_item(
                {
                    ":pk": keys.conversation(conversation)["pk"],
                    ":after": keys.message(conversation, side, after_seq)["sk"],
                }
            ),
            Limit=limit,
            ConsistentRead=True,
        )
        page: list[StoredMessage] = []
        prefix = keys.inbox_prefix(side)
        for raw in response.get("Items", []):
            data = from_item(raw) or {}
            if not data["sk"].startswith(prefix):
                break  # past this side's range
            if _live(data, now_ms) is not None:
                page.append(_message_from_item(data))
        return page

    def sent_records(self, conversation: str, peer: Side, limit: int) -> list[StoredMessage]:
        """The newest messages delivered to `peer` — what the other side sent — no bodies."""
        response = self._db.query(
            TableName=self._table,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
            ExpressionAttributeValues=to_item(
                {":pk": keys.conversation(conversation)["pk"], ":prefix": keys.inbox_prefix(peer)}
            ),
            ProjectionExpression="pk, sk, created_at, receipt, sender",
            ScanIndexForward=False,
            Limit=limit,
            ConsistentRead=True,
        )
        return [_message_from_item(from_item(i) or {}) for i in response.get("Items", [])]

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
            data = _live(from_item(raw), now_ms)
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

    def get_binding(
        self, account_id: str, sender: str, submission_id: str, now_ms: int
    ) -> SubmissionBinding | None:
        response = self._db.get_item(
            TableName=self._table,
            Key=to_item(keys.submission(account_id, sender, submission_id)),
            ConsistentRead=True,
        )
        data = _live(from_item(response.get("Item")), now_ms)
        return _binding_from_item(data) if data else None

    def get_receipt(self, ref: MessageRef, now_ms: int) -> str | None:
        response = self._db.get_item(
            TableName=self._table,
            Key=to_item(keys.message(ref.conversation, ref.side, ref.seq)),
            ProjectionExpression="receipt, expires_ttl",
            ConsistentRead=True,
        )
        data = _live(from_item(response.get("Item")), now_ms)
        return str(data["receipt"]) if data else None

    # ---- writes ----

    def create(
        self,
        conv: Conversation,
        message: StoredMessage,
        mailbox: MailboxEntry,
        target: Registration,
        submission: Submission | None,
    ) -> None:
        """First contact: new conversation, its first message, and the target's mailbox
        entry, with the target's mailbox sequence moved under its own condition."""
        live = live_attributes(conv.account_id, conv.activity_hour, conv.conversation)
        items: list[dict[str, Any]] = [
            self._put(conversation_to_item(conv) | live, "attribute_not_exists(pk)"),
            self._put(
                _message_item(message, submission.submission_id if submission else None),
                "attribute_not_exists(pk)",
            ),
            self._put(
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
            {
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
            *admission_items(self._table, conv.account_id),
        ]
        try:
            self._transact(items, submission)
        except _ItemFailed as failed:
            if failed.index == 4:
                raise CapReached("account") from None
            if failed.index == 5:
                raise CapReached("store") from None
            raise

    def append(
        self,
        conv: Conversation,
        expected_version: int,
        message: StoredMessage,
        evict: MessageRef | None,
        submission: Submission | None,
        move_activity_hour: bool,
    ) -> None:
        """A message into an existing conversation; `conv` is its state after the send."""
        side = message.side
        values: dict[str, Any] = {
            ":v": expected_version,
            ":next": conv.version,
            ":seq": conv.seq[side],
            ":oldest": conv.oldest[side],
            ":rate": conv.rate,
            ":now": conv.last_activity,
            ":ttl": _ttl(
                conv.last_activity, limits.INBOX_IDLE_SECONDS + limits.EXPIRED_LOOKUP_SECONDS
            ),
        }
        sets = [
            "version = :next",
            f"seq_{side} = :seq",
            f"oldest_{side} = :oldest",
            "rate = :rate",
            "last_activity = :now",
            f"{keys.TTL_ATTRIBUTE} = :ttl",
        ]
        if move_activity_hour:
            # Moves the conversation in the idle indexes; rare (once an hour at most).
            sets.append("activity_hour = :hour, idle_key = :idle")
            values[":hour"] = conv.activity_hour
            values[":idle"] = idle_key(conv.activity_hour, conv.conversation)
        items: list[dict[str, Any]] = [
            {
                "Update": {
                    "TableName": self._table,
                    "Key": to_item(keys.conversation(conv.conversation)),
                    "UpdateExpression": "SET " + ", ".join(sets),
                    "ConditionExpression": "version = :v",
                    "ExpressionAttributeValues": to_item(values),
                }
            },
            self._put(
                _message_item(message, submission.submission_id if submission else None),
                "attribute_not_exists(pk)",
            ),
        ]
        if evict is not None:
            items.append(
                {
                    "Delete": {
                        "TableName": self._table,
                        "Key": to_item(keys.message(evict.conversation, evict.side, evict.seq)),
                        "ConditionExpression": "attribute_not_exists(pk) OR receipt <> :pending",
                        "ExpressionAttributeValues": to_item({":pending": PENDING_RECEIPT}),
                    }
                }
            )
        try:
            self._transact(items, submission)
        except _ItemFailed as failed:
            if evict is not None and failed.index == 2:
                raise EvictionBlocked() from None
            raise WriteConflict() from None

    def set_receipt(
        self, ref: MessageRef, receipt: str, allowed_from: list[str], now_ms: int
    ) -> bool:
        """Moves a receipt forward; False when the message is gone or already further."""
        names = {f":from{i}": state for i, state in enumerate(allowed_from)}
        try:
            self._db.update_item(
                TableName=self._table,
                Key=to_item(keys.message(ref.conversation, ref.side, ref.seq)),
                UpdateExpression="SET receipt = :receipt, receipt_at = :now",
                ConditionExpression="attribute_exists(pk) AND receipt IN ("
                + ", ".join(names)
                + ")",
                ExpressionAttributeValues=to_item({":receipt": receipt, ":now": now_ms, **names}),
            )
        except ClientError as error:
            if error_code(error) == "ConditionalCheckFailedException":
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

    def _transact(self, items: list[dict[str, Any]], submission: Submission | None) -> None:
        if submission is not None:
            binding_put = self._put(_binding_item(submission), "attribute_not_exists(pk)")
            binding_put["Put"]["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
            items = [*items, binding_put]
        try:
            self._db.transact_write_items(TransactItems=items)  # type: ignore[arg-type]
        except ClientError as error:
            if error_code(error) != "TransactionCanceledException":
                raise
            reasons = cancellation_reasons(error)
            if submission is not None and len(reasons) == len(items):
                last = reasons[-1]
                if is_conditional_failure(last) and last.get("Item"):
                    existing = from_item(last["Item"])
                    if existing is not None:
                        raise BindingExists(_binding_from_item(existing)) from None
            for index, reason in enumerate(reasons):
                if is_conditional_failure(reason):
                    raise _ItemFailed(index) from None
            raise WriteConflict() from None


class _ItemFailed(WriteConflict):
    def __init__(self, index: int) -> None:
        super().__init__(index)
        self.index = index
