"""Triggers a registered workflow declares (W11): what each kind takes, and when a schedule
fires next.

    - kind: webhook        # POST /v1/hooks/<trigger_id>, signed with the trigger's secret
      name: on-push
      signature: agentworks  # or github (X-Hub-Signature-256)
      variables: {REF: ref, REPO: repository.full_name}   # variable <- JSON path
    - kind: schedule
      name: nightly
      schedule: cron(0 3 * * ? *)   # EventBridge's forms: cron(…) in UTC, rate(N unit)
      input: {SINCE: "yesterday"}

Schedules use EventBridge's expressions (cron has six fields — minutes, hours, day of month,
month, day of week, year — with `?` for one of the two days; rate takes minutes, hours or
days), so the same text works for EventBridge Scheduler.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from agentworks import limits
from agentworks.errors import InvalidInput
from agentworks.workflows.definition import LABEL, VARIABLE, VariableValue, describe

_PATH = re.compile(r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+){0,9}$")


class _Trigger(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not LABEL.match(value):
            raise ValueError("a trigger's name is 1–64 letters, digits, '.', '_' or '-'")
        return value


class WebhookTrigger(_Trigger):
    kind: Literal["webhook"]
    signature: Literal["agentworks", "github"] = "agentworks"
    variables: dict[str, str] = Field(
        default_factory=dict, max_length=limits.WORKFLOW_VARIABLES_MAX
    )

    @field_validator("variables")
    @classmethod
    def _paths(cls, value: dict[str, str]) -> dict[str, str]:
        for name, path in value.items():
            if not VARIABLE.match(name):
                raise ValueError(f"variable name {name!r}: letters, digits and '_', 1–64")
            if not _PATH.match(path):
                raise ValueError(f"variable {name}: {path!r} is not a dotted JSON path")
        return value


class ScheduleTrigger(_Trigger):
    kind: Literal["schedule"]
    schedule: str
    input: dict[str, VariableValue] = Field(
        default_factory=dict, max_length=limits.WORKFLOW_VARIABLES_MAX
    )

    @field_validator("schedule")
    @classmethod
    def _expression(cls, value: str) -> str:
        next_fire(value, datetime(2026, 1, 1, tzinfo=UTC))  # raises ValueError when bad
        return value


class FunctionTrigger(_Trigger):
    """W10: a function of the workflow, called like a Crew's (target=workflow:NAME)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    kind: Literal["function"]
    description: str = Field("", max_length=2_000)
    input_schema: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object"}, alias="inputSchema"
    )
    callers: list[str] | None = Field(None, max_length=limits.WORKFLOW_CALLERS_MAX)

    @field_validator("name")
    @classmethod
    def _function_name(cls, value: str) -> str:
        if not re.match(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$", value):
            raise ValueError("a function's name is 1–64 letters, digits, '_' or '-'")
        return value

    @field_validator("input_schema")
    @classmethod
    def _schema(cls, value: dict[str, Any]) -> dict[str, Any]:
        from agentworks.crews.schema_check import schema_error

        problem = schema_error(value)
        if problem:
            raise ValueError(f"inputSchema is not a JSON Schema: {problem}")
        return value


Trigger = Annotated[WebhookTrigger | ScheduleTrigger | FunctionTrigger, Field(discriminator="kind")]
_TRIGGERS: TypeAdapter[list[Trigger]] = TypeAdapter(list[Trigger])


def parse_triggers(data: Any) -> list[WebhookTrigger | ScheduleTrigger | FunctionTrigger]:
    if isinstance(data, list) and len(data) > limits.WORKFLOW_TRIGGERS_MAX:
        raise InvalidInput(f"Invalid triggers: at most {limits.WORKFLOW_TRIGGERS_MAX}.")
    try:
        triggers = _TRIGGERS.validate_python(data or [])
    except ValidationError as error:
        raise InvalidInput("Invalid triggers: " + describe(error)[:1500]) from None
    names = [(t.kind, t.name) for t in triggers]
    if len(set(names)) != len(names):
        raise InvalidInput("Invalid triggers: each trigger needs a name of its own.")
    return triggers


# ---- schedules ----

_RATE = re.compile(r"^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$")
_CRON = re.compile(r"^cron\(([^)]*)\)$")
_UNITS = {"minute": 60, "hour": 3600, "day": 86400}
_DAYS = {d: i for i, d in enumerate(("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"), 1)}
_MONTHS = {m: i for i, m in enumerate(("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL",
                                        "AUG", "SEP", "OCT", "NOV", "DEC"), 1)}  # fmt: skip


def next_fire(expression: str, after: datetime) -> datetime:
    """The first time the schedule fires strictly after `after` (UTC, whole minutes)."""
    start = after.astimezone(UTC).replace(second=0, microsecond=0) + timedelta(minutes=1)
    if rate := _RATE.match(expression.strip()):
        count, unit = int(rate.group(1)), rate.group(2).rstrip("s")
        if count < 1:
            raise ValueError("a rate is at least 1")
        period = count * _UNITS[unit]
        # Fixed slots since the epoch: every tick agrees on which period a time belongs to.
        epoch = int(start.timestamp())
        return datetime.fromtimestamp(-(-epoch // period) * period, tz=UTC)
    cron = _CRON.match(expression.strip())
    if cron is None:
        raise ValueError("a schedule is rate(N minutes|hours|days) or cron(6 fields), in UTC")
    fields = cron.group(1).split()
    if len(fields) != 6:
        raise ValueError("cron takes 6 fields: minutes hours day-of-month month day-of-week year")
    minutes, hours = _field(fields[0], 0, 59), _field(fields[1], 0, 23)
    dom, month = _field(fields[2], 1, 31), _field(fields[3], 1, 12, _MONTHS)
    dow, years = _field(fields[4], 1, 7, _DAYS), _field(fields[5], 1970, 2199)
    if (fields[2] == "?") == (fields[4] == "?"):
        raise ValueError("cron: exactly one of day-of-month and day-of-week is '?'")
    day = start.replace(hour=0, minute=0)
    for _ in range(366 * 5):
        weekday = day.isoweekday() % 7 + 1  # EventBridge: SUN=1 … SAT=7
        if day.year in years and day.month in month and day.day in dom and weekday in dow:
            for hour in sorted(hours):
                for minute in sorted(minutes):
                    moment = day.replace(hour=hour, minute=minute)
                    if moment >= start:
                        return moment
        day += timedelta(days=1)
    raise ValueError("cron: the schedule never fires in the next five years")


def _field(text: str, low: int, high: int, names: dict[str, int] | None = None) -> set[int]:
    if text in ("*", "?"):
        return set(range(low, high + 1))
    found: set[int] = set()
    for part in text.split(","):
        base, _, step_text = part.partition("/")
        step = int(step_text) if step_text else 1
        if base == "*":
            first, last = low, high
        elif "-" in base:
            a, b = base.split("-", 1)
            first, last = _value(a, names), _value(b, names)
        else:
            first = _value(base, names)
            last = high if step_text else first
        if not (low <= first <= last <= high) or step < 1:
            raise ValueError(f"cron: {part!r} is outside {low}–{high}")
        found.update(range(first, last + 1, step))
    return found


def _value(text: str, names: dict[str, int] | None) -> int:
    if names and text.upper() in names:
        return names[text.upper()]
    if not text.isdigit():
        raise ValueError(f"cron: {text!r} is not a number (L, W and # are not supported)")
    return int(text)
