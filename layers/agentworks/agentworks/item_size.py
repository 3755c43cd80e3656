"""The size of a DynamoDB item the way DynamoDB counts it, so a store can prove (in tests)
and check (before a write) that an item stays under the 400 KB item limit.

DynamoDB's rules (Developer Guide, "Item sizes and formats"): an item is the sum of its
attribute names (UTF-8 bytes) and values. Strings count their UTF-8 bytes, binary its raw
bytes, a number about 1 byte per two significant digits plus 1, booleans and nulls 1 byte.
A list or map costs 3 bytes plus, per element, its value and 1 byte (a map's element also
its name). Sets are the sum of their elements.
"""

from __future__ import annotations

import base64
from typing import Any

from agentworks import limits


class ItemTooLarge(ValueError):
    """The item would be refused by DynamoDB (ValidationException: Item size has exceeded
    the maximum allowed size)."""


def _number_size(text: str) -> int:
    digits = text.lstrip("+-").lower().split("e")[0].replace(".", "").strip("0")
    return (max(len(digits), 1) + 1) // 2 + 1


def _binary_size(value: Any) -> int:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return len(value)
    return len(base64.b64decode(value))  # the wire form is base64 text


def value_size(value: dict[str, Any]) -> int:
    """Bytes of one AttributeValue ({"S": …}, {"M": {…}}, …)."""
    [(kind, inner)] = value.items()
    if kind == "S":
        return len(str(inner).encode())
    if kind == "N":
        return _number_size(str(inner))
    if kind == "B":
        return _binary_size(inner)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(str(s).encode()) for s in inner)
    if kind == "NS":
        return sum(_number_size(str(n)) for n in inner)
    if kind == "BS":
        return sum(_binary_size(b) for b in inner)
    if kind == "L":
        return 3 + sum(1 + value_size(v) for v in inner)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + value_size(v) for k, v in inner.items())
    raise ValueError(f"not an AttributeValue type: {kind}")


def item_size(item: dict[str, dict[str, Any]]) -> int:
    """Bytes of an item in AttributeValue form (what `to_item` returns)."""
    return sum(len(name.encode()) + value_size(value) for name, value in item.items())


def require_fits(item: dict[str, dict[str, Any]], what: str) -> dict[str, dict[str, Any]]:
    """The item, or ItemTooLarge before DynamoDB refuses it."""
    size = item_size(item)
    if size >= limits.DYNAMODB_ITEM_MAX_BYTES:
        raise ItemTooLarge(f"{what} would take {size:,} bytes; items hold under 400 KB")
    return item
