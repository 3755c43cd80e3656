"""The size of a DynamoDB item the way DynamoDB counts it: usage counting sizes stored
messages with it (agentworks.usage), the item-size tests prove with it that every stored
item stays under the 400 KB limit, and the bench prices writes and reads.

DynamoDB's rules (Developer Guide, "Item sizes and formats"): an item is the sum of its
attribute names (UTF-8 bytes) and values. Strings count their UTF-8 bytes, binary its raw
bytes, a number about 1 byte per two significant digits plus 1, booleans and nulls 1 byte.
A list or map costs 3 bytes plus, per element, its value and 1 byte (a map's element also
its name). Sets are the sum of their elements.
"""

from __future__ import annotations

import base64
from typing import Any


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


def item_size(item: dict[str, dict[str, Any]] | None) -> int:
    """Bytes of an item in AttributeValue form (what `to_item` returns); 0 for none."""
    if not item:
        return 0
    return sum(len(name.encode()) + value_size(value) for name, value in item.items())
