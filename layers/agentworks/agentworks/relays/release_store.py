"""Data access for Relays and their releases (R1): records in the work table, archives in S3.

    RELAYS#<account>          <relay>           the Relay: active and latest release
    RELAY#<account>#<relay>   REL#<version>     a release (immutable)
    RELAY#<account>#<relay>   HASH#<sha256>     content hash → version (identical source)

    s3://<outputs bucket>/relays/<account>/<relay>/<sha256>.zip

A publish writes the archive first (named by its hash, so a repeat is harmless), then the
release, its hash binding and the moved head in one transaction conditioned on the head's
latest version: two concurrent publishes cannot both take version N.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentworks.dynamo import TransactionCancelled, from_item, read_item, to_item, transact_write
from agentworks.relays.records import RelayHead, Release

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def archive_key(account_id: str, relay: str, content_hash: str) -> str:
    return f"relays/{account_id}/{relay}/{content_hash}.zip"


class PublishRaced(Exception):
    """Another publish of this Relay took the next version first."""


class ReleaseStore:
    def __init__(
        self, client: DynamoDBClient, table: str, s3: Callable[[], Any], bucket: str
    ) -> None:
        self._db = client
        self._table = table
        self._s3 = s3
        self._bucket = bucket

    def head(self, account_id: str, relay: str) -> RelayHead | None:
        data = read_item(self._db, self._table, {"pk": f"RELAYS#{account_id}", "sk": relay})
        return _head(data) if data else None

    def heads(self, account_id: str) -> list[RelayHead]:
        response = self._db.query(
            TableName=self._table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues=to_item({":pk": f"RELAYS#{account_id}"}),
        )
        return [_head(from_item(item) or {}) for item in response.get("Items", [])]

    def release(self, account_id: str, relay: str, version: int) -> Release | None:
        data = read_item(
            self._db, self._table, {"pk": f"RELAY#{account_id}#{relay}", "sk": f"REL#{version:08d}"}
        )
        return Release.from_json(str(data["record"])) if data else None

    def version_of_hash(self, account_id: str, relay: str, content_hash: str) -> int | None:
        data = read_item(
            self._db,
            self._table,
            {"pk": f"RELAY#{account_id}#{relay}", "sk": f"HASH#{content_hash}"},
        )
        return int(data["version"]) if data else None

    def releases(self, account_id: str, relay: str, limit: int) -> list[Release]:
        """The latest releases first."""
        response = self._db.query(
            TableName=self._table,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :rel)",
            ExpressionAttributeValues=to_item(
                {":pk": f"RELAY#{account_id}#{relay}", ":rel": "REL#"}
            ),
            ScanIndexForward=False,
            Limit=limit,
        )
        return [
            Release.from_json(str((from_item(item) or {})["record"]))
            for item in response.get("Items", [])
        ]

    def put_archive(self, key: str, archive: bytes) -> None:
        self._s3().put_object(
            Bucket=self._bucket, Key=key, Body=archive, ContentType="application/zip"
        )

    def archive(self, key: str) -> bytes:
        return bytes(self._s3().get_object(Bucket=self._bucket, Key=key)["Body"].read())

    def publish(self, release: Release, previous: RelayHead | None) -> None:
        """Writes `release` as the Relay's active one; PublishRaced when `previous` is no
        longer the head (or the hash was bound meanwhile)."""
        pk = f"RELAY#{release.account_id}#{release.relay}"
        head = {
            "pk": f"RELAYS#{release.account_id}",
            "sk": release.relay,
            "active_version": release.version,
            "latest_version": release.version,
            "description": release.description,
            "updated_at": release.published_at,
        }
        head_put: dict[str, Any] = {"TableName": self._table, "Item": to_item(head)}
        if previous is None:
            head_put["ConditionExpression"] = "attribute_not_exists(pk)"
        else:
            head_put["ConditionExpression"] = "latest_version = :seen"
            head_put["ExpressionAttributeValues"] = to_item({":seen": previous.latest_version})
        items = {
            "head": {"Put": head_put},
            "release": {
                "Put": {
                    "TableName": self._table,
                    "Item": to_item(
                        {"pk": pk, "sk": f"REL#{release.version:08d}", "record": release.to_json()}
                    ),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            },
            "hash": {
                "Put": {
                    "TableName": self._table,
                    "Item": to_item(
                        {"pk": pk, "sk": f"HASH#{release.content_hash}", "version": release.version}
                    ),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            },
        }
        try:
            transact_write(self._db, items)
        except TransactionCancelled:
            raise PublishRaced() from None


def _head(data: dict[str, Any]) -> RelayHead:
    return RelayHead(
        account_id=str(data["pk"]).removeprefix("RELAYS#"),
        relay=str(data["sk"]),
        active_version=int(data["active_version"]),
        latest_version=int(data["latest_version"]),
        description=str(data.get("description", "")),
        updated_at=int(data.get("updated_at", 0)),
    )
