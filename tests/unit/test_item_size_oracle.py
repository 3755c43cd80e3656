"""DynamoDB item sizes worked out by hand from the Developer Guide's rules ("Item sizes and
formats"), not from agentworks.item_size: usage bytes and the 400 KB guards rest on it, and
an implementation checked only against itself would pass a wrong rule.

Rules used below: names and strings count UTF-8 bytes; a number about 1 byte per two
significant digits (leading and trailing zeros trimmed) plus 1; binary its raw bytes;
BOOL and NULL 1 byte; a list or map 3 bytes plus 1 per element and the element (a map's
element also its name's bytes); a set the sum of its elements.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentworks.item_size import item_size

CASES: list[tuple[dict[str, Any], int, str]] = [
    ({"pk": {"S": "abc"}}, 2 + 3, "name 2 + string 3"),
    ({"pk": {"S": "é"}}, 2 + 2, "é is 2 UTF-8 bytes"),
    ({"pk": {"S": "🙂"}}, 2 + 4, "an emoji is 4 UTF-8 bytes"),
    ({"n": {"N": "123"}}, 1 + 3, "3 digits: 2 bytes + 1"),
    ({"n": {"N": "1200"}}, 1 + 2, "trailing zeros trimmed: '12' is 1 byte + 1"),
    ({"n": {"N": "0.0001"}}, 1 + 2, "leading zeros trimmed: '1' is 1 byte + 1"),
    ({"n": {"N": "-12345.678"}}, 1 + 5, "8 significant digits: 4 bytes + 1"),
    ({"b": {"B": b"\x00\x01\x02"}}, 1 + 3, "raw bytes"),
    ({"ok": {"BOOL": True}, "no": {"NULL": True}}, 2 + 1 + 2 + 1, "1 byte each"),
    ({"l": {"L": [{"S": "ab"}, {"N": "1"}]}}, 1 + 3 + (1 + 2) + (1 + 2), "3 + per element"),
    ({"m": {"M": {"k": {"S": "v"}}}}, 1 + 3 + (1 + 1 + 1), "3 + 1 + name + value"),
    ({"ss": {"SS": ["a", "bc"]}}, 2 + 1 + 2, "a set: the sum of its elements"),
    ({"nested": {"M": {"in": {"L": [{"M": {}}]}}}}, 6 + 3 + (1 + 2 + 3 + (1 + 3)), "nesting"),
]


@pytest.mark.parametrize(("item", "size", "why"), CASES, ids=[c[2] for c in CASES])
def test_item_sizes_match_the_documented_rules(item: dict[str, Any], size: int, why: str) -> None:
    assert item_size(item) == size, why
