"""boto3 clients created once per process, on first use (never at import)."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def dynamodb_config() -> Any:
    """Standard retries (throttling and 5xx, with backoff): 4 retries, 5 attempts; the tests'
    client uses the same, so injected faults meet the retries the functions have."""
    from botocore.config import Config

    return Config(retries={"mode": "standard", "max_attempts": 4}, tcp_keepalive=True)


@lru_cache(maxsize=1)
def dynamodb() -> DynamoDBClient:
    import boto3

    return boto3.client("dynamodb", config=dynamodb_config())


@lru_cache(maxsize=1)
def secretsmanager() -> Any:
    import boto3

    return boto3.client("secretsmanager")


@lru_cache(maxsize=1)
def s3() -> Any:
    import boto3

    return boto3.client("s3")


@lru_cache(maxsize=1)
def ssm() -> Any:
    import boto3

    return boto3.client("ssm")


@lru_cache(maxsize=1)
def scheduler() -> Any:
    import boto3

    return boto3.client("scheduler")


def relay_lambda_config() -> Any:
    """Invoking relay code waits for it: up to the code function's 15 minutes, and no retry
    of its own (a resent invocation would run the attempt twice; the ASL Retry decides)."""
    from botocore.config import Config

    return Config(read_timeout=905, retries={"mode": "standard", "max_attempts": 1})


@lru_cache(maxsize=1)
def relay_lambda() -> Any:
    import boto3

    return boto3.client("lambda", config=relay_lambda_config())
