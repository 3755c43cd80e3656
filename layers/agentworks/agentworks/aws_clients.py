"""boto3 clients created once per process, on first use (never at import)."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


@lru_cache(maxsize=1)
def dynamodb() -> DynamoDBClient:
    import boto3
    from botocore.config import Config

    config = Config(retries={"mode": "standard", "max_attempts": 4}, tcp_keepalive=True)
    return boto3.client("dynamodb", config=config)


@lru_cache(maxsize=1)
def secretsmanager() -> Any:
    import boto3

    return boto3.client("secretsmanager")


@lru_cache(maxsize=1)
def s3() -> Any:
    import boto3

    return boto3.client("s3")
