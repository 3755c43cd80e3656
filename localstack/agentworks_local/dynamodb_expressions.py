"""DynamoDB's checks of expression placeholders, which moto (pinned 5.2.5) leaves out.

DynamoDB refuses a request whose expressions use a `:value` that ExpressionAttributeValues
does not define, or that defines a `:value` no expression uses (ValidationException); moto
answers the first as if the value matched nothing (a Query finds no items) and accepts the
second. So a misspelt placeholder — `:First` for `:first` — passes every local test and
fails every deployed request. Here every data-plane request is checked as DynamoDB checks it
before moto runs it, for `#name` placeholders too (moto checks only unused names).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

_VALUE = re.compile(r":[A-Za-z0-9_]+")
_NAME = re.compile(r"#[A-Za-z0-9_]+")
EXPRESSIONS = (
    "KeyConditionExpression",
    "FilterExpression",
    "ProjectionExpression",
    "ConditionExpression",
    "UpdateExpression",
)
_TRANSACT_PARTS = ("ConditionCheck", "Put", "Delete", "Update", "Get")


def problem(request: Mapping[str, Any]) -> str | None:
    """DynamoDB's refusal of one request's (or transaction part's) placeholders, if any."""
    used = {key: request[key] for key in EXPRESSIONS if request.get(key)}
    values = request.get("ExpressionAttributeValues")
    names = request.get("ExpressionAttributeNames")
    if values is not None and not values:
        return "ExpressionAttributeValues must not be empty"
    if names is not None and not names:
        return "ExpressionAttributeNames must not be empty"
    if values and not used:
        return "ExpressionAttributeValues can only be specified when using expressions"
    for key, expression in used.items():
        for value in _VALUE.findall(expression):
            if value not in (values or {}):
                return (
                    f"Invalid {key}: An expression attribute value used in expression is not "
                    f"defined; attribute value: {value}"
                )
        for name in _NAME.findall(expression):
            if name not in (names or {}):
                return (
                    f"Invalid {key}: An expression attribute name used in the document path "
                    f"is not defined; attribute name: {name}"
                )
    in_use = {v for expression in used.values() for v in _VALUE.findall(expression)}
    unused = sorted(set(values or {}) - in_use)
    if unused:
        return (
            "Value provided in ExpressionAttributeValues unused in expressions: "
            f"keys: {{{', '.join(unused)}}}"
        )
    return None


def _parts(operation: str, body: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    if operation in ("TransactWriteItems", "TransactGetItems"):
        for item in body.get("TransactItems") or []:
            for part in _TRANSACT_PARTS:
                if part in item:
                    yield item[part]
    elif operation == "BatchGetItem":
        yield from (body.get("RequestItems") or {}).values()
    else:
        yield body


# The handler methods of the operations that take expressions.
_METHODS = {
    "get_item": "GetItem",
    "query": "Query",
    "scan": "Scan",
    "put_item": "PutItem",
    "update_item": "UpdateItem",
    "delete_item": "DeleteItem",
    "transact_write_items": "TransactWriteItems",
    "transact_get_items": "TransactGetItems",
    "batch_get_item": "BatchGetItem",
}


def install() -> None:
    """Wraps the handler's methods (after the other local DynamoDB modules replaced theirs):
    a refusal raised inside a method is answered as moto answers its own."""
    from moto.dynamodb.exceptions import MockValidationException
    from moto.dynamodb.responses import DynamoHandler

    def checked(method: Any, operation: str) -> Any:
        def run(self: Any) -> Any:
            body = self.body if isinstance(self.body, Mapping) else {}
            for part in _parts(operation, body):
                refused = problem(part)
                if refused is not None:
                    raise MockValidationException(refused)
            return method(self)

        return run

    for name, operation in _METHODS.items():
        setattr(DynamoHandler, name, checked(getattr(DynamoHandler, name), operation))
