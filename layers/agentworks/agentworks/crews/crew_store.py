"""Data access for Crews in the work table.

ACCOUNT#<account>   CREW#<name>   definition (JSON), crew_id, version, running (F5 slots),
                                  owner_connection_id (C4: the connection that created it)
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from agentworks.crews.models import Crew, CrewDefinition
from agentworks.dynamo import applied, condition_failed, from_item, to_item

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def crew_key(account_id: str, name: str) -> dict[str, str]:
    return {"pk": f"ACCOUNT#{account_id}", "sk": f"CREW#{name.lower()}"}


def _from_item(data: dict[str, Any]) -> Crew:
    return Crew(
        account_id=data["account_id"],
        crew_id=data["crew_id"],
        definition=CrewDefinition.model_validate_json(data["definition"]),
        version=int(data["version"]),
        running=int(data.get("running", 0)),
        created_at=int(data["created_at"]),
        updated_at=int(data["updated_at"]),
        owner_connection_id=data.get("owner_connection_id"),
    )


class CrewExists(Exception):
    pass


class CrewStore:
    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._db = client
        self._table = table

    def get(self, account_id: str, name: str) -> Crew | None:
        response = self._db.get_item(
            TableName=self._table, Key=to_item(crew_key(account_id, name)), ConsistentRead=True
        )
        data = from_item(response.get("Item"))
        return _from_item(data) if data else None

    def list_all(self, account_id: str) -> list[Crew]:
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :crew)",
            "ExpressionAttributeValues": to_item(
                {":pk": f"ACCOUNT#{account_id}", ":crew": "CREW#"}
            ),
        }
        crews: list[Crew] = []
        while True:
            page = self._db.query(**kwargs)
            crews.extend(_from_item(from_item(i) or {}) for i in page["Items"])
            if "LastEvaluatedKey" not in page:
                return crews
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def create(self, crew: Crew) -> None:
        try:
            self._db.put_item(
                TableName=self._table,
                Item=to_item(
                    {
                        **crew_key(crew.account_id, crew.name),
                        "account_id": crew.account_id,
                        "crew_id": crew.crew_id,
                        "definition": crew.definition.model_dump_json(),
                        "version": crew.version,
                        "running": 0,
                        "created_at": crew.created_at,
                        "updated_at": crew.updated_at,
                        "owner_connection_id": crew.owner_connection_id,
                    }
                ),
                ConditionExpression="attribute_not_exists(pk)",
            )
        except ClientError as error:
            if condition_failed(error):
                raise CrewExists() from None
            raise

    def update_definition(self, crew: Crew, definition: CrewDefinition, now_ms: int) -> bool:
        """A new definition for the same Crew identity; running calls keep their slots."""
        return applied(
            self._db.update_item,
            TableName=self._table,
            Key=to_item(crew_key(crew.account_id, crew.name)),
            UpdateExpression="SET #definition = :d, version = :next, updated_at = :now",
            ConditionExpression="crew_id = :id AND version = :v",
            ExpressionAttributeNames={"#definition": "definition"},
            ExpressionAttributeValues=to_item(
                {
                    ":d": definition.model_dump_json(),
                    ":next": crew.version + 1,
                    ":now": now_ms,
                    ":id": crew.crew_id,
                    ":v": crew.version,
                }
            ),
        )

    def delete(self, crew: Crew) -> bool:
        try:
            self._db.delete_item(
                TableName=self._table,
                Key=to_item(crew_key(crew.account_id, crew.name)),
                ConditionExpression="crew_id = :id",
                ExpressionAttributeValues=to_item({":id": crew.crew_id}),
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if not condition_failed(error):
                raise
            # Gone (by this very delete, whose answer was lost and which botocore sent
            # again, or by another): the Crew that was read is deleted. Re-created: not.
            return "Item" not in error.response
        return True


def definition_json(definition: CrewDefinition) -> str:
    return json.dumps(definition.model_dump(mode="json"), sort_keys=True)
