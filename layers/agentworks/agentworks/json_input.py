"""Strict parsing of request bodies (HTTP and MCP), once, before any route or SDK sees them.

Python's `json` accepts what a JSON peer may not: duplicate keys (the last silently wins),
NaN and Infinity, numbers of any length (int() of 5,000 digits raises), lone surrogates
(unstorable in DynamoDB, unencodable as UTF-8) and nesting until the interpreter's
recursion limit. Each is refused here with a message that names the problem.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json
import math
import re
from collections.abc import Mapping
from typing import Any

from agentworks import limits

_SURROGATE = re.compile("[\ud800-\udfff]")
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
# Unrolled ("normal* (special normal*)*"): one alternation per escape, not per character.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")
_LONE_SURROGATE = "The request body has a lone surrogate (\\ud800-\\udfff); send valid Unicode."


class InvalidJson(ValueError):
    """The body is not strict JSON; the message says why (safe to show the caller)."""


JSON_MEDIA_TYPE = "application/json"


def is_json_media_type(content_type: str | None) -> bool:
    """A `Content-Type` the API reads as JSON: none, or `application/json` with any
    parameters (`; charset=utf-8`), in any letter case."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    return media in ("", JSON_MEDIA_TYPE)


def body_too_large(event: Mapping[str, Any]) -> bool:
    """Whether an API Gateway v2 event's body is over REQUEST_BODY_MAX_BYTES (a base64 body
    is measured as the bytes it stands for: 4 characters carry 3)."""
    body = event.get("body") or ""
    scale = 4 / 3 if event.get("isBase64Encoded") else 1
    return len(body) > limits.REQUEST_BODY_MAX_BYTES * scale


def body_text(event: dict[str, Any]) -> str:
    """The body of an API Gateway v2 event as text; invalid UTF-8 is refused."""
    body = event.get("body") or ""
    if not event.get("isBase64Encoded"):
        return str(body)
    try:
        return base64.b64decode(body, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        raise InvalidJson("The request body is not valid UTF-8 text.") from None


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise InvalidJson(f"Duplicate key {key[:64]!r} in the request body.")
        result[key] = value
    return result


def _constant(name: str) -> Any:
    raise InvalidJson(f"{name} is not a JSON number; send a finite number.")


def _number_text(text: str) -> str:
    if len(text) > limits.JSON_NUMBER_MAX_CHARS:
        raise InvalidJson(f"Numbers are limited to {limits.JSON_NUMBER_MAX_CHARS} characters.")
    return text


def _int(text: str) -> int:
    return int(_number_text(text))


def _float(text: str) -> float:
    value = float(_number_text(text))
    if math.isinf(value):
        raise InvalidJson(f"{text[:32]} is out of range for a JSON number.")
    return value


def _depth(structure: str) -> int:
    """How deep arrays and objects nest, read from text whose strings were blanked."""
    steps = (1 if c in "[{" else -1 for c in _BRACKET.findall(structure))
    return max(itertools.accumulate(steps), default=0)


def whole_numbers(value: Any) -> Any:
    """Numbers that crossed a protobuf Value (an A2A data part) arrive as doubles: 3.0 is
    read as 3 again, so an `integer` in a JSON Schema accepts what was sent."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: whole_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [whole_numbers(v) for v in value]
    return value


def depth_of(value: Any) -> int:
    """How deep arrays and objects nest in a parsed value (a scalar is 0); no recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return deepest


def _check_strings(value: Any) -> None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                raise InvalidJson(_LONE_SURROGATE)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def loads(text: str) -> Any:
    """`text` parsed as strict JSON, or InvalidJson (never RecursionError or a bare ValueError).

    Depth is read from the text with its strings blanked, before the parser runs (so it
    never recurses 10,000 deep) — only when the text has more brackets than the limit, as
    few bodies do; number length is checked by the parser's number hooks before a number is
    converted; strings are walked for surrogates only when the text escapes one (emoji sent
    as \\uXXXX pairs do; most bodies don't).
    """
    brackets = text.count("[") + text.count("{")
    if brackets > limits.JSON_MAX_DEPTH and _depth(_STRING.sub('""', text)) > limits.JSON_MAX_DEPTH:
        raise InvalidJson(f"The request body nests deeper than {limits.JSON_MAX_DEPTH} levels.")
    if _SURROGATE.search(text):
        raise InvalidJson(_LONE_SURROGATE)
    try:
        value = json.loads(
            text,
            object_pairs_hook=_pairs,
            parse_constant=_constant,
            parse_float=_float,
            parse_int=_int,
        )
    except InvalidJson:
        raise
    except json.JSONDecodeError as error:
        raise InvalidJson(f"The request body is not JSON: {error.msg} at {error.pos}.") from None
    except (ValueError, RecursionError) as error:
        raise InvalidJson(f"The request body is not JSON: {error}.") from None
    if _ESCAPED_SURROGATE.search(text):
        _check_strings(value)
    return value
