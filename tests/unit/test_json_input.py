"""The strict request-body parser (HTTP and MCP): it returns a value or InvalidJson, never
another exception, whatever the text; and it accepts what json.dumps writes."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentworks import limits
from agentworks.json_input import InvalidJson, depth_of, loads

_TEXT = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=20)
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _TEXT,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_TEXT, children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300)
@given(text=st.text(max_size=300))
def test_any_text_is_a_value_or_invalid_json(text: str) -> None:
    try:
        loads(text)
    except InvalidJson as refused:
        assert str(refused)


@settings(max_examples=300)
@given(value=JSON_VALUES)
def test_what_json_dumps_writes_parses_back(value: object) -> None:
    """Valid Unicode (emoji escaped as surrogate pairs included) is never refused."""
    assert loads(json.dumps(value)) == value
    assert loads(json.dumps(value, ensure_ascii=False)) == value


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"a":1,"a":2}', "Duplicate key"),
        ("NaN", "not a JSON number"),
        ("[-Infinity]", "not a JSON number"),
        ("1e400", "out of range"),
        ("9" * 5000, "Numbers are limited"),
        ("1" * (limits.JSON_NUMBER_MAX_CHARS + 1), "Numbers are limited"),
        ('"\\ud800"', "lone surrogate"),
        ('{"\\udfff": 1}', "lone surrogate"),
        ("[" * 10_000 + "]" * 10_000, "nests deeper"),
        ("[" * (limits.JSON_MAX_DEPTH + 1) + "]" * (limits.JSON_MAX_DEPTH + 1), "nests deeper"),
        ("{bad", "not JSON"),
    ],
)
def test_refusals_name_the_problem(text: str, problem: str) -> None:
    with pytest.raises(InvalidJson, match=problem):
        loads(text)


def test_at_the_limits_is_accepted() -> None:
    deepest = "[" * limits.JSON_MAX_DEPTH + "]" * limits.JSON_MAX_DEPTH
    assert depth_of(loads(deepest)) == limits.JSON_MAX_DEPTH
    assert loads("1" * limits.JSON_NUMBER_MAX_CHARS) == int("1" * limits.JSON_NUMBER_MAX_CHARS)
    # Brackets and digits inside strings are text, not structure.
    assert loads(json.dumps({"s": "[" * 500 + "9" * 500})) == {"s": "[" * 500 + "9" * 500}
    assert loads('"\\ud83d\\ude00"') == "\U0001f600"
