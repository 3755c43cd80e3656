"""Schedule expressions of workflow triggers (W11), in EventBridge's forms, and what a
trigger declaration may hold."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentworks.errors import InvalidInput
from agentworks.workflows.triggers import next_fire, parse_triggers

T0 = datetime(2026, 12, 1, 16, 20, 30, tzinfo=UTC)  # a Tuesday


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("rate(1 minute)", datetime(2026, 12, 1, 16, 21, tzinfo=UTC)),
        ("rate(1 hour)", datetime(2026, 12, 1, 17, 0, tzinfo=UTC)),
        ("rate(2 days)", datetime(2026, 12, 3, 0, 0, tzinfo=UTC)),  # slots from the epoch
        ("cron(0 3 * * ? *)", datetime(2026, 12, 2, 3, 0, tzinfo=UTC)),
        ("cron(*/15 * * * ? *)", datetime(2026, 12, 1, 16, 30, tzinfo=UTC)),
        ("cron(0 9 ? * MON-FRI *)", datetime(2026, 12, 2, 9, 0, tzinfo=UTC)),
        ("cron(0 9 ? * SAT *)", datetime(2026, 12, 5, 9, 0, tzinfo=UTC)),
        ("cron(30 16 1 12 ? 2027)", datetime(2027, 12, 1, 16, 30, tzinfo=UTC)),
        ("cron(0 0 1 JAN,JUL ? *)", datetime(2027, 1, 1, 0, 0, tzinfo=UTC)),
    ],
)
def test_w11_next_fire(expression: str, expected: datetime) -> None:
    assert next_fire(expression, T0) == expected


@pytest.mark.parametrize(
    "expression",
    [
        "every hour",
        "rate(0 hours)",
        "rate(1 week)",
        "cron(0 3 * * *)",  # five fields: EventBridge takes six
        "cron(0 3 * * * *)",  # both days given: one must be '?'
        "cron(61 3 * * ? *)",
        "cron(0 3 L * ? *)",
        "cron(0 0 30 2 ? *)",  # never
    ],
)
def test_w11_a_bad_schedule_is_refused(expression: str) -> None:
    with pytest.raises(ValueError):
        next_fire(expression, T0)
    with pytest.raises(InvalidInput, match="schedule"):
        parse_triggers([{"kind": "schedule", "name": "s", "schedule": expression}])


@given(st.integers(min_value=0, max_value=10**8), st.integers(1, 120))
def test_w11_a_rate_fires_after_and_within_one_period(offset: int, minutes: int) -> None:
    after = T0 + timedelta(seconds=offset)
    fired = next_fire(f"rate({minutes} minutes)", after)
    assert after < fired <= after + timedelta(minutes=minutes, seconds=60)
    assert fired.second == 0 and int(fired.timestamp()) % (minutes * 60) == 0


def test_w11_trigger_declarations() -> None:
    parsed = parse_triggers(
        [
            {"kind": "webhook", "name": "push", "variables": {"REF": "ref"}},
            {"kind": "schedule", "name": "nightly", "schedule": "rate(1 day)"},
            {"kind": "function", "name": "review", "callers": ["workflow:a"]},
        ]
    )
    assert [t.kind for t in parsed] == ["webhook", "schedule", "function"]
    for bad, says in [
        ([{"kind": "webhook", "name": "a"}, {"kind": "webhook", "name": "a"}], "name of its own"),
        ([{"kind": "webhook", "name": "a", "variables": {"X": "a b"}}], "dotted JSON path"),
        ([{"kind": "carrier-pigeon", "name": "a"}], "kind"),
        ([{"kind": "function", "name": "f", "inputSchema": {"type": "nope"}}], "JSON Schema"),
        ([{"kind": "function", "name": "9lives"}], "function's name"),
        ([{"kind": "webhook", "name": f"w{i}"} for i in range(11)], "at most 10"),
    ]:
        with pytest.raises(InvalidInput, match=says):
            parse_triggers(bad)
