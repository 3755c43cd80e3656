"""Data access for submission bindings (M2): a retried send with the same submission id
and the same content finds the original receipt; other content is a conflict.

A binding is claimed before the send stores its message (pending, with a claim token),
then names the message; a send that stored nothing gives it back. Expired bindings (TTL
lags by up to ~48 h on DynamoDB) count as absent, in conditions and in reads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from agentworks import limits
from agentworks.dynamo import (
    CLAIM_ATTRIBUTE,
    applied,
    condition_failed,
    from_item,
    live_item,
    put_claim,
    to_item,
)
from agentworks.messaging import keys
from agentworks.messaging.models import SubmissionBinding

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def binding_to_item(b: SubmissionBinding) -> dict[str, Any]:
    return {
        **keys.submission(b.account_id, b.sender, b.submission_id),
        "content_hash": b.content_hash,
        "inbox_id": b.inbox_id,
        "conversation_id": b.conversation_id,
        "message_id": b.message_id,
        "created_at": b.created_at,
        CLAIM_ATTRIBUTE: b.claim,
        "claimed_at": b.claimed_at,
        keys.TTL_ATTRIBUTE: b.claimed_at // 1000 + limits.SUBMISSION_BINDING_SECONDS,
    }


def binding_from_item(data: dict[str, Any]) -> SubmissionBinding:
    created = data.get("created_at")
    return SubmissionBinding(
        content_hash=data["content_hash"],
        inbox_id=data["inbox_id"],
        conversation_id=data["conversation_id"],
        message_id=data.get("message_id"),
        created_at=int(created) if created is not None else None,
        claim=str(data.get(CLAIM_ATTRIBUTE, "")),
        claimed_at=int(data.get("claimed_at", created or 0)),
        sender=data["pk"].split("#", 2)[2],
        submission_id=data["sk"].removeprefix("S#"),
        account_id=data["pk"].split("#", 2)[1],
    )


class SubmissionBindings:
    """The binding operations of the messages table's store (it provides `_db`, `_table`)."""

    _db: DynamoDBClient
    _table: str

    def claim_binding(self, binding: SubmissionBinding) -> tuple[bool, SubmissionBinding | None]:
        """Puts a pending binding. (True, None): this send now holds the submission id;
        (False, existing): another send holds it (pending or done); (False, None): it was
        given back meanwhile — claim again."""
        held, returned = put_claim(
            self._db,
            self._table,
            binding_to_item(binding),
            # Expired but not yet deleted (TTL lags by up to two days) is no binding.
            f"attribute_not_exists(pk) OR {keys.TTL_ATTRIBUTE} <= :now",
            ExpressionAttributeValues=to_item({":now": binding.claimed_at // 1000}),
        )
        if held:
            return True, None
        if returned is not None:  # another send's (put_claim told its token from ours)
            return False, binding_from_item(returned)
        # A refusal naming no item: read by its keys; our own put may be what is stored.
        found = self.get_binding(
            binding.account_id, binding.sender, binding.submission_id, binding.claimed_at
        )
        if found is not None and found.claim == binding.claim:
            return True, None
        return False, found

    def get_binding(
        self, account_id: str, sender: str, submission_id: str, now_ms: int
    ) -> SubmissionBinding | None:
        response = self._db.get_item(
            TableName=self._table,
            Key=to_item(keys.submission(account_id, sender, submission_id)),
            ConsistentRead=True,
        )
        data = live_item(from_item(response.get("Item")), now_ms)
        return binding_from_item(data) if data else None

    def take_over(self, stale: SubmissionBinding, binding: SubmissionBinding) -> bool:
        """Replaces a pending binding whose send stopped (claimed long ago) with ours."""
        return applied(
            self._db.put_item,
            TableName=self._table,
            Item=to_item(binding_to_item(binding)),
            ConditionExpression="claim = :claim AND attribute_not_exists(message_id)",
            ExpressionAttributeValues=to_item({":claim": stale.claim}),
        )

    def complete_binding(
        self, binding: SubmissionBinding, message_id: str, created_at: int
    ) -> None:
        """Names the stored message on the binding this send holds."""
        self._db.update_item(
            TableName=self._table,
            Key=to_item(keys.submission(binding.account_id, binding.sender, binding.submission_id)),
            UpdateExpression="SET message_id = :mid, created_at = :at",
            ConditionExpression="claim = :claim",
            ExpressionAttributeValues=to_item(
                {":mid": message_id, ":at": created_at, ":claim": binding.claim}
            ),
        )

    def release_binding(self, binding: SubmissionBinding) -> None:
        """Gives a submission id back when its send stored nothing (refused or failed)."""
        try:
            self._db.delete_item(
                TableName=self._table,
                Key=to_item(
                    keys.submission(binding.account_id, binding.sender, binding.submission_id)
                ),
                ConditionExpression="claim = :claim AND attribute_not_exists(message_id)",
                ExpressionAttributeValues=to_item({":claim": binding.claim}),
            )
        except ClientError as error:
            if not condition_failed(error):
                raise
