"""Small helpers over the low-level DynamoDB client: item (de)serialization and
transaction-cancellation reasons. Stores own their keys; this module owns no schema."""

from __future__ import annotations

from decimal import Decimal
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
    from botocore.exceptions import ClientError


@cache
def _serializer() -> TypeSerializer:
    # boto3 loads on first use, not at import: handlers' cold start stays small.
    from boto3.dynamodb.types import TypeSerializer

    return TypeSerializer()


@cache
def _deserializer() -> TypeDeserializer:
    from boto3.dynamodb.types import TypeDeserializer

    return TypeDeserializer()


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, set):
        return {_plain(v) for v in value}
    return value


def to_item(data: dict[str, Any]) -> dict[str, Any]:
    """Python values → AttributeValue map. None values are left out."""
    return {k: _serializer().serialize(v) for k, v in data.items() if v is not None}


def to_value(value: Any) -> dict[str, Any]:
    return dict(_serializer().serialize(value))


def from_item(item: dict[str, Any] | None) -> dict[str, Any] | None:
    if not item:
        return None
    return {k: _plain(_deserializer().deserialize(v)) for k, v in item.items()}


def error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def cancellation_reasons(error: ClientError) -> list[dict[str, Any]]:
    """Per-item reasons of a cancelled transaction, in request order."""
    reasons = error.response.get("CancellationReasons") or []
    return [dict(r) for r in reasons]


def is_conditional_failure(reason: dict[str, Any]) -> bool:
    return reason.get("Code") == "ConditionalCheckFailed"


def is_conflict(reason: dict[str, Any]) -> bool:
    return reason.get("Code") in {"TransactionConflict", "ThrottlingError"}
