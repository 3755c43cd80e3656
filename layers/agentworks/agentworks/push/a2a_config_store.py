"""A2A push notification configs (issue 30 §1): items next to the function call they follow.

    CALL#<call_id>   PUSH#<config_id>   url, token, auth_scheme, auth_credentials, account_id

A call's configs are one Query of its partition (sk begins with PUSH#), by the A2A handler
and by the notifier when the call's state changes. A call record has no TTL (calls are
kept), so neither do its configs; a call that ended is sent nothing more.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentworks.dynamo import items_under, to_item

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

PUSH_PREFIX = "PUSH#"


@dataclass(frozen=True)
class PushConfig:
    call_id: str
    config_id: str
    account_id: str
    url: str
    token: str = ""
    auth_scheme: str = ""
    auth_credentials: str = ""  # a secret: sent, never shown
    created_at: int = 0  # ms


def config_key(call_id: str, config_id: str) -> dict[str, str]:
    return {"pk": f"CALL#{call_id}", "sk": f"{PUSH_PREFIX}{config_id}"}


def _config(data: dict[str, Any]) -> PushConfig:
    return PushConfig(
        call_id=str(data["pk"]).removeprefix("CALL#"),
        config_id=str(data["sk"]).removeprefix(PUSH_PREFIX),
        account_id=str(data.get("account_id", "")),
        url=str(data["url"]),
        token=str(data.get("token", "")),
        auth_scheme=str(data.get("auth_scheme", "")),
        auth_credentials=str(data.get("auth_credentials", "")),
        created_at=int(data.get("created_at", 0)),
    )


class A2aPushConfigStore:
    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._db = client
        self._table = table

    def of_call(self, call_id: str, consistent: bool = True) -> list[PushConfig]:
        """The call's configs, by id (at most limits.A2A_PUSH_CONFIGS_PER_TASK: one page)."""
        found = items_under(self._db, self._table, f"CALL#{call_id}", PUSH_PREFIX, consistent)
        return [_config(data) for data in found]

    def put(self, config: PushConfig) -> None:
        """Stores the config, replacing one of the same id (as the SDK's stores do)."""
        self._db.put_item(
            TableName=self._table,
            Item=to_item(
                {
                    **config_key(config.call_id, config.config_id),
                    "account_id": config.account_id,
                    "url": config.url,
                    "token": config.token or None,
                    "auth_scheme": config.auth_scheme or None,
                    "auth_credentials": config.auth_credentials or None,
                    "created_at": config.created_at,
                }
            ),
        )

    def delete(self, call_id: str, config_id: str) -> None:
        self._db.delete_item(TableName=self._table, Key=to_item(config_key(call_id, config_id)))
